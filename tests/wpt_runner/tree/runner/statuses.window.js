// META: title=subtest statuses

'use strict';

test(() => { assert_equals(1 + 1, 2); }, 'passes');
test(() => { assert_equals(1 + 1, 3, 'arithmetic'); }, 'fails');
promise_test(async () => { throw new TypeError('rejected on purpose'); }, 'promise rejects');
test(() => { assert_implements_optional(false, 'an optional feature'); }, 'precondition fails');
test(() => { assert_true('ml' in navigator); }, 'polyfill in a .window.js page');
