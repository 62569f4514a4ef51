// META: variant=?cpu
// META: variant=?gpu
// META: variant=?npu

'use strict';

test(() => assert_true(true), `chunk listing (default globals) ${location.search}`);
