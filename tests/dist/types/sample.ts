// Compiled by tests/dist/test_types.py with `tsc --strict --noEmit` against types/webnn.d.ts:
// touches every interface (ML, MLContext, MLGraphBuilder, MLOperand, MLGraph, MLTensor,
// MLModelLoader, MLModel), navigator.ml, enums, typedefs, dictionaries and the loop extension.

async function everything(modelBytes: ArrayBuffer): Promise<number[]> {
  const ml: ML = navigator.ml;
  const context: MLContext = await ml.createContext({ powerPreference: "low-power" });
  const lost: Promise<MLContextLostInfo> = context.lost;
  void lost;
  const accelerated: boolean = context.accelerated;
  const limits: MLOpSupportLimits = context.opSupportLimits();
  const loopLimits: MLLoopSupportLimits | undefined = limits.loop;
  void loopLimits;

  const builder = new MLGraphBuilder(context);
  const desc: MLOperandDescriptor = { dataType: "float32", shape: [2, 2] };
  const a: MLOperand = builder.input("a", desc);
  const dataType: MLOperandDataType = a.dataType;
  const shape: readonly number[] = a.shape;
  const scalar: MLNumber = 2n;
  const two = builder.constant("int64", scalar);
  void two;
  const b = builder.constant(desc, new Float32Array([1, 2, 3, 4]));
  const conv = builder.conv2d(builder.input("x", { dataType: "float32", shape: [1, 1, 4, 4] }),
                              builder.constant({ dataType: "float32", shape: [1, 1, 3, 3] }, new Float32Array(9)),
                              { padding: [1, 1, 1, 1], inputLayout: "nchw", label: "conv" });
  void conv;
  const outputs: MLNamedOperands = { c: builder.relu(builder.add(a, b)) };
  const graph: MLGraph = await builder.build(outputs);
  graph.destroy();

  // The loop extension: a counter body graph.
  const bodyBuilder = new MLGraphBuilder(context);
  const i = bodyBuilder.input("i", { dataType: "float32", shape: [1] });
  const body = await bodyBuilder.build({ next: bodyBuilder.add(i, i), cond: bodyBuilder.constant("uint8", 1) });
  const counted: MLOperand[] = builder.loop(
    builder.constant("int64", 3n), builder.constant("uint8", 1), body, "cond",
    [{ bodyInput: "i", value: builder.constant({ dataType: "float32", shape: [1] }, new Float32Array([1])) }],
    [{ bodyOutput: "next" }], { backEdges: [{ from: "next", to: "i" }], maxIterations: 10 });
  void counted;

  const tensor: MLTensor = await context.createTensor({ ...desc, readable: true, writable: true });
  const flags: boolean[] = [tensor.readable, tensor.writable, tensor.constant];
  void flags;
  context.writeTensor(tensor, new Float32Array(4));
  const named: MLNamedTensors = { a: tensor };
  void named;
  const bytes: ArrayBuffer = await context.readTensor(tensor);
  await context.readTensor(tensor, new Float32Array(4));
  tensor.destroy();

  const loader: MLModelLoader = new MLModelLoader(context);
  const model: MLModel = await loader.load(modelBytes, { maxIterations: 5 });
  const info: MLTensorInfo[] = model.inputs();
  const type: MLDataType = info[0].type;
  const result: Record<string, MLModelTensor> = await model.compute({
    x: { data: new Float32Array(4), dimensions: [1, 4] } });
  model.resetState();
  void model.outputs();
  context.destroy();

  if (!(context instanceof MLContext) || !(graph instanceof MLGraph)) throw new TypeError(dataType + type);
  return [shape.length, bytes.byteLength, Object.keys(result).length, accelerated ? 1 : 0];
}

void everything;
