"""WebIDL conversions from real page script (issue 19, items 5 and 6).

5. What page code throws while a WebNN method converts its arguments -- a dictionary
   getter, a Proxy trap, an iterator, valueOf/toString -- is rethrown as the same value
   (WebIDL's "?"): a synchronous method throws it, a promise method rejects with it; no
   "internal error", nothing on the console.
6. A BigInt where an integer or floating-point type is expected (`shape: [2n, 3n]`) is a
   TypeError (WebIDL ConvertToInt / ToNumber); `bigint` unions (MLNumber) still take one.
In every engine of tests/browser/conftest.py.
"""
from .console_page import call, console_errors, mark, page, server  # noqa: F401 - fixtures

# Each case runs `call(thrower)` where `thrower` throws `thrown`; returns whether the
# exception caught (or the rejection) is the very value thrown.
IDENTITY = """async () => {
  const context = await navigator.ml.createContext();
  const b = new MLGraphBuilder(context);
  const x = b.input("x", {dataType: "float32", shape: [2]});
  const gb = new MLGraphBuilder(context);
  const graph = await gb.build({y: gb.abs(gb.input("x", {dataType: "float32", shape: [2]}))});
  const values = {
    error: () => new Error("mine"), domException: () => new DOMException("mine", "DataError"),
    typeError: () => new TypeError("mine"), number: () => 42, string: () => "mine",
    object: () => ({mine: true}), undefined: () => undefined, nullValue: () => null,
  };
  const cases = {
    // synchronous methods
    "input: descriptor getter": (t) => b.input("a", {get dataType() { throw t; }, shape: [1]}),
    "input: Proxy get trap": (t) => b.input("a", new Proxy({}, {get() { throw t; }})),
    "input: shape iterator": (t) => b.input("a", {dataType: "float32",
        shape: {[Symbol.iterator]() { return {next() { throw t; }}; }}}),
    "input: shape @@iterator getter": (t) => b.input("a", {dataType: "float32",
        shape: {get [Symbol.iterator]() { throw t; }}}),
    "input: shape item valueOf": (t) => b.input("a", {dataType: "float32", shape: [{valueOf() { throw t; }}]}),
    "input: name toString": (t) => b.input({toString() { throw t; }}, {dataType: "float32", shape: [1]}),
    "transpose: options getter": (t) => b.transpose(x, {get permutation() { throw t; }}),
    "split: splits union @@iterator": (t) => b.split(x, {get [Symbol.iterator]() { throw t; }}),
    "constant: MLNumber valueOf": (t) => b.constant("float32", {valueOf() { throw t; }}),
    "dispatch: record ownKeys trap": (t) => context.dispatch(graph, new Proxy({}, {ownKeys() { throw t; }}), {}),
    // promise methods reject with it
    "createTensor: descriptor getter": (t) => context.createTensor({get dataType() { throw t; }, shape: [1]}),
    "build: outputs ownKeys trap": (t) => b.build(new Proxy({}, {ownKeys() { throw t; }})),
    "build: outputs getter": (t) => b.build({get y() { throw t; }}),
  };
  const out = {};
  for (const [name, call] of Object.entries(cases)) {
    for (const [kind, make] of Object.entries(values)) {
      const thrown = make();
      let outcome;
      try {
        const result = call(thrown);
        if (result instanceof Promise) {
          outcome = await result.then(() => "resolved", (e) => (Object.is(e, thrown) ? "rejected with it"
                                                                : `rejected with ${e && e.name}: ${e && e.message}`));
        } else {
          outcome = "returned";
        }
      } catch (e) {
        outcome = Object.is(e, thrown) ? "threw it" : `threw ${e && e.name}: ${e && e.message}`;
      }
      out[`${name} / ${kind}`] = outcome;
    }
  }
  return out;
}"""

BIGINT = """async () => {
  const context = await navigator.ml.createContext();
  const b = new MLGraphBuilder(context);
  const x = b.input("x", {dataType: "float32", shape: [2, 3]});
  const outcome = (f) => {
    try {
      const r = f();
      return r instanceof Promise ? "promise" : "ok";
    } catch (e) {
      return `${e.name}: ${e.message}`;
    }
  };
  const rejection = async (f) => f().then(() => "ok", (e) => `${e.name}: ${e.message}`);
  return {
    shape: outcome(() => b.input("a", {dataType: "float32", shape: [2n, 3n]})),
    shapeNumbers: outcome(() => b.input("a", {dataType: "float32", shape: [2, 3]})),
    splitsArgument: outcome(() => b.split(x, 2n, {axis: 1})),
    axisOption: outcome(() => b.split(x, 2, {axis: 1n})),
    reshapeItem: outcome(() => b.reshape(x, [6n])),
    createTensorShape: await rejection(() => context.createTensor({dataType: "float32", shape: [1n]})),
    // MLNumber is (bigint or unrestricted double): a BigInt is fine there.
    constantBigInt: outcome(() => b.constant("int64", 5n)),
    clampBigInt: outcome(() => b.clamp(x, {minValue: 0n})),
  };
}"""


def test_exceptions_thrown_by_page_code_are_rethrown_as_the_same_value(page):
    before = mark(page)
    outcomes = call(page, IDENTITY)
    wrong = {case: outcome for case, outcome in outcomes.items()
             if outcome not in ("threw it", "rejected with it")}
    assert not wrong, wrong
    promise_cases = [case for case in outcomes if case.startswith(("createTensor", "build"))]
    assert promise_cases and all(outcomes[c] == "rejected with it" for c in promise_cases)
    assert len(outcomes) == 13 * 8
    # No "internal error", no traceback: the console stays quiet.
    errors = console_errors(page, before)
    assert not errors, errors


def test_bigints_are_type_errors_where_webidl_expects_a_number(page):
    facts = call(page, BIGINT)
    for key in ("shape", "splitsArgument", "axisOption", "reshapeItem", "createTensorShape"):
        assert facts[key].startswith("TypeError: "), (key, facts[key])
        assert "BigInt" in facts[key], (key, facts[key])
    assert "member 'shape'" in facts["shape"] and "2n" in facts["shape"]
    assert facts["shapeNumbers"] == "ok"
    assert facts["constantBigInt"] == "ok" and facts["clampBigInt"] == "ok"
