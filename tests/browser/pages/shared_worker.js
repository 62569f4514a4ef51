importScripts("/webnn-polyfill.js", "same_graph.js");
onconnect = (event) => {
  const port = event.ports[0];
  port.onmessage = async () => {
    try {
      port.postMessage({ ok: true, result: await runSameGraph() });
    } catch (e) {
      port.postMessage({ ok: false, error: `${e.name}: ${e.message}` });
    }
  };
};
