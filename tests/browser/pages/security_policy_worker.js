// Started by security_policy_frame.html: the polyfill imported the usual way, and
// createContext() asked when the frame says so.
self.webnnPolyfillConfig = { lazy: true };
importScripts("/webnn-polyfill.js", "context_outcome.js");
const seen = [];
onmessage = async (event) => {
  seen.push(typeof event.data === "string" ? event.data : JSON.stringify(event.data));
  if (event.data !== "go") return;
  const outcome = await createContextOutcome();
  outcome.messagesSeen = seen;
  postMessage(outcome);
};
