'use strict';

// An uncaught error in the page makes the harness status ERROR; a test that
// never started is then NOTRUN.
test(() => {}, 'ran before the error');
async_test('never started');
throw new Error('uncaught on purpose');
