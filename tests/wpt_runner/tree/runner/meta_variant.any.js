// META: global=window,dedicatedworker
// META: variant=
// META: variant=?first
// META: variant=?tc=second%20case&n=2

'use strict';

// The subtest name carries what this global sees in location.search, so the
// report shows that every variant reached the test's own global.
test(() => {
  assert_in_array(location.search, ['', '?first', '?tc=second%20case&n=2']);
}, `variant [${location.search}] tc=${new URLSearchParams(location.search).get('tc')}`);
