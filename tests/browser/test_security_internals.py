"""Internals out of page script's reach (issue 19; README "Security model").

2. Brands are not forgeable and the runtime offered to same-origin frames hands out
   nothing Python: the issue's reproducers (registered-symbol brands, the runtime's
   boot()) and what a page could try with the port that replaced them.
9. Built-ins replaced after the polyfill loaded (throwing replacements, so any use
   shows) neither break the shim nor are handed a Python object.
10. Another origin's frame posting what Pyodide's own message listeners react to
   causes no uncaught error; the page's listeners still see every message.
13. A removed iframe's contexts are lost; the parent-shared runtime keeps running.
14. A Float16Array inside a record (MLModel.compute()'s inputs) works.
Expected values are hand-computed."""
import pytest

from . import PAGES, lacks, page_facts


@pytest.fixture(scope="module")
def internals(browser):
    from webnn_py.serve import PolyfillServer

    with PolyfillServer(root=PAGES) as server, browser.new_page() as page:
        page.goto(f"{server.url}/security_internals.html")
        page.evaluate("window.securityReady")
        yield page, browser


def test_brands_cannot_be_forged_and_nothing_python_is_reachable(internals):
    page, _ = internals
    facts = page.evaluate("forgery()")
    assert page.errors == []
    # The reproducers: registered-symbol brands are gone, forging them does nothing.
    assert facts["mlImpl"] == "undefined"
    assert facts["ownKeys"] == [0, 0, 0]                   # wrappers carry no own properties at all
    assert facts["forgedCreateContext"] == "TypeError"
    assert facts["forgedContext"] == "TypeError"
    # self[Symbol.for("webnn-py runtime")]: no boot(), only what same-origin frames need.
    assert facts["runtimeBoot"] == "undefined"
    assert facts["runtimeKeys"] == ["connect", "pyodideURL"]
    # Its port: API calls on branded wrappers, members named by the IDL, nothing else.
    assert facts["portKeys"] == ["boot", "construct", "describeError", "detach", "forward", "get", "invoke"]
    assert facts["portBoot"] == "undefined"                # resolves with undefined, not the bridge
    for key in ["portForged", "portPrivateMember", "portPrivateAttribute", "portWrongInterface",
                "portConstructExisting", "portConstructML", "portAfterExtending"]:
        assert facts[key] == "TypeError", (key, facts)
    assert facts["portDescribe"] == {"name": "TypeError", "message": "x"}
    assert facts["metadata"] == "TypeError"                # the IDL metadata is frozen
    assert facts["policyHook"] is True


def test_replaced_builtins_neither_break_the_shim_nor_see_python_objects(internals):
    page, _ = internals
    facts = page.evaluate("replacedBuiltins()")
    assert facts["outcome"] == {"values": [11, 22, 3.5], "mismatch": "InvalidStateError", "brand": "TypeError",
                                "lost": "function"}, facts
    # Only the delegating replacements may have been called (the page's own awaits and
    # WebIDL's sequence conversion call @@iterator natively too); no throwing one was.
    called = set(facts["calls"])
    assert called <= {"Promise.prototype.then", "Function.prototype.call", "Function.prototype.bind",
                      "Array.prototype[Symbol.iterator]"}, facts["calls"]
    assert facts["pyProxiesSeen"] == 0
    assert page.errors == []


def test_replaced_promise_and_post_task_see_no_python_objects(internals):
    page, _ = internals
    facts = page.evaluate("replacedConstructors()")
    assert facts["outcome"]["values"] == [11, 22, 3.5], facts
    assert facts["pyProxiesSeen"] == 0
    assert page.errors == []


def test_float16array_inside_a_record(internals, tmp_path):
    page, _ = internals
    xml = _relu_f16_ir(tmp_path)
    facts = page.evaluate(f"float16InRecords({xml!r})")
    if facts["float16Array"] == "undefined":
        pytest.skip(lacks(internals[1], "Float16Array"))
    # relu of the float16 values [-1.5, 2, -0, 65504], converted to float32 (exact)
    assert facts["values"] == [0, 2, 0, 65504]
    assert facts["dimensions"] == [4]
    assert facts["getterReads"] == 1                        # read once, by the conversion
    assert facts["again"] == [3, 0, 0.5, 0]
    assert page.errors == []


def _relu_f16_ir(directory) -> str:
    """float32(relu(x)), x: f16[4], as OpenVINO IR text (made by OpenVINO itself)."""
    ov = pytest.importorskip("openvino")
    from openvino import opset13 as ops

    x = ops.parameter([4], ov.Type.f16, name="x")
    model = ov.Model([ops.convert(ops.relu(x), ov.Type.f32)], [x], "relu")
    ov.save_model(model, directory / "relu.xml", compress_to_fp16=False)
    return (directory / "relu.xml").read_text()


def test_message_noise_from_another_origin(browser):
    facts = page_facts("security_messages.html", "window.messageFacts", browser)   # no uncaught error
    assert sorted(facts["received"]) == sorted(facts["noise"])     # the page's own listener saw them all
    assert facts["values"] == [20, 21, 18, 20.5]


def test_a_removed_frames_contexts_are_lost(browser):
    facts = page_facts("security_frames.html", "window.removedFrameFacts", browser)   # no uncaught error
    assert facts["before"] == [2, 4]                        # the frame's context worked
    assert facts["lost"] is True                            # context.lost resolved after removal
    assert facts["createTensorAfter"] == "InvalidStateError"
    assert facts["dispatchAfter"] == "InvalidStateError"
    assert facts["createContextAfter"] == "InvalidStateError"
    assert facts["parentStillComputes"] == [5, 7]           # the shared runtime keeps running
    assert facts["frameLoadedPyodide"] == "undefined"       # it was the parent's runtime


PROTOTYPE_SETTERS = """(async () => {
  const context = await navigator.ml.createContext();
  const b = new MLGraphBuilder(context);
  const x = b.input("x", {dataType: "float32", shape: [3, 1, 2]});
  const w = b.constant({dataType: "float32", shape: [1, 6, 2]}, new Float32Array(12).fill(0.1));
  const r = b.constant({dataType: "float32", shape: [1, 6, 2]}, new Float32Array(12).fill(0.2));
  const gru = await b.build({h: b.gru(x, w, r, 3, 2)[0]});
  const tx = await context.createTensor({dataType: "float32", shape: [3, 1, 2], writable: true});
  const th = await context.createTensor({dataType: "float32", shape: [1, 1, 2], readable: true});
  const run = async () => {
    context.writeTensor(tx, new Float32Array([1, -2, 3, 4, -5, 6]));
    context.dispatch(gru, {x: tx}, {h: th});
    return Array.from(new Float32Array(await context.readTensor(th)));
  };
  const before = await run();
  // Setters the page adds after the polyfill loaded: array indices, and keys Pyodide's glue
  // and the shim set on objects they make. Each records what it is handed.
  const seen = Object.create(null);
  let count = 0;
  const keys = "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 type message name dataType shape".split(" ");
  const own = (target, key, value) => Object.defineProperty(target, key, {value, writable: true, enumerable: true, configurable: true});
  for (const key of keys) {
    for (const proto of [Array.prototype, Object.prototype]) {
      if (proto === Array.prototype && !/^[0-9]/.test(key)) continue;
      Object.defineProperty(proto, key, {configurable: true, set(value) {
        seen[count++] = typeof value === "number" ? "a number" : `${typeof value}`;
        own(this, key, value);
      }});
    }
  }
  let outcome;
  try {
    const after = await run();
    const builder = new MLGraphBuilder(context);
    const relu = await builder.build({y: builder.relu(builder.input("q", {dataType: "float32", shape: [2]}))});
    const other = await navigator.ml.createContext();
    const tq = await context.createTensor({dataType: "float32", shape: [2], writable: true});
    const ty = await context.createTensor({dataType: "float32", shape: [2], readable: true});
    context.writeTensor(tq, new Float32Array([-1.5, 2.5]));
    context.dispatch(relu, {q: tq}, {y: ty});
    outcome = {after, relu: Array.from(new Float32Array(await context.readTensor(ty))),
               other: other instanceof MLContext, shape: relu === null ? null : th.shape};
  } catch (e) {
    outcome = {error: `${e.name}: ${e.message}`};
  } finally {
    for (const key of keys) { delete Array.prototype[key]; delete Object.prototype[key]; }
  }
  return {before, outcome, seen: Object.values(seen)};
})()"""


def test_prototype_setters_added_by_the_page_see_nothing_of_the_runtime(internals):
    """A setter the page puts on Array.prototype or Object.prototype after load is handed
    nothing while the API runs: before the fix, the index setters were handed PyProxies of
    MLContext and MLGraph, the task poster's bound method and a recurrent runner's wasm
    export, from the arrays Pyodide's glue builds with push()."""
    page, _ = internals
    facts = page.evaluate(PROTOTYPE_SETTERS)
    assert facts["seen"] == [], facts["seen"][:20]
    assert facts["outcome"] == {"after": facts["before"], "relu": [0, 2.5], "other": True, "shape": [1, 1, 2]}, facts
    assert page.errors == []


UNCONFIGURABLE_ADDITION = """(async () => {
  const context = await navigator.ml.createContext();
  const builder = new MLGraphBuilder(context);
  // A configurable setter the shim takes off for the call, then one it cannot.
  const handed = [];
  Object.defineProperty(Array.prototype, "3", {configurable: true, set(v) { handed[handed.length] = typeof v; }});
  Object.defineProperty(Array.prototype, "7", {configurable: false, set(v) { handed[handed.length] = typeof v; }});
  let refused;
  try {
    builder.input("x", {dataType: "float32", shape: [2]});
    refused = null;
  } catch (e) {
    refused = {name: e.name, message: e.message};
  }
  return {refused, handed: handed.length, kept: ["3", "7"].map((k) => {
    const d = Object.getOwnPropertyDescriptor(Array.prototype, k);
    return d === undefined ? null : {setter: typeof d.set, configurable: d.configurable};
  })};
})()"""


def test_an_unconfigurable_addition_refuses_the_call_and_leaves_the_rest_as_it_was(browser):
    """An addition the page made unconfigurable cannot be taken off for the call: the call
    throws a TypeError naming it instead of running beside it, and the additions already
    taken off are back. A page of its own: such a property stays for the page's lifetime."""
    from webnn_py.serve import PolyfillServer

    with PolyfillServer(root=PAGES) as server, browser.new_page() as page:
        page.goto(f"{server.url}/security_internals.html")
        page.evaluate("window.securityReady")
        facts = page.evaluate(UNCONFIGURABLE_ADDITION)
    assert facts["refused"]["name"] == "TypeError", facts
    assert '"7"' in facts["refused"]["message"] and "unconfigurable" in facts["refused"]["message"], facts
    assert facts["handed"] == 0, facts
    assert facts["kept"] == [{"setter": "function", "configurable": True},
                             {"setter": "function", "configurable": False}], facts
