// A graph run identically in a window and in every kind of worker
// (tests/browser/test_globals.py). Loaded with <script> or importScripts().
async function runSameGraph() {
  const context = await navigator.ml.createContext();
  const builder = new MLGraphBuilder(context);
  const desc = { dataType: "float32", shape: [2, 3] };
  const a = builder.input("a", desc);
  const b = builder.input("b", { dataType: "float32", shape: [3] });
  const c = builder.constant({ dataType: "float32", shape: [1] }, new Float32Array([0.5]));
  const out = builder.div(builder.mul(builder.sub(a, b), c), builder.add(b, c));
  const graph = await builder.build({ out });
  const ta = await context.createTensor({ ...desc, writable: true });
  const tb = await context.createTensor({ dataType: "float32", shape: [3], writable: true });
  const to = await context.createTensor({ ...desc, readable: true });
  context.writeTensor(ta, new Float32Array([1, 2, 3, 4, 5, 6]));
  context.writeTensor(tb, new Float32Array([0.25, -1, 7]));
  context.dispatch(graph, { a: ta, b: tb }, { out: to });
  const values = Array.from(new Float32Array(await context.readTensor(to)));
  return {
    values,
    global: self.constructor.name,
    interfaces: ["ML", "MLContext", "MLGraphBuilder", "MLOperand", "MLGraph", "MLTensor"]
      .filter((name) => typeof self[name] === "function"),
  };
}
// Loaded as a module (module_worker.js), a top-level function is not a global.
self.runSameGraph = runSameGraph;
