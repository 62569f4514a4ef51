// A small stand-in for WPT's webnn/resources/utils.js, written for the runner's
// self-tests: the same shape (an array of {name, graph: {inputs, operators,
// expectedOutputs}} cases per file, a context from ?cpu/?gpu/?npu/?device=,
// one case with ?tc=, [required]/[optional] from opSupportLimits() and
// minimum_datatype_set.json), not the same code.
"use strict";

const searchParams = new URLSearchParams(self.location.search);

function contextOptions() {
  for (const device of ["cpu", "gpu", "npu"]) {
    if (searchParams.has(device)) return { deviceType: device };
  }
  return searchParams.has("device") ? { deviceType: searchParams.get("device") } : {};
}

const TYPED_ARRAYS = {
  float32: Float32Array, float16: Uint16Array, int32: Int32Array, uint32: Uint32Array,
  int8: Int8Array, uint8: Uint8Array, int4: Uint8Array, uint4: Uint8Array,
};

function caseDataTypes(graph) {
  return Object.values(graph.inputs).map((input) => input.descriptor.dataType);
}

function isRequired(minimum, graph) {
  return graph.operators.every((op) => {
    const required = minimum[op.name] || [];
    return caseDataTypes(graph).every((type) => required.includes(type));
  });
}

function isSupported(limits, graph) {
  return graph.operators.every((op) => {
    const opLimits = limits[op.name];
    if (!opLimits) return false;
    return caseDataTypes(graph).every((type) => opLimits.a ? opLimits.a.dataTypes.includes(type)
                                                           : limits.input.dataTypes.includes(type));
  });
}

// Float32 distance in units in the last place.
function ulpDistance(a, b) {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat32(0, a);
  view.setFloat32(4, b);
  return Math.abs(view.getInt32(0) - view.getInt32(4));
}

async function runCase(context, graph, tolerance) {
  const builder = new MLGraphBuilder(context);
  const operands = {};
  const tensors = {};
  for (const [name, input] of Object.entries(graph.inputs)) {
    operands[name] = builder.input(name, input.descriptor);
    tensors[name] = await context.createTensor({ ...input.descriptor, writable: true });
    context.writeTensor(tensors[name], new TYPED_ARRAYS[input.descriptor.dataType](input.data));
  }
  for (const op of graph.operators) {
    operands[op.outputs] = builder[op.name](...op.arguments.map((arg) => operands[Object.values(arg)[0]]));
  }
  const outputNames = Object.keys(graph.expectedOutputs);
  const built = await builder.build(Object.fromEntries(outputNames.map((name) => [name, operands[name]])));
  const outputs = {};
  for (const name of outputNames) {
    outputs[name] = await context.createTensor({ ...graph.expectedOutputs[name].descriptor, readable: true });
  }
  context.dispatch(built, tensors, outputs);
  for (const name of outputNames) {
    const expected = graph.expectedOutputs[name];
    const actual = new TYPED_ARRAYS[expected.descriptor.dataType](await context.readTensor(outputs[name]));
    assert_equals(actual.length, expected.data.length, `${name}: element count`);
    for (let i = 0; i < actual.length; i++) {
      if (expected.descriptor.dataType === "float32") {
        assert_less_than_equal(ulpDistance(actual[i], expected.data[i]), tolerance,
                               `${name}[${i}]: ${actual[i]} vs ${expected.data[i]}`);
      } else {
        assert_equals(actual[i], expected.data[i], `${name}[${i}]`);
      }
    }
  }
}

// Declares one promise_test per case the context supports or the minimum set requires.
function webnn_conformance_test(cases, tolerance = 0) {
  setup({ explicit_done: true });
  (async () => {
    const context = await navigator.ml.createContext(contextOptions());
    const minimum = await (await fetch("/webnn/resources/minimum_datatype_set.json")).json();
    const limits = context.opSupportLimits();
    const wanted = searchParams.get("tc");
    for (const testCase of cases) {
      if (wanted !== null && testCase.name !== wanted) continue;
      const required = isRequired(minimum, testCase.graph);
      if (!required && !isSupported(limits, testCase.graph)) continue;
      promise_test(() => runCase(context, testCase.graph, tolerance),
                   `${required ? "[required]" : "[optional]"} ${testCase.name}`);
    }
    done();
  })().catch((error) => {
    test(() => { throw error; }, "set-up: createContext and minimum_datatype_set.json");
    done();
  });
}
