// ONNX Runtime Web's WebNN EP (1.30, and the 1.31 build transformers.js 4.3.1 bundles)
// starts createMLContext() with `options instanceof GPUDevice`: a ReferenceError in an
// engine without WebGPU (Firefox ESR 153, WebKitGTK 2.50 here), so its WebNN EP cannot
// start there at all, polyfill or not. A page that runs it there needs a GPUDevice
// binding; this one is defined only where the engine has none, and nothing is ever an
// instance of it, so ORT takes its MLContextOptions path as in Chromium. The tests
// record which engines needed it (self.gpuDeviceStandIn).
self.gpuDeviceStandIn = typeof GPUDevice === "undefined";
if (self.gpuDeviceStandIn) {
  Object.defineProperty(self, "GPUDevice", {
    value: class GPUDevice { constructor() { throw new TypeError("Illegal constructor"); } },
    writable: true, configurable: true,
  });
}
