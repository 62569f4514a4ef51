// The selfie model through MLModelLoader inside a dedicated worker
// (tests/loader/test_browser.py compares it with the window's result).
importScripts("/webnn-polyfill.js");
onmessage = async () => {
  try {
    const context = await navigator.ml.createContext();
    const buffer = await fetch("/models/selfie_segmentation.tflite").then((r) => r.arrayBuffer());
    const model = await new MLModelLoader(context).load(buffer);
    const [info] = model.inputs();
    const data = new Float32Array(256 * 256 * 3).fill(0.5);
    const output = await model.compute({ data, dimensions: info.dimensions });
    postMessage({ ok: true, global: self.constructor.name, data: Array.from(output.data), dimensions: output.dimensions });
  } catch (e) {
    postMessage({ ok: false, error: `${e.name}: ${e.message}` });
  }
};
