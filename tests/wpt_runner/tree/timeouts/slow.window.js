'use strict';

// The same 4 s wait with the normal timeout: the harness itself times out.
test(() => {}, 'quick');
promise_test(() => new Promise(resolve => setTimeout(resolve, 4000)), 'waits 4 s within a normal timeout');
