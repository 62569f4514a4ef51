// wpt_runner: imported by a generated worker script right after the polyfill. When the
// polyfill's runtime is ready in this worker (the shim's "webnn-py:ready" mark), it tells
// the test's page on a BroadcastChannel, keyed by the test's URL stem and query, so the
// page's hook can start the harness's timeout again (hook.js, runtimeReady): the test
// gets its whole timeout after the boot, as with a native WebNN.
(function () {
  "use strict";
  if (typeof PerformanceObserver !== "function" || typeof BroadcastChannel !== "function") return;
  const stem = location.pathname.replace(/worker(?:-module)?\.js$/, "") + location.search;
  const observer = new PerformanceObserver((list) => {
    if (list.getEntries().some((entry) => entry.name === "webnn-py:ready")) {
      observer.disconnect();
      const channel = new BroadcastChannel("__wpt_runner_ready__");
      channel.postMessage(stem);
      channel.close();
    }
  });
  try { observer.observe({ type: "mark", buffered: true }); } catch (e) { /* no User Timing */ }
})();
