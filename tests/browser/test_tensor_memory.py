"""writeTensor() and readTensor() (with and without outputData) done by the shim in Pyodide's memory, without a call into
Python, when Python's words say the context's timeline is idle and the tensor usable
(webnn_py/browser/tensor_memory.py; js_shim "Tensor memory"; issue 17 item 2). Every check
here runs after the shim has its record of the tensor (its first write or read), so each
change of state must reach the words: a destroyed tensor, a lost context, a dispatch
suspended mid-way (whose inputs must not change under it), [[data]] replaced by a write the
shim leaves to Python, memory grown under the shim's views, a page that patches the
built-ins. Expected values are hand-computed. In every engine of tests/browser/conftest.py.
"""
from .console_page import call, console_errors, mark, page, server  # noqa: F401 - fixtures

N, STEPS = 128, 300       # y = x @ P^STEPS + x, P the cyclic shift: 300 steps, several slices

STATES = """async ([n, steps]) => {
  const context = await navigator.ml.createContext();
  const other = await navigator.ml.createContext();
  const f32 = (shape) => ({dataType: "float32", shape});
  const error = (f) => {
    try { f(); return "no error"; } catch (e) { return [e.name, e.message]; }
  };
  const rejection = async (p) => {
    try { await p; return "no error"; } catch (e) { return [e.name, e.message]; }
  };
  const facts = {};

  // c = a * b, many rounds in a row: the values of each round.
  const gb = new MLGraphBuilder(context);
  const mul = await gb.build({c: gb.mul(gb.input("a", f32([2])), gb.input("b", f32([2])))});
  const usage = {writable: true, readable: true};
  const [ta, tb, tc] = await Promise.all([context.createTensor({...f32([2]), ...usage}),
    context.createTensor({...f32([2]), writable: true}), context.createTensor({...f32([2]), readable: true})]);
  const read = async (t) => Array.from(new Float32Array(await context.readTensor(t)));
  const rounds = [];
  context.writeTensor(tb, new Float32Array([2, -3]));
  for (let i = 0; i < 4; i++) {
    context.writeTensor(ta, new Float32Array([i, 0.5]));
    context.dispatch(mul, {a: ta, b: tb}, {c: tc});
    rounds.push(await read(tc));
  }
  facts.rounds = rounds;
  facts.readBack = await read(ta);
  // readTensor(tensor, outputData): outputData written when the promise settles (not before
  // the call returns), through a Float32Array or a Uint8Array; a buffer detached meanwhile
  // rejects.
  const into = new Float32Array([-9, -9]);
  const filling = context.readTensor(tc, into);
  facts.intoUntilSettled = Array.from(into);
  facts.intoResolvesUndefined = (await filling) === undefined;
  facts.into = Array.from(into);
  const intoBytes = new Uint8Array(8);
  await context.readTensor(tc, intoBytes);
  facts.intoBytes = Array.from(new Float32Array(intoBytes.buffer));
  const intoBuffer = new ArrayBuffer(8);
  await context.readTensor(tc, intoBuffer);
  facts.intoBuffer = Array.from(new Float32Array(intoBuffer));
  const order = [];
  await Promise.all([context.readTensor(tc, new ArrayBuffer(8)).then(() => order.push(1)),
                     context.readTensor(tc).then(() => order.push(2)),
                     context.readTensor(tc, new Float32Array(2)).then(() => order.push(3))]);
  facts.settledInOrder = order;
  // Reads into buffers pending at once, a write between them: each has the data of its own
  // call (the shim keeps one copy per tensor for such reads, which a pending read holds).
  const intoFirst = new Float32Array(2), intoSecond = new Float32Array(2), intoThird = new Float32Array(2);
  context.writeTensor(ta, new Float32Array([5, 6]));
  const firstRead = context.readTensor(ta, intoFirst);
  context.writeTensor(ta, new Float32Array([7, 8]));
  await Promise.all([firstRead, context.readTensor(ta, intoSecond)]);
  context.writeTensor(ta, new Float32Array([9, 10]));
  await context.readTensor(ta, intoThird);
  facts.pendingReads = [Array.from(intoFirst), Array.from(intoSecond), Array.from(intoThird)];
  const detachedInto = new Float32Array(2);
  const detachedRead = context.readTensor(tc, detachedInto);
  structuredClone(detachedInto.buffer, {transfer: [detachedInto.buffer]});
  facts.intoDetached = await rejection(detachedRead);
  // Bytes through a Uint8Array, and through a view the shim leaves to Python (a DataView:
  // [[data]] replaced by a new array), then through the shim again, into that new array.
  context.writeTensor(ta, new Uint8Array(new Float32Array([1.5, 4]).buffer));
  facts.bytes = await read(ta);
  context.writeTensor(ta, new Float32Array([2.5, 3]).buffer);
  facts.buffer = await read(ta);
  context.writeTensor(ta, new DataView(new Float32Array([6, 7]).buffer));
  facts.dataView = await read(ta);
  context.writeTensor(ta, new Float32Array([-1, 8]));
  context.dispatch(mul, {a: ta, b: tb}, {c: tc});
  facts.afterReplaced = [await read(ta), await read(tc)];

  // Refused by the shim, thrown by Python's steps: the wrong length, the wrong use, another
  // context, then a destroyed tensor. Nothing is written.
  facts.wrongLength = error(() => context.writeTensor(ta, new Float32Array(3)));
  facts.notWritable = error(() => context.writeTensor(tc, new Float32Array(2)));
  facts.notReadable = await rejection(context.readTensor(tb));
  facts.otherContext = error(() => other.writeTensor(ta, new Float32Array([5, 5])));
  facts.otherContextRead = await rejection(other.readTensor(ta));
  facts.unchanged = await read(ta);
  const doomed = [context.readTensor(ta), context.readTensor(ta, new Float32Array(2))];
  ta.destroy();
  facts.destroyedMeanwhile = [await rejection(doomed[0]), await rejection(doomed[1])];
  facts.destroyedWrite = error(() => context.writeTensor(ta, new Float32Array([9, 9])));
  facts.destroyedRead = await rejection(context.readTensor(ta));

  // A page that replaces the built-ins the copies could use changes nothing.
  const TA = Object.getPrototypeOf(Uint8Array.prototype);
  const saved = {set: TA.set, subarray: TA.subarray, slice: TA.slice};
  TA.set = TA.subarray = TA.slice = function () { throw new Error("page's built-in called"); };
  try {
    context.writeTensor(tb, new Float32Array([3, 3]));
    const [tx] = await Promise.all([context.createTensor({...f32([2]), ...usage})]);
    context.writeTensor(tx, new Float32Array([0.25, 2]));
    context.dispatch(mul, {a: tx, b: tb}, {c: tc});
    facts.patched = await read(tc);
  } finally {
    Object.assign(TA, saved);
  }

  // A long dispatch suspended between its steps (timeSlice): a write made meanwhile must not
  // change the input it reads at its last step; the next dispatch sees that write.
  const sb = new MLGraphBuilder(context);
  const x = sb.input("x", f32([n, n]));
  const shift = new Float32Array(n * n);
  for (let i = 0; i < n; i++) shift[i * n + (i + 1) % n] = 1;     // (h @ P)[r][c] = h[r][c - 1]
  const p = sb.constant(f32([n, n]), shift);
  let h = x;
  for (let i = 0; i < steps; i++) h = sb.matmul(h, p);
  const chain = await sb.build({y: sb.add(h, x)});
  const [tx, ty] = await Promise.all([context.createTensor({...f32([n, n]), writable: true}),
                                      context.createTensor({...f32([n, n]), readable: true})]);
  const first = new Float32Array(n * n).map((_, i) => i % n);      // x[r][c] = c
  context.writeTensor(tx, first);
  context.dispatch(chain, {x: tx}, {y: ty});
  context.writeTensor(tx, new Float32Array(n * n).fill(1000));     // while it may be suspended
  const during = context.readTensor(ty);
  context.dispatch(chain, {x: tx}, {y: ty});
  facts.chain = [Array.from(new Float32Array(await during).slice(0, n)),
                 Array.from(new Float32Array(await context.readTensor(ty)).slice(0, n))];

  // Memory grown after the shim took its record: its views of the heap are the new ones.
  const [tg] = await Promise.all([context.createTensor({...f32([2]), ...usage})]);
  context.writeTensor(tg, new Float32Array([1, 2]));
  facts.beforeGrowth = await read(tg);
  const big = await context.createTensor({...f32([64, 1024, 1024]), readable: true});   // 256 MiB
  context.writeTensor(tg, new Float32Array([3, 4]));
  facts.afterGrowth = await read(tg);
  big.destroy();

  // A lost context: its tensors are destroyed, writes and reads refused.
  const [tl] = await Promise.all([context.createTensor({...f32([2]), ...usage})]);
  context.writeTensor(tl, new Float32Array([5, 6]));
  facts.beforeLoss = await read(tl);
  context.destroy();
  facts.writeAfterLoss = error(() => context.writeTensor(tl, new Float32Array([1, 1])));
  facts.readAfterLoss = await rejection(context.readTensor(tl));
  other.destroy();
  return facts;
}"""


def test_writes_and_reads_in_memory_follow_every_state(page):
    before = mark(page)
    f = call(page, STATES, [N, STEPS])
    assert f["rounds"] == [[0, -1.5], [2, -1.5], [4, -1.5], [6, -1.5]]     # [i, 0.5] * [2, -3]
    assert f["readBack"] == [3, 0.5]
    assert f["intoUntilSettled"] == [-9, -9] and f["intoResolvesUndefined"] is True
    assert f["into"] == [6, -1.5] and f["intoBytes"] == [6, -1.5] and f["intoBuffer"] == [6, -1.5]
    assert f["settledInOrder"] == [1, 2, 3]
    assert f["pendingReads"] == [[5, 6], [7, 8], [9, 10]]
    assert f["intoDetached"][0] == "TypeError" and "detached" in f["intoDetached"][1]
    assert f["bytes"] == [1.5, 4] and f["buffer"] == [2.5, 3] and f["dataView"] == [6, 7]
    assert f["afterReplaced"] == [[-1, 8], [-2, -24]]
    assert f["wrongLength"][0] == "TypeError" and "12 bytes" in f["wrongLength"][1]
    assert f["notWritable"][0] == "TypeError" and "not writable" in f["notWritable"][1]
    assert f["notReadable"][0] == "TypeError" and "not readable" in f["notReadable"][1]
    assert f["otherContext"][0] == "TypeError" and "another context" in f["otherContext"][1]
    assert f["otherContextRead"][0] == "TypeError" and "another context" in f["otherContextRead"][1]
    assert f["unchanged"] == [-1, 8]
    assert [r[0] for r in f["destroyedMeanwhile"]] == ["InvalidStateError"] * 2, f["destroyedMeanwhile"]
    assert f["destroyedWrite"][0] == "TypeError" and "destroyed" in f["destroyedWrite"][1]
    assert f["destroyedRead"][0] == "TypeError" and "destroyed" in f["destroyedRead"][1]
    assert f["patched"] == [0.75, 6]                                         # [0.25, 2] * [3, 3]
    # y[0][c] = x[0][c - STEPS mod N] + x[0][c]: with the first x (x[r][c] = c), then 1000 + 1000.
    assert f["chain"] == [[(c - STEPS) % N + c for c in range(N)], [2000] * N]
    assert f["beforeGrowth"] == [1, 2] and f["afterGrowth"] == [3, 4]
    assert f["beforeLoss"] == [5, 6]
    assert f["writeAfterLoss"][0] == "TypeError" and "destroyed" in f["writeAfterLoss"][1]
    assert f["readAfterLoss"][0] == "TypeError" and "destroyed" in f["readAfterLoss"][1]
    assert not console_errors(page, before)
