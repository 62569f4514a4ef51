// META: variant=?w1
// META: variant=?w2

importScripts('/resources/testharness.js');

test(() => {
  assert_true(self instanceof DedicatedWorkerGlobalScope);
  assert_true('ml' in navigator, 'navigator.ml, injected before this script');
}, '.worker.js runs in a dedicated worker with the polyfill');

test(() => {
  assert_in_array(location.search, ['?w1', '?w2']);
}, `.worker.js variant ${location.search}`);

done();
