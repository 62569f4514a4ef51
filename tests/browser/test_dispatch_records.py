"""dispatch()'s records of tensors (MLNamedTensors) read in one crossing (issue 17, item 2;
the shim's tensor lane, readNamedTensors, or on the general path the bindings' "platformRecord"
helper with the shim's wrapperProxyOf), exactly as WebIDL's
record conversion reads them: values computed right, a getter's exception rethrown as the
same value, and nothing read after a value that is not an MLTensor (its conversion
fails there: a later getter must not run). Expected values are hand-computed. In every
engine of tests/browser/conftest.py.
"""
from .console_page import call, console_errors, mark, page, server  # noqa: F401 - fixtures

RECORDS = """async () => {
  const context = await navigator.ml.createContext();
  const desc = {dataType: "float32", shape: [2]};
  const gb = new MLGraphBuilder(context);
  const graph = await gb.build({c: gb.sub(gb.input("a", desc), gb.input("b", desc))});
  const [ta, tb, tc] = await Promise.all([
    context.createTensor({...desc, writable: true}), context.createTensor({...desc, writable: true}),
    context.createTensor({...desc, readable: true})]);
  context.writeTensor(ta, new Float32Array([5, 7]));
  context.writeTensor(tb, new Float32Array([1, 10]));
  const read = async () => Array.from(new Float32Array(await context.readTensor(tc)));
  const seen = [];
  const outcome = (f) => {
    try { f(); return "ok"; } catch (e) { return e; }
  };
  const facts = {};
  // Getters on the records run once each, in key order, and their values count.
  facts.getters = outcome(() => context.dispatch(graph, {get b() { seen.push("b"); return tb; },
                                                         get a() { seen.push("a"); return ta; }},
                                                 {get c() { seen.push("c"); return tc; }}));
  facts.gettersSeen = seen.splice(0);
  facts.values = await read();
  // A getter that throws: dispatch() throws that very value.
  const mine = {mine: true};
  facts.thrownIsMine = outcome(() => context.dispatch(graph, {a: ta, get b() { throw mine; }}, {c: tc})) === mine;
  // A value that is no MLTensor (a plain object, then another interface's wrapper): a
  // TypeError, and the getter of the key after it never runs.
  for (const [name, wrong] of [["object", {}], ["graph", graph]]) {
    const e = outcome(() => context.dispatch(graph, {a: wrong, get b() { seen.push(`after ${name}`); return tb; }},
                                             {c: tc}));
    facts[name] = e instanceof TypeError ? "TypeError" : String(e);
  }
  facts.afterWrong = seen.splice(0);
  // The outputs are those of the first dispatch: the failed ones changed nothing.
  facts.valuesAfter = await read();
  return facts;
}"""


def test_records_of_tensors_are_read_as_webidl_says(page):
    before = mark(page)
    facts = call(page, RECORDS)
    assert facts["getters"] == "ok"
    assert facts["gettersSeen"] == ["b", "a", "c"]          # own keys in creation order, one get each
    assert facts["values"] == [4, -3]                        # [5, 7] - [1, 10]
    assert facts["thrownIsMine"] is True
    assert facts["object"] == "TypeError" and facts["graph"] == "TypeError"
    assert facts["afterWrong"] == []
    assert facts["valuesAfter"] == [4, -3]
    assert not console_errors(page, before)
