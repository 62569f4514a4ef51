// META: title=validation tests for WebNN API element-wise binary operations
// META: global=window
// META: variant=?cpu

'use strict';

// Validation-style checks, as WPT's webnn/validation_tests do them: the builder
// rejects bad arguments synchronously with TypeError, and objects of another
// context are rejected.
let context;
promise_setup(async () => {
  assert_true('ml' in navigator, 'navigator.ml exists');
  context = await navigator.ml.createContext({deviceType: 'cpu'});
});

promise_test(async () => {
  const builder = new MLGraphBuilder(context);
  const a = builder.input('a', {dataType: 'float32', shape: [2, 3]});
  const b = builder.input('b', {dataType: 'float32', shape: [4]});
  assert_throws_js(TypeError, () => builder.add(a, b));
}, '[add] throw if the input shapes are not broadcastable');

promise_test(async () => {
  const builder = new MLGraphBuilder(context);
  const a = builder.input('a', {dataType: 'float32', shape: [2]});
  const b = builder.input('b', {dataType: 'int32', shape: [2]});
  assert_throws_js(TypeError, () => builder.add(a, b));
}, '[add] throw if the input data types differ');

promise_test(async () => {
  const otherContext = await navigator.ml.createContext({deviceType: 'cpu'});
  const otherBuilder = new MLGraphBuilder(otherContext);
  const foreign = otherBuilder.input('a', {dataType: 'float32', shape: [2]});
  const builder = new MLGraphBuilder(context);
  const own = builder.input('b', {dataType: 'float32', shape: [2]});
  assert_throws_js(TypeError, () => builder.add(foreign, own));
}, '[add] throw if an input is from another builder');

promise_test(async () => {
  const builder = new MLGraphBuilder(context);
  const a = builder.input('a', {dataType: 'float32', shape: [2]});
  const output = builder.add(a, a, {label: 'sum'});
  assert_equals(output.dataType, 'float32');
  assert_array_equals(output.shape, [2]);
  await builder.build({output});
  assert_throws_dom('InvalidStateError', () => builder.add(a, a));
}, '[add] a built builder throws InvalidStateError');

promise_test(async t => {
  const tensor = await context.createTensor({dataType: 'float32', shape: [2], writable: true});
  assert_throws_js(TypeError, () => context.writeTensor(tensor, new Float32Array(3)));
}, 'writeTensor rejects data of the wrong size');
