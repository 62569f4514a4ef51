// In-page half of bench/webnn_bench.py. The models arrive as bench/models.py's
// wire format (/models/NAME.json: inputs, constants, builder calls; NAME.bin:
// the constants; NAME.inputs.bin: the sample inputs) and are replayed through
// navigator.ml's MLGraphBuilder by this page script, as a real user would;
// ORT-web's wasm EP runs the torch-exported /models/NAME.onnx of the same model.
import * as ort from "/ort/ort.wasm.min.mjs";

const params = self.benchParams;
ort.env.wasm.wasmPaths = "/ort/";
// Read once, when ORT's wasm module starts: one thread count per page.
ort.env.wasm.numThreads = Number(params.get("threads") || 1);
ort.env.logLevel = "error";

const sessions = {};   // kind ("webnn" | "ort") -> state of the current model

async function fetchModel(name) {
  const [description, blob, inputBlob] = await Promise.all([
    fetch(`/models/${name}.json`).then((r) => r.json()),
    fetch(`/models/${name}.bin`).then((r) => r.arrayBuffer()),
    fetch(`/models/${name}.inputs.bin`).then((r) => r.arrayBuffer()),
  ]);
  const inputs = {};
  let offset = 0;
  for (const [inputName, desc] of Object.entries(description.inputs)) {
    const length = desc.shape.reduce((a, b) => a * b, 1);
    inputs[inputName] = new Float32Array(inputBlob, offset, length);
    offset += length * 4;
  }
  return {description, blob, inputs};
}

function resolve(value, operands) {
  if (Array.isArray(value)) return value.map((v) => resolve(v, operands));
  if (value !== null && typeof value === "object") {
    if ("$ref" in value) return operands[value.$ref];
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v, operands)]));
  }
  return value;
}

// bench/models.py's emit(), in JS: inputs, constants, then every recorded builder call.
function replay(builder, {description, blob}) {
  const operands = {};
  for (const [name, desc] of Object.entries(description.inputs)) operands[name] = builder.input(name, desc);
  for (const [name, c] of Object.entries(description.constants)) {
    operands[name] = builder.constant({dataType: c.dataType, shape: c.shape}, new Float32Array(blob, c.offset, c.length));
  }
  for (const call of description.calls) operands[call.output] = builder[call.op](...resolve(call.args, operands));
  return Object.fromEntries(Object.entries(description.outputs).map(([k, v]) => [k, operands[v]]));
}

async function runWebnn(s) {
  for (const [name, data] of Object.entries(s.inputs)) s.context.writeTensor(s.inputTensors[name], data);
  s.context.dispatch(s.graph, s.inputTensors, s.outputTensors);
  const out = {};
  for (const [name, tensor] of Object.entries(s.outputTensors)) out[name] = new Float32Array(await s.context.readTensor(tensor));
  return out;
}

async function runOrt(s) {
  const results = await s.session.run(s.feeds);
  return Object.fromEntries(Object.entries(results).map(([k, t]) => [k, t.data]));
}

const RUN = {webnn: runWebnn, ort: runOrt};
const plain = (outputs) => Object.fromEntries(Object.entries(outputs).map(([k, v]) => [k, Array.from(v)]));

// Page load → createContext() → fetch, replay, build() → first result; every mark in ms
// since navigation start (performance.now()'s origin).
async function setupWebnn(name) {
  const context = await self.contextPromise;
  const t0 = performance.now();
  const model = await fetchModel(name);
  const t1 = performance.now();
  const builder = new MLGraphBuilder(context);
  const outputs = replay(builder, model);
  const t2 = performance.now();
  const graph = await builder.build(outputs);
  const t3 = performance.now();
  const inputTensors = {}, outputTensors = {};
  for (const [inputName, desc] of Object.entries(model.description.inputs)) {
    inputTensors[inputName] = await context.createTensor({...desc, writable: true});
  }
  for (const [outputName, operand] of Object.entries(outputs)) {
    outputTensors[outputName] = await context.createTensor({dataType: operand.dataType, shape: operand.shape, readable: true});
  }
  const s = {context, graph, inputs: model.inputs, inputTensors, outputTensors};
  const t4 = performance.now();
  const first = await runWebnn(s);
  const t5 = performance.now();
  sessions.webnn = s;
  return {start: t0, fetchMs: t1 - t0, replayMs: t2 - t1, buildMs: t3 - t2, firstRunMs: t5 - t4,
          firstResultAt: t5, contextResolvedAt: self.contextResolvedMs, output: plain(first)};
}

async function setupOrt(name) {
  const model = await fetchModel(name);
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(`/models/${name}.onnx`, {executionProviders: ["wasm"]});
  const t1 = performance.now();
  const feeds = {};
  for (const [inputName, data] of Object.entries(model.inputs)) {
    feeds[inputName] = new ort.Tensor("float32", data, model.description.inputs[inputName].shape);
  }
  const s = {session, feeds};
  const first = await runOrt(s);
  const t2 = performance.now();
  sessions.ort = s;
  return {createMs: t1 - t0, firstRunMs: t2 - t1, threads: ort.env.wasm.numThreads, output: plain(first)};
}

// Run until at least `ms` milliseconds have passed: V8 tiers wasm up gradually, and
// caches (Pyodide's, ORT's) fill on first use.
async function warmUp(kind, ms) {
  const t0 = performance.now();
  let runs = 0;
  while (performance.now() - t0 < ms || runs < 2) {
    await RUN[kind](sessions[kind]);
    runs++;
  }
  return {runs, ms: performance.now() - t0};
}

// `count` back-to-back runs, each timed on its own (crossOriginIsolated pages have a 5 µs clock).
async function timeRuns(kind, count) {
  const times = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    await RUN[kind](sessions[kind]);
    times.push(performance.now() - t0);
  }
  return times;
}

async function release() {
  if (sessions.ort) await sessions.ort.session.release();
  if (sessions.webnn) {
    sessions.webnn.graph.destroy();
    for (const t of [...Object.values(sessions.webnn.inputTensors), ...Object.values(sessions.webnn.outputTensors)]) t.destroy();
  }
  delete sessions.ort;
  delete sessions.webnn;
}

// The per-operator breakdown runs bench/op_profile.py in a Pyodide instance of this
// page's own (the polyfill keeps its instance private), from the same runtime files.
let profilerPromise = null;
function startProfiler() {
  profilerPromise ??= (async () => {
    const {loadPyodide} = await import("/pyodide/pyodide.mjs");
    const py = await loadPyodide({indexURL: new URL("/pyodide/", location.href).href});
    // No scipy: the products run in webnn_py's own wasm kernels (webnn_py/kernels), as in page 1.
    await py.loadPackage(["numpy", "webnn-py"], {messageCallback: () => {}});
    py.FS.mkdirTree("/bench");
    for (const file of ["models.py", "op_profile.py"]) {
      py.FS.writeFile(`/bench/${file}`, await (await fetch(`/${file}`)).text());
    }
    py.runPython("import sys; sys.path.insert(0, '/bench')");
    return py;
  })();
  return profilerPromise;
}

async function profileInPyodide({name, runs, warmup}) {
  const profiler = await startProfiler();
  profiler.globals.set("bench_args", JSON.stringify({name, runs, warmup}));
  return JSON.parse(await profiler.runPythonAsync(`
import json
from op_profile import profile_model
_a = json.loads(bench_args)
json.dumps(await profile_model(_a["name"], _a["runs"], _a["warmup"]))
`));
}

Object.assign(self, {setupWebnn, setupOrt, warmUp, timeRuns, release, startProfiler, profileInPyodide});

// The cold-start path: build and run the first model as soon as the page can.
if (params.get("webnn") === "1" && params.get("first")) {
  self.coldStart = await setupWebnn(params.get("first")).catch((e) => ({error: `${e.name}: ${e.message}`}));
}
self.benchReady = true;
