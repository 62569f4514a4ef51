// META: script=resources/relative_helper.js
// META: script=/runner/resources/absolute_helper.js

'use strict';

// No global= line: WPT's default, a window and a dedicated worker.
test(() => {
  assert_equals(self.relativeHelper, 'relative');
  assert_equals(self.absoluteHelper, 'absolute');
  // META scripts load after testharness.js, so helpers may use its API.
  assert_equals(self.helperSawTestharness, true);
}, `META script in ${self.constructor.name}`);
