// Runs a transformers.js pipeline (its browser bundle, which carries its own ONNX
// Runtime Web, served at /tjs/) on a local model folder (/hub/<id>/), as a page
// would, for tests/ort/test_transformers_js.py.
import {env, pipeline} from "/tjs/transformers.min.js";
import {withinTime} from "./never_hang.mjs";

const params = new URLSearchParams(location.search);
env.allowRemoteModels = false;          // the model comes from our server, never a hub
env.allowLocalModels = true;
env.localModelPath = "/hub/";
env.useBrowserCache = false;            // each run fetches the files of this test's model
env.useWasmCache = false;
env.backends.onnx.wasm.wasmPaths = "/tjs-ort/";   // ORT's wasm files beside its bundle, not a CDN
env.backends.onnx.wasm.numThreads = 1;            // no cross-origin isolation, so no wasm threads
if (params.get("log") === "verbose") env.logLevel = 10;  // DEBUG: ORT's verbose log, read once at its start

// One feature-extraction run: the tokenizer's ids, the pooled embeddings, what ORT
// printed and the WebNN calls it made.
// On WebNN, with the MLContext the page created as the EP's `context` (transformers.js passes
// session_options.executionProviders to ONNX Runtime Web as they are): ORT creating its own
// starts with `options instanceof GPUDevice`, a ReferenceError without WebGPU (README "Browsers").
async function runPipelineOnce({model, device, sentences, verbose = false}) {
  const firstLine = self.ortConsole.length;
  self.webnnTrace.reset();
  const context = device === "webnn" ? await navigator.ml.createContext({deviceType: "cpu"}) : null;
  const session_options = {logSeverityLevel: verbose ? 0 : 2, logVerbosityLevel: 0};
  if (context) session_options.executionProviders = [{name: "webnn", deviceType: "cpu", context}];
  const extractor = await pipeline("feature-extraction", model, {device, dtype: "fp32", session_options});
  try {
    const tokens = extractor.tokenizer(sentences, {padding: true});
    const embeddings = await extractor(sentences, {pooling: "mean", normalize: true});
    const integers = (tensor) => tensor.tolist().map((row) => row.map(Number));
    return {
      ids: integers(tokens.input_ids), mask: integers(tokens.attention_mask),
      dims: Array.from(embeddings.dims), data: Array.from(embeddings.data),
      console: self.ortConsole.slice(firstLine), webnn: self.webnnTrace.summary(),
    };
  } finally {
    await extractor.dispose();
    if (context) context.destroy();
  }
}

self.runPipeline = (args) => withinTime(runPipelineOnce(args), `runPipeline(${args.device})`, args.timeoutMs);

self.transformersPageReady = true;
