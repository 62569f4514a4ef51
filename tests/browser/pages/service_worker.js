// The polyfill in a service worker: it boots Python while the worker installs
// (importScripts() of new URLs is allowed only then), and answers on the port
// the page sends.
importScripts("/webnn-polyfill.js", "same_graph.js");
addEventListener("message", (event) => {
  const port = event.ports[0];
  event.waitUntil(runSameGraph().then(
    (result) => port.postMessage({ ok: true, result }),
    (e) => port.postMessage({ ok: false, error: `${e.name}: ${e.message}` })));
});
