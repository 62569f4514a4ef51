// wpt_runner's result hook: the runner's own stand-in for wptrunner's testharnessreport.js.
//
// It is loaded as the first script of a test page, before testharness.js, so it
// cannot call testharness's API directly: it catches the moment testharness.js
// exposes add_completion_callback on the global and registers its callbacks one
// microtask later (testharness.js exposes its API before its Tests object exists;
// the microtask runs after testharness.js has finished, before the next script).
// Results go to the runner through the __wptRunnerReport binding (Chromium) or a
// POST to the runner's server (?report=post: Firefox, WebKit), one message per
// subtest as it finishes, so a page that hangs later still reports what it ran.
(function () {
  "use strict";
  // Frames' harnesses report through their parent's; popups a test opens are helpers.
  if (window !== window.top || window.opener) return;

  const ownURL = new URL(document.currentScript.src);
  const timeoutMultiplier = Number(ownURL.searchParams.get("timeout_multiplier") || "1");
  let harnessSeen = false;

  // Engines without a Playwright binding (Firefox, WebKit) post to the runner's
  // server instead, in order (one request after the other), keyed by this page's
  // test URL. Taken now, before any test script could replace them.
  const postReports = ownURL.searchParams.get("report") === "post";
  const fetchFunction = window.fetch.bind(window);
  const stringify = JSON.stringify;
  const page = location.pathname + location.search;
  let posted = Promise.resolve();

  function post(message) {
    const body = stringify({ page, message });
    posted = posted.then(() => fetchFunction(new URL("report", ownURL), { method: "POST", body }))
      .catch(() => {});   // the runner closed the page: nobody is listening any more
  }

  function send(message) {
    if (typeof window.__wptRunnerReport === "function") {
      window.__wptRunnerReport(JSON.stringify(message));
    } else if (postReports) {
      post(message);
    } else {
      // Opened by hand, outside the runner: keep the result where a person can look.
      (window.__wptRunnerMessages = window.__wptRunnerMessages || []).push(message);
    }
  }

  function subtest(test) {
    return { name: String(test.name), status: test.status, message: test.message == null ? null : String(test.message),
             stack: test.stack == null ? null : String(test.stack) };
  }

  function harnessStatus(status) {
    return { status: status.status, message: status.message == null ? null : String(status.message),
             stack: status.stack == null ? null : String(status.stack) };
  }

  let completed = false;
  const reported = new Map();   // subtest name -> its reported result, in order
  let harnessSetup = null;      // testharness.js's setup(), taken before a test could replace it

  function attach() {
    harnessSeen = true;
    harnessSetup = setup;
    if (timeoutMultiplier !== 1) setup({ timeout_multiplier: timeoutMultiplier });
    add_result_callback((test) => {
      reported.set(String(test.name), subtest(test));
      send({ type: "result", test: subtest(test) });
    });
    add_completion_callback((tests, status) => {
      completed = true;
      send({ type: "complete", tests: tests.map(subtest), status: harnessStatus(status) });
    });
    if (workerWrapper) watchRemotes();
  }

  // A generated worker page (?worker_wrapper=1: it runs no test of its own). When the
  // worker's harness finishes early, e.g. its file throws in promise_setup, it sends
  // "complete" with tests it never started and never sends their results, and
  // testharness.js's window side keeps waiting for those until its own timeout (the
  // long one: a minute). Once every remote is done and the page's harness has not
  // completed by the next task, nothing more can arrive: report what the window
  // would report after waiting (the remote's harness status, its unstarted tests
  // NOTRUN) and finish now. A window running the same file finishes at once too.
  const workerWrapper = ownURL.searchParams.get("worker_wrapper") === "1";
  const remotes = [];

  function watchRemotes() {
    const fetchTests = window.fetch_tests_from_worker;
    window.fetch_tests_from_worker = function (worker) {
      const remote = { complete: null };
      const target = (typeof ServiceWorker === "function" && worker instanceof ServiceWorker) ? navigator.serviceWorker
        : (typeof SharedWorker === "function" && worker instanceof SharedWorker) ? worker.port : worker;
      target.addEventListener("message", (event) => {
        if (event.data && event.data.type === "complete") remote.complete = event.data;
      });
      remotes.push(remote);
      const done = fetchTests.apply(this, arguments);
      if (done && typeof done.then === "function") done.then(() => setTimeout(finishStranded, 0));
      return done;
    };
  }

  function finishStranded() {
    if (completed || remotes.some((remote) => !remote.complete)) return;
    const tests = [...reported.values()];
    let status = { status: 0, message: null, stack: null };
    for (const remote of remotes) {
      for (const test of remote.complete.tests || []) {
        if (!reported.has(String(test.name))) tests.push(subtest(test));
      }
      if (remote.complete.status && remote.complete.status.status !== 0 && status.status === 0) {
        status = harnessStatus(remote.complete.status);
      }
    }
    if (tests.length === reported.size) return;   // nothing stranded: the harness completes by itself
    completed = true;
    send({ type: "complete", tests, status });
  }

  // The harness's timeout starts when testharness.js loads; with a native WebNN,
  // navigator.ml works from then on. The polyfill first boots its Python runtime
  // (seconds; many more on a loaded machine), so when that runtime is ready the
  // harness's timeout starts again, once, and the runner's timer with it (a "ready"
  // message): the test gets its whole timeout after the boot, as it would natively.
  // Ready is the shim's "webnn-py:ready" mark, in this page or, for a generated worker
  // page, in its worker, whose script says so on a BroadcastChannel (worker-ready.js)
  // keyed by the test's URL stem and query. A runtime that never boots still times out
  // at the first deadline; once the harness has results, testharness.js's setup()
  // changes nothing, so a test that ran before the boot keeps its first deadline.
  const READY_MARK = "webnn-py:ready";
  const READY_CHANNEL = "__wpt_runner_ready__";
  let restarted = false;

  function runtimeReady() {
    if (restarted || completed || !harnessSetup) return;
    restarted = true;
    harnessSetup({});   // restarts the harness's timer (Tests.prototype.setup → set_timeout)
    send({ type: "ready" });
  }

  if (workerWrapper && typeof BroadcastChannel === "function") {
    const stem = location.pathname.replace(/(?:shared|service)?worker(?:-module)?\.html$/, "") + location.search;
    const channel = new BroadcastChannel(READY_CHANNEL);
    channel.onmessage = (event) => {
      if (event.data === stem) {
        channel.close();
        runtimeReady();
      }
    };
  } else if (!workerWrapper && typeof PerformanceObserver === "function") {
    const observer = new PerformanceObserver((list) => {
      if (list.getEntries().some((entry) => entry.name === READY_MARK)) {
        observer.disconnect();
        runtimeReady();
      }
    });
    try { observer.observe({ type: "mark", buffered: true }); } catch (e) { /* no User Timing: first deadline */ }
  }

  let exposed;
  Object.defineProperty(window, "add_completion_callback", {
    configurable: true,
    enumerable: true,
    get() { return exposed; },
    set(value) {
      exposed = value;
      // Become an ordinary property again: the page sees testharness's function as usual.
      Object.defineProperty(window, "add_completion_callback", { value, writable: true, configurable: true, enumerable: true });
      queueMicrotask(attach);
    },
  });

  // A page whose testharness.js never loaded (a 404, a syntax error) would only
  // time out; saying so at load is more useful.
  window.addEventListener("load", () => {
    if (!harnessSeen) {
      send({ type: "complete", tests: [],
             status: { status: 1, message: "testharness.js was not loaded by the time the page finished loading", stack: null } });
    }
  });
})();
