"""Out of memory in the browser (issue 19, item 7): wasm32 gives Pyodide one 4 GiB memory
for everything, so a page can really exhaust it. The failures are WebNN's errors with a
clear message (an "UnknownError" DOMException: base.errors.out_of_memory says why), no
"internal error" and no traceback on the console, and afterwards the heap is usable:
freed memory is reused (WebAssembly memory never shrinks, so "given back" means to
Pyodide's allocator) and a normal graph computes. In Chromium (the heaviest test of the
suite in memory: ~5 GB of wasm and JS buffers for a moment).
"""
from .console_page import call, chromium_page, console_errors, mark, server  # noqa: F401 - fixtures
from .test_build_errors import SMALL            # a small graph that must still compute

ELEMENTS = 400_000_000          # float32: 1.6e9 bytes

WRITES = """async (elements) => {
  const context = await navigator.ml.createContext();
  const desc = {dataType: "float32", shape: [elements]};
  const tensor = await context.createTensor({...desc, writable: true, readable: true});
  const data = new Float32Array(elements);
  data[0] = 3; data[elements - 1] = 5;
  // A build() queued ahead keeps the writes queued behind it (an idle timeline would apply
  // each write at once, in this task, and free the previous data).
  const builder = new MLGraphBuilder(context);
  const building = builder.build({y: builder.relu(builder.input("x", {dataType: "float32", shape: [1]}))});
  const outcomes = [];
  for (let i = 0; i < 3; i++) {       // each write copies 1.6e9 bytes until the timeline runs
    try {
      context.writeTensor(tensor, data);
      outcomes.push("ok");
    } catch (e) {
      outcomes.push({name: e.name, isDOMException: e instanceof DOMException, message: e.message});
    }
  }
  // The writes that were accepted are applied; the tensor holds the data.
  (await building).destroy();
  const back = new Float32Array(await context.readTensor(tensor));
  const result = {outcomes, first: back[0], last: back[elements - 1]};
  tensor.destroy();
  return result;
}"""

CONSTANT = """async (elements) => {
  const context = await navigator.ml.createContext();
  const builder = new MLGraphBuilder(context);
  const desc = {dataType: "float32", shape: [elements]};
  const data = new Float32Array(elements);
  const outcomes = [];
  for (let i = 0; i < 3; i++) {       // the builder keeps each constant's copy
    try {
      builder.constant(desc, data);
      outcomes.push("ok");
    } catch (e) {
      outcomes.push({name: e.name, isDOMException: e instanceof DOMException, message: e.message});
    }
  }
  return outcomes;
}"""

def _assert_out_of_memory(outcome, operation):
    assert isinstance(outcome, dict), outcome
    assert outcome["name"] == "UnknownError" and outcome["isDOMException"], outcome
    assert outcome["message"].startswith(f"{operation}: out of memory: "), outcome
    assert "1,600,000,000 bytes" in outcome["message"] and "internal error" not in outcome["message"], outcome


def test_writes_beyond_wasm32_memory_fail_with_unknown_error_and_the_heap_stays_usable(chromium_page):
    since = mark(chromium_page)
    result = call(chromium_page, WRITES, ELEMENTS)
    outcomes = result["outcomes"]
    assert outcomes[0] == "ok", outcomes
    failed = [o for o in outcomes if o != "ok"]
    assert failed, outcomes                        # 1.6e9 (tensor) + 3 x 1.6e9 (copies) > 4 GiB
    for outcome in failed:
        _assert_out_of_memory(outcome, "writeTensor")
    assert result["first"] == 3 and result["last"] == 5
    assert not console_errors(chromium_page, since)
    # The tensor and its copies are freed: the allocator hands the memory out again.
    result = call(chromium_page, WRITES, ELEMENTS)
    assert result["outcomes"][0] == "ok" and result["first"] == 3, result
    assert chromium_page.evaluate(SMALL) == [1.5, -3, 1.5, -3]
    assert not console_errors(chromium_page, since)


def test_constants_beyond_wasm32_memory_fail_with_unknown_error(chromium_page):
    since = mark(chromium_page)
    outcomes = call(chromium_page, CONSTANT, ELEMENTS)
    assert outcomes[0] == "ok", outcomes
    failed = [o for o in outcomes if o != "ok"]
    assert failed, outcomes
    for outcome in failed:
        _assert_out_of_memory(outcome, "constant")
    assert chromium_page.evaluate(SMALL) == [1.5, -3, 1.5, -3]
    assert not console_errors(chromium_page, since)
