// Runs ONNX models with ONNX Runtime Web (served at /ort/) for tests/ort.
import * as ort from "/ort/ort.all.min.mjs";
import {withinTime} from "./never_hang.mjs";

const params = new URLSearchParams(location.search);
ort.env.wasm.wasmPaths = "/ort/";
ort.env.wasm.numThreads = 1;            // no cross-origin isolation, so no wasm threads
ort.env.logLevel = params.get("log") || "warning";   // read once, when ORT initialises
self.ort = ort;

// ORT-web's WebNN EP as a page that runs in every engine sets it up (README "Browsers"):
// with the MLContext the page created. Given none, ORT creates its own in createMLContext(),
// which starts with `options instanceof GPUDevice`: a ReferenceError in an engine without
// WebGPU (Firefox, Safari), so its WebNN EP cannot start there. `ortContext`: let ORT create
// it (what test_ort_creates_its_own_context checks, per engine).
async function webnnProvider(ortContext) {
  if (ortContext) return {context: null, provider: {name: "webnn", deviceType: "cpu"}};
  const context = await navigator.ml.createContext({deviceType: "cpu"});
  return {context, provider: {name: "webnn", deviceType: "cpu", context}};
}

function sessionOptions(provider, {verbose = false, outputLocation} = {}) {
  const options = {
    executionProviders: [provider],
    logSeverityLevel: verbose ? 0 : 2,
    logVerbosityLevel: 0,
  };
  if (outputLocation) options.preferredOutputLocation = outputLocation;
  return options;
}

function feeds(inputs) {
  const out = {};
  for (const [name, {data, dims, type = "float32"}] of Object.entries(inputs)) {
    const values = type === "int64" ? BigInt64Array.from(data, BigInt) : Float32Array.from(data);
    out[name] = new ort.Tensor(type, values, dims);
  }
  return out;
}

// Run one model once; report outputs (read back from MLTensors if asked to keep
// them there), the console lines ORT printed, and the WebNN calls it made.
async function runModelOnce({url, ep = "webnn", inputs, verbose = false, outputLocation, hideOps, hideTypes, createOnly = false,
                             ortContext = false}) {
  const restore = hideOps ? withoutOperators(hideOps) : hideTypes ? withoutDataTypes(hideTypes) : () => {};
  const firstLine = self.ortConsole.length;
  self.webnnTrace.reset();
  let session, context = null;
  try {
    let provider = "wasm";
    if (ep === "webnn") ({context, provider} = await webnnProvider(ortContext));
    session = await ort.InferenceSession.create(url, sessionOptions(provider, {verbose, outputLocation}));
    if (createOnly) return {outputs: null, console: self.ortConsole.slice(firstLine), webnn: self.webnnTrace.summary()};
    const results = await session.run(feeds(inputs));
    const outputs = {};
    for (const [name, tensor] of Object.entries(results)) {
      const entry = {location: tensor.location, dims: Array.from(tensor.dims), type: tensor.type};
      if (tensor.location === "ml-tensor") {
        entry.isMLTensor = tensor.mlTensor instanceof MLTensor;
        entry.mlTensorShape = Array.from(tensor.mlTensor.shape);
        entry.mlTensorDataType = tensor.mlTensor.dataType;
        entry.data = Array.from(await tensor.getData());
        tensor.dispose();
      } else {
        entry.data = Array.from(tensor.data);
      }
      outputs[name] = entry;
    }
    return {outputs, console: self.ortConsole.slice(firstLine), webnn: self.webnnTrace.summary()};
  } finally {
    if (session) await session.release();
    if (context) context.destroy();
    restore();
  }
}

self.runModel = (args) => withinTime(runModelOnce(args), `runModel(${args.url})`, args.timeoutMs);

// Make opSupportLimits() list no data type for some operators, as a context
// that lacks them would: the control experiment that shows ORT partitions the
// graph by our answer. (Deleting the operator's entry instead leaves ORT 1.30's
// session creation pending for ever: it expects every operator to be listed.)
function withoutOperators(names) {
  const original = MLContext.prototype.opSupportLimits;
  MLContext.prototype.opSupportLimits = function opSupportLimits() {
    const limits = original.call(this);
    for (const name of names) {
      for (const operand of Object.values(limits[name])) {
        if (operand && Array.isArray(operand.dataTypes)) operand.dataTypes = [];
      }
    }
    return limits;
  };
  return () => { MLContext.prototype.opSupportLimits = original; };
}

// Make opSupportLimits() leave some data types out everywhere (graph inputs,
// constants, outputs and every operand), as a context without them would.
function withoutDataTypes(types) {
  const original = MLContext.prototype.opSupportLimits;
  const drop = (entry) => {
    if (entry && Array.isArray(entry.dataTypes)) entry.dataTypes = entry.dataTypes.filter((t) => !types.includes(t));
  };
  MLContext.prototype.opSupportLimits = function opSupportLimits() {
    const limits = original.call(this);
    for (const value of Object.values(limits)) {
      drop(value);
      if (value && typeof value === "object") Object.values(value).forEach(drop);
    }
    return limits;
  };
  return () => { MLContext.prototype.opSupportLimits = original; };
}

self.ortPageReady = true;
