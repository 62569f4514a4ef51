// In-page half of bench/ort_bench.py: one model, two ORT-web sessions (the WebNN
// EP over webnn-py's navigator.ml, and ORT's own wasm EP), both warmed up, then
// timed alternately so that both sides see the same machine state.
import * as ort from "/ort/ort.all.min.mjs";

ort.env.wasm.wasmPaths = "/ort/";
ort.env.wasm.numThreads = 1;     // no cross-origin isolation here, so one wasm thread (as webnn-py has)
ort.env.logLevel = "error";

const PROVIDERS = {webnn: [{name: "webnn", deviceType: "cpu"}], wasm: ["wasm"]};

function feeds(inputs) {
  const out = {};
  for (const [name, {data, dims, type = "float32"}] of Object.entries(inputs)) {
    const values = type === "int64" ? BigInt64Array.from(data, BigInt) : Float32Array.from(data);
    out[name] = new ort.Tensor(type, values, dims);
  }
  return out;
}

// performance.now() is coarsened to 0.1 ms without cross-origin isolation, so
// each sample times a batch of `batch` runs long enough (~20 ms) to resolve.
async function timedBatch(session, input, batch) {
  const t0 = performance.now();
  let results;
  for (let i = 0; i < batch; i++) results = await session.run(input);
  return {ms: (performance.now() - t0) / batch, results};
}

// Run until at least `ms` milliseconds have passed (V8 tiers wasm up gradually,
// and Pyodide's first calls compile and cache as well).
async function warmUp(session, input, ms) {
  const t0 = performance.now();
  let runs = 0;
  while (performance.now() - t0 < ms || runs < 3) {
    await session.run(input);
    runs++;
  }
  return {runs, ms: performance.now() - t0};
}

self.benchModel = async ({url, inputs, warmupMs, measureMs, minRuns}) => {
  const input = feeds(inputs);
  const sessions = {};
  for (const [name, executionProviders] of Object.entries(PROVIDERS)) {
    sessions[name] = await ort.InferenceSession.create(url, {executionProviders, logSeverityLevel: 3});
  }
  const warmup = {};
  for (const name of Object.keys(sessions)) warmup[name] = await warmUp(sessions[name], input, warmupMs);

  const batch = {};
  for (const [name, w] of Object.entries(warmup)) batch[name] = Math.max(1, Math.ceil(20 / (w.ms / w.runs)));
  const times = {webnn: [], wasm: []};
  const outputs = {};
  const t0 = performance.now();
  while (performance.now() - t0 < measureMs || times.webnn.length < minRuns) {
    for (const name of Object.keys(sessions)) {
      const {ms, results} = await timedBatch(sessions[name], input, batch[name]);
      times[name].push(ms);
      outputs[name] = results;
    }
  }
  // Both EPs must agree, or the timing compares different work.
  let maxDiff = 0;
  for (const key of Object.keys(outputs.wasm)) {
    const a = outputs.webnn[key].data, b = outputs.wasm[key].data;
    for (let i = 0; i < a.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a[i] - b[i]));
  }
  for (const session of Object.values(sessions)) await session.release();
  return {times, warmup, batch, maxDiff};
};

self.benchReady = true;
