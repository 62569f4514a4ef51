"""Step replay (webnn_py/runtime/replay.py) in every engine: a plan's C kernel calls are
recorded at its second and third dispatch and then made again from JavaScript, so the JS
recorder and the chained calls run in each engine's wasm. A small CNN (the one
tests/portable/test_replay.py builds) is dispatched ten times: the first, walked step by step,
and every later one on the same input must give the same bits, and each must match a float64
numpy evaluation. tests/portable/test_replay.py shows the replay happening (in Pyodide under
Node) and compares it with the walk on changing inputs."""
import numpy as np

from tests.portable.test_replay import C, H, W, _reference, _weights

from .console_page import call, page, server  # noqa: F401 - fixtures

DISPATCHES = """async ({weights, inputs}) => {
  const context = await navigator.ml.createContext();
  const b = new MLGraphBuilder(context);
  const f32 = (shape) => ({dataType: "float32", shape});
  const w = {};
  for (const [name, [shape, values]] of Object.entries(weights)) w[name] = b.constant(f32(shape), new Float32Array(values));
  const nhwc = {inputLayout: "nhwc", filterLayout: "ohwi"};
  const x = b.input("x", f32([1, %(H)d, %(W)d, %(C)d]));
  const c1 = b.relu(b.conv2d(x, w.w1, {...nhwc, bias: w.b1}));
  const c2 = b.clamp(b.conv2d(c1, w.dw, {inputLayout: "nhwc", filterLayout: "ihwo", groups: 16,
                                         padding: [1, 1, 1, 1], bias: w.bd}), {minValue: 0, maxValue: 6});
  const pooled = b.averagePool2d(c2, {windowDimensions: [%(H)d, %(W)d], layout: "nhwc"});
  const scale = b.hardSigmoid(b.conv2d(b.relu(b.conv2d(pooled, w.s1, nhwc)), w.s2, nhwc));
  const c3 = b.add(b.conv2d(b.mul(c2, scale), w.w3, nhwc), x);
  const c4 = b.hardSwish(b.conv2d(c3, w.w4, {...nhwc, padding: [1, 1, 1, 1], strides: [2, 2]}));
  const m = b.maxPool2d(c4, {windowDimensions: [3, 3], strides: [2, 2], layout: "nhwc"});
  const y = b.concat([b.relu(b.conv2d(m, w.wa, nhwc)), b.relu(b.conv2d(m, w.wb, nhwc))], 3);
  const graph = await b.build({y});
  const tx = await context.createTensor({...f32([1, %(H)d, %(W)d, %(C)d]), writable: true});
  const ty = await context.createTensor({...f32([1, 3, 3, 8]), readable: true});
  const outputs = [];
  for (const input of inputs) {
    context.writeTensor(tx, new Float32Array(input));
    context.dispatch(graph, {x: tx}, {y: ty});
    outputs.push(Array.from(new Uint32Array(await context.readTensor(ty))));   // the bits
  }
  return outputs;
}""" % {"H": H, "W": W, "C": C}


def test_replayed_dispatches_keep_the_walks_bits(page):
    weights = _weights(11)
    rng = np.random.default_rng(12)
    a, b = (rng.uniform(-1, 1, (1, H, W, C)).astype(np.float32) for _ in range(2))
    # The first walks, the next two record (on other values), the rest replay.
    inputs = [a, b, b, a, b, a, b, a, b, a]
    outputs = call(page, DISPATCHES, {"weights": {name: [list(v.shape), v.ravel().tolist()] for name, v in weights.items()},
                                      "inputs": [x.ravel().tolist() for x in inputs]})
    results = [np.array(bits, np.uint32).view(np.float32).reshape(1, 3, 3, 8) for bits in outputs]
    for index, (x, y) in enumerate(zip(inputs, results)):
        np.testing.assert_allclose(y, _reference(x, weights), rtol=1e-4, atol=1e-4, err_msg=f"dispatch {index + 1}")
    for index in (3, 5, 7, 9):
        assert outputs[index] == outputs[0], f"dispatch {index + 1} (replayed) differs from the first (walked)"
    for index in (4, 6, 8):
        assert outputs[index] == outputs[1], f"dispatch {index + 1} (replayed) differs from the second"
