// Each line marked `// error` must fail `tsc --strict --noEmit` (tests/dist/test_types.py
// checks that exactly the marked lines are reported).

async function wrong(): Promise<void> {
  const context = await navigator.ml.createContext({ powerPreference: "fastest" }); // error
  const builder = new MLGraphBuilder(context);
  const a = builder.input("a", { dataType: "float33", shape: [2] }); // error
  builder.add(a); // error
  const graph = await builder.build({ c: a });
  new MLGraph(); // error
  context.dispatch(graph, { a: 1 }, {}); // error
  const shape: number[] = a.shape; // error
  a.dataType = "int32"; // error
  builder.loop(a, a, graph, "cond", [{ value: a }], []); // error
  const loader = new MLModelLoader(context);
  await loader.load(new ArrayBuffer(8), { signature: 1 }); // error
}

void wrong;
