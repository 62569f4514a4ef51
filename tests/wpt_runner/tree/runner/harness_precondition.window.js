'use strict';

setup(() => { assert_implements_optional(false, 'the whole file needs an optional feature'); });
test(() => {}, 'not reached');
