// META: title=navigator.ml computes in every global scope
// META: global=window,worker
// META: variant=?cpu

'use strict';

const scope = self.constructor.name;

promise_test(async () => {
  assert_true('ml' in navigator, `navigator.ml in ${scope}`);
  const context = await navigator.ml.createContext({deviceType: 'cpu'});
  const builder = new MLGraphBuilder(context);
  const desc = {dataType: 'float32', shape: [2, 2]};
  const a = builder.input('a', desc);
  const b = builder.constant(desc, new Float32Array([0.5, 0.25, -1, 8]));
  const graph = await builder.build({c: builder.mul(builder.add(a, b), b)});
  const input = await context.createTensor({...desc, writable: true});
  const output = await context.createTensor({...desc, readable: true});
  context.writeTensor(input, new Float32Array([1, 2, 3, 4]));
  context.dispatch(graph, {a: input}, {c: output});
  const result = new Float32Array(await context.readTensor(output));
  // (a + b) * b, exact in float32.
  assert_array_equals(Array.from(result), [0.75, 0.5625, -2, 96]);
}, `add and mul through createTensor/writeTensor/dispatch/readTensor (${location.search})`);
