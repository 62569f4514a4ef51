importScripts('/resources/testharness.js');
test(() => assert_true(true), 'chunk listing: a .worker.js test');
done();
