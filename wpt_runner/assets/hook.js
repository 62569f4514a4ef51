// wpt_runner's result hook: the runner's own stand-in for wptrunner's testharnessreport.js.
//
// It is loaded as the first script of a test page, before testharness.js, so it
// cannot call testharness's API directly: it catches the moment testharness.js
// exposes add_completion_callback on the global and registers its callbacks one
// microtask later (testharness.js exposes its API before its Tests object exists;
// the microtask runs after testharness.js has finished, before the next script).
// Results go to the runner through the __wptRunnerReport binding, one message per
// subtest as it finishes, so a page that hangs later still reports what it ran.
(function () {
  "use strict";
  // Frames' harnesses report through their parent's; popups a test opens are helpers.
  if (window !== window.top || window.opener) return;

  const ownURL = new URL(document.currentScript.src);
  const timeoutMultiplier = Number(ownURL.searchParams.get("timeout_multiplier") || "1");
  let harnessSeen = false;

  function send(message) {
    if (typeof window.__wptRunnerReport === "function") {
      window.__wptRunnerReport(JSON.stringify(message));
    } else {
      // Opened by hand, outside the runner: keep the result where a person can look.
      (window.__wptRunnerMessages = window.__wptRunnerMessages || []).push(message);
    }
  }

  function subtest(test) {
    return { name: String(test.name), status: test.status, message: test.message == null ? null : String(test.message),
             stack: test.stack == null ? null : String(test.stack) };
  }

  function attach() {
    harnessSeen = true;
    if (timeoutMultiplier !== 1) setup({ timeout_multiplier: timeoutMultiplier });
    add_result_callback((test) => send({ type: "result", test: subtest(test) }));
    add_completion_callback((tests, status) => {
      send({
        type: "complete",
        tests: tests.map(subtest),
        status: { status: status.status, message: status.message == null ? null : String(status.message),
                  stack: status.stack == null ? null : String(status.stack) },
      });
    });
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
