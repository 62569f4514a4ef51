// In-page half of bench/zoo.py: ONNX models run by ONNX Runtime Web, through its WebNN
// EP (over webnn-py's navigator.ml) and its own wasm EP; one session per side ("kind").
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
const sessions = {};                  // kind -> {session, feeds}

async function feedsOf(name, dims) {
  const blob = await fetch(`/models/${name}.inputs.bin`).then((r) => r.arrayBuffer());
  const feeds = {};
  let offset = 0;
  for (const [input, shape] of Object.entries(dims)) {
    const length = shape.reduce((a, b) => a * b, 1);
    feeds[input] = new ort.Tensor("float32", new Float32Array(blob, offset, length), shape);
    offset += length * 4;
  }
  return feeds;
}

async function runSession(s) {
  const results = await s.session.run(s.feeds);
  return Object.fromEntries(Object.entries(results).map(([k, t]) => [k, t.data]));
}

// A session of `kind` for /models/NAME.onnx, after a check session whose verbose log says
// where ORT placed the nodes; returns that log's placement lines and the first outputs.
async function setup({kind, name, dims}) {
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
  sessions[kind] = {session, feeds: await feedsOf(name, dims)};
  const output = await runSession(sessions[kind]);
  return {log, createMs, threads: ort.env.wasm.numThreads,
          output: Object.fromEntries(Object.entries(output).map(([k, v]) => [k, Array.from(v)]))};
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
      await s.session.run(s.feeds);
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
    await s.session.run(s.feeds);
    times.push(performance.now() - t0);
  }
  return times;
}

async function release() {
  for (const [kind, s] of Object.entries(sessions)) {
    await s.session.release();
    delete sessions[kind];
  }
}

Object.assign(self, {setup, warmUp, timeRuns, release});
self.zooReady = true;
