// A module worker has no importScripts(): the polyfill and the graph come in by
// static import (the polyfill then loads Pyodide with import()); same_graph.js
// puts runSameGraph on self, since a module's top-level names are not globals.
import "/webnn-polyfill.js";
import "./same_graph.js";

onmessage = async () => {
  try {
    postMessage({ ok: true, result: await self.runSameGraph() });
  } catch (e) {
    postMessage({ ok: false, error: `${e.name}: ${e.message}` });
  }
};
