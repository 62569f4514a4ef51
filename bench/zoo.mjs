// In-page half of bench/zoo.py: ONNX models run by ONNX Runtime Web, through its WebNN
// EP (over webnn-py's navigator.ml) and its own wasm EP, and by navigator.ml directly
// (the builder calls bench/webnn_recording.py recorded from the same ONNX graph); one
// session per side ("kind": "webnn", "wasm", "builder"), each {run(), release()}.
import * as ort from "/ort/ort.all.min.mjs";

const params = new URLSearchParams(location.search);
ort.env.wasm.wasmPaths = "/ort/";
ort.env.wasm.numThreads = Number(params.get("threads") || 1);   // read once per page
ort.env.logLevel = "verbose";         // JS side; each session sets its own C++ severity

// ORT-web's WebNN EP with a context the page created (one, as ORT's own cache would share):
// ORT creating its own starts with `options instanceof GPUDevice`, a ReferenceError in an
// engine without WebGPU (README "Browsers").
let webnnContext;
async function providers(kind) {
  if (kind !== "webnn") return ["wasm"];
  webnnContext ??= await navigator.ml.createContext({deviceType: "cpu"});
  return [{name: "webnn", deviceType: "cpu", context: webnnContext}];
}
const sessions = {};                  // kind -> {run(), release()}

// The model's sample inputs (float32, in `dims`' order): {name: Float32Array}.
async function inputsOf(name, dims) {
  const blob = await fetch(`/models/${name}.inputs.bin`).then((r) => r.arrayBuffer());
  const inputs = {};
  let offset = 0;
  for (const [input, shape] of Object.entries(dims)) {
    const length = shape.reduce((a, b) => a * b, 1);
    inputs[input] = new Float32Array(blob, offset, length);
    offset += length * 4;
  }
  return inputs;
}

// A run's outputs ({name: ort.Tensor or Float32Array}) as JSON-able arrays.
const plain = (outputs) => Object.fromEntries(Object.entries(outputs).map(([k, v]) => [k, Array.from(v.data ?? v)]));

// A session of `kind` for model NAME: its first outputs, and for ORT's sessions the
// placement lines of a check session's verbose log and the thread count.
async function setup({kind, name, dims}) {
  const inputs = await inputsOf(name, dims);
  const made = kind === "builder" ? await builderSession(name, inputs) : await ortSession(kind, name, dims, inputs);
  sessions[kind] = made.session;
  return {...made.info, output: plain(await made.session.run())};
}

async function ortSession(kind, name, dims, inputs) {
  const url = `/models/${name}.onnx`;
  const first = self.ortConsole.length;
  const check = await ort.InferenceSession.create(url, {executionProviders: await providers(kind), logSeverityLevel: 0,
                                                        logVerbosityLevel: 0});
  await check.release();
  const log = self.ortConsole.slice(first).filter((line) => /placed on|GetCapability|supported: \[0\]/.test(line));
  self.ortConsole.length = 0;
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(url, {executionProviders: await providers(kind), logSeverityLevel: 3});
  const createMs = performance.now() - t0;
  const feeds = Object.fromEntries(Object.entries(inputs).map(([k, data]) => [k, new ort.Tensor("float32", data, dims[k])]));
  return {session: {run: () => session.run(feeds), release: () => session.release()},
          info: {log, createMs, threads: ort.env.wasm.numThreads}};
}

// The recording's argument encoding (bench/webnn_recording.py) → builder arguments.
function decode(value, operands, blob) {
  if (Array.isArray(value)) return value.map((v) => decode(v, operands, blob));
  if (value === null || typeof value !== "object") return value;
  if ("$operand" in value) return operands[value.$operand];
  if ("$bytes" in value) return new self[value.type](blob, value.$bytes[0], value.$bytes[1]);
  if ("$number" in value) return Number(value.$number);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, decode(v, operands, blob)]));
}

// /models/NAME.webnn.json + .bin replayed through navigator.ml's MLGraphBuilder (every
// call as recorded: `builder[op](...args)`), built, and run per `run()` as a page would:
// writeTensor per input, dispatch, readTensor per output.
let builderContext;
async function builderSession(name, inputs) {
  const [recording, blob] = await Promise.all([fetch(`/models/${name}.webnn.json`).then((r) => r.json()),
                                               fetch(`/models/${name}.webnn.bin`).then((r) => r.arrayBuffer())]);
  builderContext ??= await navigator.ml.createContext({deviceType: "cpu"});
  const context = builderContext;
  const builder = new MLGraphBuilder(context);
  const operands = [];
  for (const {op, args, result} of recording.calls) {
    const value = builder[op](...decode(args, operands, blob));
    if (Array.isArray(result)) result.forEach((id, i) => { operands[id] = value[i]; });
    else operands[result] = value;
  }
  const t0 = performance.now();
  const graph = await builder.build(Object.fromEntries(Object.entries(recording.outputs).map(([k, id]) => [k, operands[id]])));
  const buildMs = performance.now() - t0;
  const inputTensors = {}, outputTensors = {};
  for (const [input, descriptor] of Object.entries(recording.inputs)) {
    inputTensors[input] = await context.createTensor({...descriptor, writable: true});
  }
  for (const [output, id] of Object.entries(recording.outputs)) {
    outputTensors[output] = await context.createTensor({dataType: operands[id].dataType, shape: operands[id].shape,
                                                        readable: true});
  }
  const inputList = Object.entries(inputTensors).map(([k, tensor]) => [tensor, inputs[k]]);
  const outputList = Object.entries(outputTensors);
  const run = async () => {
    for (const [tensor, data] of inputList) context.writeTensor(tensor, data);
    context.dispatch(graph, inputTensors, outputTensors);
    const out = {};
    for (const [output, tensor] of outputList) out[output] = new Float32Array(await context.readTensor(tensor));
    return out;
  };
  // `count` runs with each part timed on its own: medians of the writes, the dispatch, the
  // awaited reads and the whole run.
  const timeCalls = async (count) => {
    const times = {write: [], dispatch: [], read: [], run: []};
    for (let i = 0; i < count; i++) {
      const t0 = performance.now();
      for (const [tensor, data] of inputList) context.writeTensor(tensor, data);
      const t1 = performance.now();
      context.dispatch(graph, inputTensors, outputTensors);
      const t2 = performance.now();
      for (const [, tensor] of outputList) await context.readTensor(tensor);
      const t3 = performance.now();
      times.write.push(t1 - t0);
      times.dispatch.push(t2 - t1);
      times.read.push(t3 - t2);
      times.run.push(t3 - t0);
    }
    const median = (values) => values.sort((a, b) => a - b)[values.length >> 1];
    return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
  };
  const release = async () => {
    graph.destroy();
    for (const tensor of [...Object.values(inputTensors), ...Object.values(outputTensors)]) tensor.destroy();
  };
  return {session: {run, phases: timeCalls, release}, info: {buildMs}};
}

// Warm up until the median of the last window of runs is no more than `drop` below the
// previous window's (V8 tiers wasm up in the background for tens of seconds on a busy
// machine): windows of at least `windowMs` and 5 runs, at least minMs, at most maxMs.
async function warmUp(kind, {minMs, maxMs, windowMs, drop}) {
  const s = sessions[kind];
  const t0 = performance.now();
  const medians = [];
  let runs = 0;
  for (;;) {
    const times = [];
    const w0 = performance.now();
    while (performance.now() - w0 < windowMs || times.length < 5) {
      const r0 = performance.now();
      await s.run();
      times.push(performance.now() - r0);
    }
    runs += times.length;
    times.sort((a, b) => a - b);
    medians.push(times[times.length >> 1]);
    const elapsed = performance.now() - t0;
    const n = medians.length;
    const settled = n >= 2 && medians[n - 1] >= (1 - drop) * medians[n - 2];
    if ((settled && elapsed >= minMs) || elapsed >= maxMs) return {runs, ms: elapsed, medians, settled};
  }
}

async function timeRuns(kind, count) {
  const s = sessions[kind];
  const times = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    await s.run();
    times.push(performance.now() - t0);
  }
  return times;
}

// The builder side's run split into its calls (see builderSession's phases).
const phases = (kind, count) => sessions[kind].phases(count);

async function release() {
  for (const [kind, s] of Object.entries(sessions)) {
    await s.release();
    delete sessions[kind];
  }
}

Object.assign(self, {setup, warmUp, timeRuns, phases, release});
self.zooReady = true;
