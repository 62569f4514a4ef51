// META: title=the harness timeout starts again when the polyfill's runtime is ready
// META: global=window,worker
// META: timeout=long
// META: variant=?ready
// META: variant=?never

'use strict';

// A stand-in for a slow boot, run without the polyfill: 8 s, then the mark the shim
// sets when its runtime is ready (?ready) or none (?never), then 8 s of test. At the
// timeouts run's multiplier (60 s x 0.2 = 12 s) the 16 s fit only if the timeout
// starts again at the mark, in the page or, from a worker, through worker-ready.js.
const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

promise_test(async () => {
  await wait(8000);
  if (location.search === '?ready') performance.mark('webnn-py:ready');
  await wait(8000);
}, 'a test that needs its whole timeout after the boot');
