// META: title=no test sees what an earlier test left in its origin's storage
// META: variant=?1
// META: variant=?2
// META: variant=?3

'use strict';

// Each variant runs in turn in one browser (the runner reuses a job's browser and
// profile for its HTTP and code caches); each must start with empty storage, then
// leaves some of every kind behind for the next.
promise_test(async () => {
  assert_equals(document.cookie, '', 'cookies');
  assert_equals(localStorage.length, 0, 'localStorage');
  assert_array_equals(await caches.keys(), [], 'Cache Storage');
  assert_array_equals((await indexedDB.databases()).map((d) => d.name), [], 'IndexedDB');
  assert_equals((await navigator.serviceWorker.getRegistrations()).length, 0, 'service worker registrations');

  document.cookie = `left=${location.search.slice(1)}; max-age=3600`;
  localStorage.setItem('left', location.search);
  await (await caches.open('left')).put('/left', new Response('left'));
  await new Promise((resolve, reject) => {
    const request = indexedDB.open('left');
    request.onsuccess = () => { request.result.close(); resolve(); };
    request.onerror = () => reject(request.error);
  });
  await navigator.serviceWorker.register('resources/empty-worker.js', {scope: 'resources/'});
}, 'starts with empty storage and leaves some behind');
