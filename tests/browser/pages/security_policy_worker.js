// Started by security_policy_frame.html: the polyfill imported the usual way, and
// createContext() asked when the frame says so.
self.webnnPolyfillConfig = { lazy: true };
importScripts("/webnn-polyfill.js");
const seen = [];
onmessage = async (event) => {
  seen.push(typeof event.data === "string" ? event.data : JSON.stringify(event.data));
  if (event.data !== "go") return;
  let outcome;
  try {
    const context = await navigator.ml.createContext();
    outcome = { ok: true, context: Object.prototype.toString.call(context) };
  } catch (e) {
    outcome = { ok: false, name: e.name, message: e.message };
  }
  outcome.messagesSeen = seen;
  postMessage(outcome);
};
