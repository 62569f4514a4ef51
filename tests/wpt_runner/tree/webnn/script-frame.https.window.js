// META: title=a frame the test creates by script is a window with navigator.ml
// META: timeout=long

'use strict';

// The server never sees an about:blank frame, yet with a native WebNN its
// navigator.ml exists at once (WPT's detached-iframe tests rely on it), with the
// frame's own interface objects, and works. Long timeout: the page and the frame
// each boot a Python runtime, which on a loaded machine can take most of 30 s.
promise_test(async () => {
  const frame = document.createElement('iframe');
  (document.body || document.documentElement).appendChild(frame);
  const w = frame.contentWindow;
  assert_equals(w.location.href, 'about:blank');
  assert_equals(typeof w.ML, 'function', 'ML interface object in the frame');
  assert_not_equals(w.ML, self.ML, "the frame's own realm");
  assert_true(w.navigator.ml instanceof w.ML, 'navigator.ml in the frame');
  const context = await w.navigator.ml.createContext();
  assert_true(context instanceof w.MLContext, 'a context from the frame');
}, 'about:blank frame created by script');
