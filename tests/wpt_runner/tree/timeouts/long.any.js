// META: global=window
// META: timeout=long

'use strict';

// Run with --timeout-multiplier 0.2: a 2 s harness timeout normally, 12 s with timeout=long.
// (setTimeout, not step_timeout: step_timeout scales with the multiplier too.)
promise_test(() => new Promise(resolve => setTimeout(resolve, 4000)), 'waits 4 s within a long timeout');
