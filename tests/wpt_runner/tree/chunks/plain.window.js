'use strict';

test(() => assert_true(true), 'chunk listing: a .window.js test');
