// META: title=chunking: one file, every classic global scope, five variants
// META: global=window,worker
// META: variant=?a
// META: variant=?b
// META: variant=?c
// META: variant=?d
// META: variant=?e

'use strict';

// Listed by tests/wpt_runner/test_chunks.py (never run there); trivially passes if run.
test(() => assert_true(true), `chunk listing ${location.search}`);
