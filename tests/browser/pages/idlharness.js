// idlharness test of idl/webnn.idl against the polyfill; runs in a window
// (idlharness.html) and in a dedicated worker (fetch_tests_from_worker).
if (typeof importScripts === "function") {
  importScripts("/resources/testharness.js", "/resources/webidl2.js", "/resources/idlharness.js",
                "/webnn-polyfill.js");
  setup({ explicit_timeout: true });   // as in idlharness.html: the test bounds the wait
}

idl_test(["webnn"], ["html", "webgpu"], async (idl_array) => {
  idl_array.add_objects({
    ML: ["navigator.ml"],
    MLContext: ["context"],
    MLGraph: ["graph"],
    MLGraphBuilder: ["builder"],
    MLOperand: ["input", "constant", "output"],
    MLTensor: ["tensor"],
  });
  if (typeof Window === "function" && self instanceof Window) {
    idl_array.add_objects({ Navigator: ["navigator"] });
  } else {
    idl_array.add_objects({ WorkerNavigator: ["navigator"] });
  }
  self.context = await navigator.ml.createContext();
  self.builder = new MLGraphBuilder(context);
  self.input = builder.input("input", { dataType: "float32", shape: [2, 3] });
  self.constant = builder.constant({ dataType: "float32", shape: [2, 3] }, new Float32Array(6));
  self.output = builder.add(input, constant);
  self.tensor = await context.createTensor({ dataType: "float32", shape: [2, 3] });
  self.graph = await builder.build({ output });
});

if (typeof importScripts === "function") done();
