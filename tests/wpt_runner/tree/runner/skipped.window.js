'use strict';

// The self-test's expectations file marks this test SKIP: it must never run.
test(() => { assert_unreached('a SKIP expectation should have kept this from running'); }, 'never runs');
