// META: global=window
// META: timeout=long

'use strict';

test(() => {
  const meta = document.querySelector('meta[name="timeout"]');
  assert_not_equals(meta, null, 'the wrapper has a timeout meta element');
  assert_equals(meta.content, 'long');
}, 'timeout=long reaches the harness');
