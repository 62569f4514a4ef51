// META: global=window,worker
// META: title=Title from META

'use strict';

// One file, four scopes: the wrappers set GLOBAL and the title, and every
// global has the polyfill installed before this script runs.
test(t => {
  if (GLOBAL.isWindow()) {
    assert_equals(document.title, 'Title from META');
    assert_false('META_TITLE' in self);
  } else {
    assert_true(GLOBAL.isWorker());
    assert_equals(META_TITLE, 'Title from META');
  }
}, `title in ${self.constructor.name}`);

test(() => {
  assert_true('ml' in navigator, 'navigator.ml');
  assert_equals(typeof MLGraphBuilder, 'function');
}, `polyfill installed in ${self.constructor.name}`);

done();
