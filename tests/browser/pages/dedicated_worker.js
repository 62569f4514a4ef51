importScripts("/webnn-polyfill.js", "same_graph.js");
onmessage = async () => {
  try {
    postMessage({ ok: true, result: await runSameGraph() });
  } catch (e) {
    postMessage({ ok: false, error: `${e.name}: ${e.message}` });
  }
};
