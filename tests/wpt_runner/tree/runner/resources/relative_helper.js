self.relativeHelper = 'relative';
self.helperSawTestharness = typeof promise_test === 'function';
