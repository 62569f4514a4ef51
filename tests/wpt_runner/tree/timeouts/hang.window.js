'use strict';

// The page stops answering after one subtest: only the runner's own timer ends it.
test(() => {}, 'before the hang');
setTimeout(() => { while (true) {} }, 0);
