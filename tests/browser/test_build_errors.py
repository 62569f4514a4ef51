"""§8.9.4 build() step 18.2 from real page script: converting a graph into something
this platform can run fails, and build() rejects with an OperationError.

The real trigger in Pyodide is memory: wasm32 gives one 4 GiB linear memory for
everything, and a graph whose dispatch needs more (here three 1.6 GB outputs of
expand(), each within maxTensorByteLength) can never run there; build() says so
instead of every dispatch failing later. On a 64-bit host the same graph builds.
In Chromium, Firefox and WebKit (all three give wasm32 its whole 4 GiB:
test_engine_features.py)."""
import json

import pytest

from . import PAGES

ELEMENTS = 400_000_000          # float32: 1.6e9 bytes per output, 4.8e9 bytes in all

BUILD = """(async (elements) => {
  const context = await navigator.ml.createContext();
  const builder = new MLGraphBuilder(context);
  const x = builder.input("x", {dataType: "float32", shape: [1]});
  const outputs = {};
  for (const name of ["a", "b", "c"]) outputs[name] = builder.expand(x, [elements], {label: name});
  try {
    await builder.build(outputs);
    return {ok: true};
  } catch (e) {
    return {ok: false, name: e.name, isDOMException: e instanceof DOMException, message: e.message};
  }
})(%s)"""

SMALL = """(async () => {
  // The context and the runtime are fine afterwards: a small graph still runs.
  const context = await navigator.ml.createContext();
  const builder = new MLGraphBuilder(context);
  const x = builder.input("x", {dataType: "float32", shape: [2]});
  const graph = await builder.build({y: builder.expand(x, [2, 2])});
  const tx = await context.createTensor({dataType: "float32", shape: [2], writable: true});
  const ty = await context.createTensor({dataType: "float32", shape: [2, 2], readable: true});
  context.writeTensor(tx, new Float32Array([1.5, -3]));
  context.dispatch(graph, {x: tx}, {y: ty});
  return Array.from(new Float32Array(await context.readTensor(ty)));
})()"""


@pytest.fixture(scope="module")
def page(browser):
    from webnn_py.serve import PolyfillServer

    with PolyfillServer(root=PAGES) as server, browser.new_page() as page:
        page.goto(f"{server.url}/slice.html")
        page.evaluate("window.sliceFacts")
        yield page
        assert not page.errors, page.errors


def test_build_rejects_a_graph_that_cannot_fit_in_wasm32_memory(page):
    outcome = page.evaluate(BUILD % json.dumps(ELEMENTS))
    assert outcome["ok"] is False, outcome
    assert outcome["name"] == "OperationError" and outcome["isDOMException"] is True
    assert "build: compiling the graph failed" in outcome["message"]
    assert "4,294,967,296-byte wasm32 address space" in outcome["message"]
    # The input tensor (4 bytes), the three output tensors and the three results that
    # are copied into them (1.6e9 bytes each): 4 + 6 * 1.6e9.
    assert "needs at least 9,600,000,004 bytes" in outcome["message"]
    assert page.evaluate(SMALL) == [1.5, -3, 1.5, -3]


def test_the_same_graph_builds_on_a_64_bit_host():
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    import webnn_py

    async def build():
        context = await webnn_py.ml.createContext()
        builder = webnn_py.MLGraphBuilder(context)
        x = builder.input("x", {"dataType": "float32", "shape": [1]})
        graph = await builder.build({name: builder.expand(x, [ELEMENTS]) for name in "abc"})
        return graph._output_descriptors["a"].byte_length

    # In a thread of its own: Playwright's sync API (Chromium) may keep an event loop in this one.
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(asyncio.run, build()).result() == 4 * ELEMENTS


def test_memory_lower_bound_counts_tensors_constants_and_intermediates_alive_at_once():
    from types import SimpleNamespace as NS

    import numpy as np

    from webnn_py.api.context import _dispatch_memory_lower_bound

    def step(inputs, output, size):
        return NS(input_slots=inputs, output_slots=(output,), output_descriptors=(NS(byte_length=size),))

    plan = NS(input_slots={"x": 0}, constants={1: np.zeros(50, np.uint8)}, output_slots={"y": 4},
              steps=[step((0, 1), 2, 200), step((2,), 3, 300), step((2, 3), 4, 400),
                     step((0,), 5, 1000)])          # a result nobody reads: alive only while it is made
    graph = NS(_input_descriptors={"x": NS(byte_length=100)}, _output_descriptors={"y": NS(byte_length=400)})
    # Tensors 100 + 400, constant 50: 550. Then +200 (750), +300 (1050), +400 (1450), slots 2
    # and 3 die after their last reader (950), +1000 (1950), which dies at once (950).
    assert _dispatch_memory_lower_bound(plan, graph) == 1950
