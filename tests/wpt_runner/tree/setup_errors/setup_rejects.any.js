// META: global=window,dedicatedworker,sharedworker,serviceworker
// META: timeout=long
// The file fails in promise_setup, as WPT's byob_readtensor does where the
// implementation refuses its setup: the harness is ERROR, the test NOTRUN, and
// every page reports that at once (a worker page used to wait for the long timeout).

'use strict';

promise_setup(async () => {
  throw new TypeError('setup rejects on purpose');
});

promise_test(async () => {}, 'never runs: its setup rejected');
