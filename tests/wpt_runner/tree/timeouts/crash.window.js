'use strict';

// A renderer crash. No page script can crash Chromium on purpose, so the runner
// offers a test-only binding (enabled by WPT_RUNNER_ALLOW_TEST_CRASH) that
// crashes this renderer for real (CDP Page.crash); the runner then sees the same
// crash event an actual renderer crash produces.
test(() => {}, 'before the crash');
promise_test(async () => {
  assert_equals(typeof self.__wptRunnerTestCrash, 'function', 'the crash seam is enabled');
  await self.__wptRunnerTestCrash();
  await new Promise(() => {});
}, 'crashes the renderer');
