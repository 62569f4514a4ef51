"""MLContext's per-frame calls -- writeTensor(), dispatch(), readTensor() -- which the shim
hands to Python without the general path's conversion when their arguments are our own
wrappers (webnn-polyfill.js TENSOR_LANES, bridge.dispatch / write_tensor / read_tensor;
issue 17 item 2): every exception of §8.3.1, §8.3.4-§8.3.6 still thrown, with the spec's
type and a message naming the problem, records that WebIDL rejects still rejected as the
general path rejects them (the names and values read so far handed over), and the timeline
order kept. Expected values are hand-computed. In every engine of tests/browser/conftest.py.
"""
from .console_page import call, console_errors, mark, page, server  # noqa: F401 - fixtures

CALLS = """async () => {
  const context = await navigator.ml.createContext();
  const other = await navigator.ml.createContext();
  const desc = {dataType: "float32", shape: [2]};
  const gb = new MLGraphBuilder(context);
  const graph = await gb.build({c: gb.mul(gb.input("a", desc), gb.input("b", desc))});
  const make = (c, d, usage) => c.createTensor({...d, ...usage});
  const [ta, tb, tc, tr, t3, foreign, spare] = await Promise.all([
    make(context, desc, {writable: true, readable: true}), make(context, desc, {writable: true}),
    make(context, desc, {readable: true}), make(context, desc, {}), make(context, {dataType: "float32", shape: [3]}, {}),
    make(other, desc, {writable: true, readable: true}), make(context, desc, {writable: true})]);
  const error = (f) => {
    try { f(); return "no error"; } catch (e) { return [e.name, e.message]; }
  };
  const rejection = async (p) => {
    try { await p; return "no error"; } catch (e) { return [e.name, e.message]; }
  };
  const read = async (t) => Array.from(new Float32Array(await context.readTensor(t)));
  const facts = {};

  // The timeline order: each read sees the write and dispatch called before it.
  context.writeTensor(ta, new Float32Array([2, 3]));
  context.writeTensor(tb, new Float32Array([5, -1]));
  context.dispatch(graph, {a: ta, b: tb}, {c: tc});
  const first = context.readTensor(tc);
  context.writeTensor(ta, new DataView(new Float32Array([4, 0.5]).buffer));
  context.dispatch(graph, {a: ta, b: tb}, {c: tc});
  const second = context.readTensor(tc);
  facts.ordered = [Array.from(new Float32Array(await first)), Array.from(new Float32Array(await second))];
  const into = new Float32Array(2);
  facts.intoResolvesUndefined = (await context.readTensor(tc, into)) === undefined;
  facts.into = Array.from(into);
  // Reads queued behind other work (a createTensor() runs in a later task): their promises
  // settle when the timeline reaches them, or reject when the tensor is destroyed first.
  const [td] = await Promise.all([make(context, desc, {readable: true, writable: true})]);
  context.writeTensor(td, new Float32Array([7, 8]));
  const queued = make(context, desc, {});
  const pendingRead = context.readTensor(tc);
  const pendingInto = new Float32Array(2);
  const pendingIntoRead = context.readTensor(td, pendingInto);
  facts.pending = Array.from(new Float32Array(await pendingRead));
  facts.pendingIntoResolvesUndefined = (await pendingIntoRead) === undefined;
  facts.pendingInto = Array.from(pendingInto);
  await queued;
  const queuedAgain = make(context, desc, {});
  const doomedRead = context.readTensor(td);
  td.destroy();
  facts.pendingDestroyed = await rejection(doomedRead);
  await queuedAgain;
  // On an idle timeline the read runs at once, but its promise settles in a later ML task
  // (§8.3.4 step 9.1.3): a destroy() called before then rejects it (§8.8.2 step 2), also
  // for the outputData variant, and a destroy() of another tensor leaves it alone.
  const [te, tf] = await Promise.all([make(context, desc, {readable: true, writable: true}),
                                      make(context, desc, {readable: true, writable: true})]);
  context.writeTensor(tf, new Float32Array([3, 4]));
  const idleRead = context.readTensor(te), idleReadAgain = context.readTensor(te);
  const idleInto = context.readTensor(te, new Float32Array(2));
  const survivor = context.readTensor(tf);
  te.destroy();
  facts.idleDestroyed = [await rejection(idleRead), await rejection(idleReadAgain), await rejection(idleInto)];
  facts.survivor = Array.from(new Float32Array(await survivor));
  // readTensor(tensor, outputData) fills outputData in that ML task (§8.3.5 step 9.1.3):
  // nothing is written before the call returns, and a buffer detached meanwhile rejects.
  const later = new Float32Array([-1, -1]);
  const filling = context.readTensor(tf, later);
  facts.untilTheTask = Array.from(later);
  await filling;
  facts.afterTheTask = Array.from(later);
  const detached = new ArrayBuffer(8);
  const detachedRead = context.readTensor(tf, detached), detachedViewRead = context.readTensor(tf, new Float32Array(detached));
  structuredClone(detached, {transfer: [detached]});
  facts.detachedMeanwhile = [await rejection(detachedRead), await rejection(detachedViewRead)];
  context.writeTensor(tb, new Float32Array([1, 1]).buffer);     // an ArrayBuffer
  facts.fromArrayBuffer = await read(tb).catch((e) => e.name);   // tb is not readable

  // dispatch(): records WebIDL rejects, read as far as its conversion reads them.
  const seen = [];
  facts.notATensor = error(() => context.dispatch(graph, {a: ta, b: {}, get z() { seen.push("z"); return tb; }}, {c: tc}));
  facts.badOutputs = error(() => context.dispatch(graph, {get a() { seen.push("a"); return ta; }, b: tb},
                                                  {c: graph, get d() { seen.push("d"); return tc; }}));
  facts.inputsNotAnObject = error(() => context.dispatch(graph, 5, {get c() { seen.push("c"); return tc; }}));
  facts.seen = seen.splice(0);
  facts.loneSurrogate = error(() => context.dispatch(graph, {"a\\uD800": ta, b: tb}, {c: tc}));
  facts.tooFew = error(() => context.dispatch(graph, {a: ta, b: tb}));
  facts.notAGraph = error(() => context.dispatch(ta, {a: ta, b: tb}, {c: tc}));
  // §8.3.1's own checks.
  facts.sameTensorTwice = error(() => context.dispatch(graph, {a: ta, b: tb}, {c: ta}));
  facts.otherContext = error(() => context.dispatch(graph, {a: foreign, b: tb}, {c: tc}));
  facts.wrongShape = error(() => context.dispatch(graph, {a: ta, b: tb}, {c: t3}));
  facts.missingName = error(() => context.dispatch(graph, {a: ta}, {c: tc}));
  facts.valuesAfterFailures = await read(tc);
  // A (graph, tensors) that dispatched before, after one of them is destroyed.
  context.writeTensor(spare, new Float32Array([10, 20]));
  context.dispatch(graph, {a: ta, b: spare}, {c: tc});
  facts.withSpare = await read(tc);
  spare.destroy();
  facts.destroyedInput = error(() => context.dispatch(graph, {a: ta, b: spare}, {c: tc}));

  // writeTensor() and readTensor().
  facts.writeNotATensor = error(() => context.writeTensor(graph, new Float32Array(2)));
  facts.writeNotABuffer = error(() => context.writeTensor(ta, {length: 2}));
  facts.writeWrongLength = error(() => context.writeTensor(ta, new Float32Array(3)));
  facts.writeNotWritable = error(() => context.writeTensor(tc, new Float32Array(2)));
  facts.writeOtherContext = error(() => context.writeTensor(foreign, new Float32Array(2)));
  facts.writeDestroyed = error(() => context.writeTensor(spare, new Float32Array(2)));
  facts.readUndefined = await rejection(context.readTensor(tc, undefined));
  facts.readNotABuffer = await rejection(context.readTensor(tc, {}));
  facts.readWrongLength = await rejection(context.readTensor(tc, new Float32Array(3)));
  facts.readNotReadable = await rejection(context.readTensor(tr));
  facts.readOtherContext = await rejection(context.readTensor(foreign));
  facts.readDestroyed = await rejection(context.readTensor(spare));
  facts.readNotATensor = await rejection(context.readTensor(graph));

  // A graph destroyed, then the context lost.
  const gb2 = new MLGraphBuilder(context);
  const g2 = await gb2.build({c: gb2.add(gb2.input("a", desc), gb2.input("b", desc))});
  g2.destroy();
  facts.graphDestroyed = error(() => context.dispatch(g2, {a: ta, b: tb}, {c: tc}));
  const lostRead = context.readTensor(tc);
  context.destroy();
  facts.readBeforeLoss = await rejection(lostRead);
  facts.dispatchAfterLoss = error(() => context.dispatch(graph, {a: ta, b: tb}, {c: tc}));
  facts.writeAfterLoss = error(() => context.writeTensor(ta, new Float32Array(2)));
  facts.readAfterLoss = await rejection(context.readTensor(tc));
  return facts;
}"""


def test_tensor_calls_keep_every_spec_step(page):
    before = mark(page)
    f = call(page, CALLS)
    # c = a * b: [2, 3] * [5, -1], then [4, 0.5] * [5, -1].
    assert f["ordered"] == [[10, -3], [20, -0.5]]
    assert f["intoResolvesUndefined"] is True and f["into"] == [20, -0.5]
    assert f["pending"] == [20, -0.5]
    assert f["pendingIntoResolvesUndefined"] is True and f["pendingInto"] == [7, 8]
    assert f["pendingDestroyed"][0] == "InvalidStateError" and "destroyed" in f["pendingDestroyed"][1]
    assert f["fromArrayBuffer"] == "TypeError"
    assert [r[0] for r in f["idleDestroyed"]] == ["InvalidStateError"] * 3, f["idleDestroyed"]
    assert f["survivor"] == [3, 4]
    assert f["untilTheTask"] == [-1, -1] and f["afterTheTask"] == [3, 4]
    assert [r[0] for r in f["detachedMeanwhile"]] == ["TypeError"] * 2, f["detachedMeanwhile"]
    assert f["readBeforeLoss"][0] == "InvalidStateError", f["readBeforeLoss"]
    # Rejected records: TypeErrors naming the argument and the key, read no further.
    assert f["notATensor"][0] == "TypeError" and "inputs" in f["notATensor"][1] and "'b'" in f["notATensor"][1]
    assert f["badOutputs"][0] == "TypeError" and "outputs" in f["badOutputs"][1] and "'c'" in f["badOutputs"][1]
    assert f["inputsNotAnObject"][0] == "TypeError" and "inputs" in f["inputsNotAnObject"][1]
    assert f["seen"] == ["a"]           # not "z" (after {}), not "d" (after graph), not "c" (after 5)
    # The name as a USVString: the lone surrogate replaced, so the graph has no such input.
    assert f["loneSurrogate"][0] == "TypeError" and "a\ufffd" in f["loneSurrogate"][1]
    assert f["tooFew"][0] == "TypeError" and f["notAGraph"][0] == "TypeError"
    assert f["sameTensorTwice"][0] == "TypeError" and "more than once" in f["sameTensorTwice"][1]
    assert f["otherContext"][0] == "TypeError" and "another context" in f["otherContext"][1]
    assert f["wrongShape"][0] == "TypeError" and "float32[3]" in f["wrongShape"][1]
    assert f["missingName"][0] == "TypeError" and "1 tensors" in f["missingName"][1]
    assert f["valuesAfterFailures"] == [20, -0.5]
    assert f["withSpare"] == [40, 10]                    # [4, 0.5] * [10, 20]
    assert f["destroyedInput"][0] == "TypeError" and "destroyed" in f["destroyedInput"][1]
    assert f["writeNotATensor"][0] == "TypeError"
    assert f["writeNotABuffer"][0] == "TypeError" and "inputData" in f["writeNotABuffer"][1]
    assert f["writeWrongLength"][0] == "TypeError" and "12 bytes" in f["writeWrongLength"][1]
    assert f["writeNotWritable"][0] == "TypeError" and "not writable" in f["writeNotWritable"][1]
    assert f["writeOtherContext"][0] == "TypeError" and "another context" in f["writeOtherContext"][1]
    assert f["writeDestroyed"][0] == "TypeError" and "destroyed" in f["writeDestroyed"][1]
    assert f["readUndefined"][0] == "TypeError"
    assert f["readNotABuffer"][0] == "TypeError" and "outputData" in f["readNotABuffer"][1]
    assert f["readWrongLength"][0] == "TypeError" and "12 bytes" in f["readWrongLength"][1]
    assert f["readNotReadable"][0] == "TypeError" and "not readable" in f["readNotReadable"][1]
    assert f["readOtherContext"][0] == "TypeError" and "another context" in f["readOtherContext"][1]
    assert f["readDestroyed"][0] == "TypeError" and "destroyed" in f["readDestroyed"][1]
    assert f["readNotATensor"][0] == "TypeError"
    assert f["graphDestroyed"][0] == "InvalidStateError"
    # Losing the context (§8.3.9) destroys its graphs and tensors.
    assert f["dispatchAfterLoss"][0] == "InvalidStateError"
    assert f["writeAfterLoss"][0] == "TypeError" and f["readAfterLoss"][0] == "TypeError"
    assert not console_errors(page, before)


WRITES = """async () => {
  const context = await navigator.ml.createContext();
  const desc = {dataType: "float32", shape: [2], writable: true, readable: true};
  const tensor = await context.createTensor(desc);
  const written = async (data) => {
    try {
      context.writeTensor(tensor, data);
    } catch (e) {
      return [e.name, e.message];
    }
    return Array.from(new Float32Array(await context.readTensor(tensor)));
  };
  const facts = {};
  // Typed arrays of every kind of buffer: the bytes at the view's own offset.
  const big = new Float32Array([9, 1.5, -2, 9]);
  facts.atAnOffset = await written(new Float32Array(big.buffer, 4, 2));
  facts.bytes = await written(new Uint8Array(new Float32Array([6, 7]).buffer));
  const memory = new WebAssembly.Memory({initial: 1, maximum: 1, shared: true});
  const sharedView = new Float32Array(memory.buffer, 8, 2);
  sharedView.set([0.25, 3]);
  facts.shared = await written(sharedView);
  facts.dataView = await written(new DataView(new Float32Array([5, 6]).buffer));
  facts.arrayBuffer = await written(new Float32Array([-5, 4]).buffer);
  // Views the conversion rejects, with the general path's messages.
  const detached = new ArrayBuffer(8);
  const detachedView = new Float32Array(detached);
  structuredClone(detached, {transfer: [detached]});
  facts.detached = await written(detachedView);
  facts.resizable = typeof ArrayBuffer.prototype.resize === "function"
    ? await written(new Float32Array(new ArrayBuffer(8, {maxByteLength: 16}))) : "unsupported";
  facts.growable = typeof SharedArrayBuffer === "function" && typeof SharedArrayBuffer.prototype.grow === "function"
    ? await written(new Float32Array(new SharedArrayBuffer(8, {maxByteLength: 16}))) : "unsupported";
  facts.wrongLength = await written(new Float32Array(3));
  facts.afterFailures = Array.from(new Float32Array(await context.readTensor(tensor)));
  // A page that replaces the getters the shim reads changes nothing.
  const TA = Object.getPrototypeOf(Uint8Array.prototype);
  const saved = Object.getOwnPropertyDescriptor(TA, "byteLength");
  Object.defineProperty(TA, "byteLength", {get() { return 8; }, configurable: true});
  try {
    facts.patchedGetter = await written(new Float32Array(big.buffer, 8, 2));
    facts.patchedGetterTooShort = await written(new Float32Array(1));
  } finally {
    Object.defineProperty(TA, "byteLength", saved);
  }
  context.destroy();
  return facts;
}"""


def test_write_tensor_of_every_buffer_kind(page):
    """writeTensor(tensor, inputData) with the typed arrays the shim hands over as their bytes
    (js_shim fixedTypedArray: fixed-length buffers, shared or not) and every other buffer
    source, which the bindings convert: the same bytes or the same TypeErrors either way."""
    before = mark(page)
    f = call(page, WRITES)
    assert f["atAnOffset"] == [1.5, -2]
    assert f["bytes"] == [6, 7]
    assert f["shared"] == [0.25, 3]
    assert f["dataView"] == [5, 6] and f["arrayBuffer"] == [-5, 4]
    assert f["detached"][0] == "TypeError" and "0 bytes" in f["detached"][1], f["detached"]
    for kind in ("resizable", "growable"):
        assert f[kind] == "unsupported" or (f[kind][0] == "TypeError" and "resizable" in f[kind][1]), f[kind]
    assert f["wrongLength"][0] == "TypeError" and "12 bytes" in f["wrongLength"][1]
    assert f["afterFailures"] == [-5, 4]
    assert f["patchedGetter"] == [-2, 9]
    assert f["patchedGetterTooShort"][0] == "TypeError" and "4 bytes" in f["patchedGetterTooShort"][1]
    assert not console_errors(page, before)
