"""[AllowShared] in a cross-origin isolated page, every engine (issue 15's leftover):
SharedArrayBuffers and views on them are taken where WebNN's IDL says
AllowSharedBufferSource (constant(), writeTensor(), readTensor()), and refused with a
TypeError where a buffer type lacks [AllowShared] (the Model Loader's load() modelBuffer
and weights, MLModelTensor.data). In WebKitGTK 2.50, which has no SharedArrayBuffer global
even in an isolated page although shared wasm memory hands out real SharedArrayBuffers,
the bindings recognise them by the prototype of such a memory's buffer. Expected values
are hand-computed."""
import base64

import numpy as np
import pytest

from . import PAGES

ISOLATION = {"Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp"}


def relu_model() -> bytes:
    """y = relu(x), float32 [4], written with LiteRT's schema classes."""
    from tests.loader.tflite_writer import ModelWriter

    w = ModelWriter()
    g = w.subgraph("main")
    x, y = g.tensor([4], np.float32, name="x"), g.tensor([4], np.float32, name="y")
    g.op("RELU", [x], [y])
    g.io([x], [y])
    return w.finish()


@pytest.fixture(scope="module")
def facts(browser):
    from webnn_py.serve import PolyfillServer

    model = base64.b64encode(relu_model()).decode("ascii")
    with PolyfillServer(root=PAGES, headers=ISOLATION) as server, browser.new_page() as page:
        page.goto(f"{server.url}/allow_shared.html")
        result = page.evaluate(f"allowShared({model!r})")
        assert page.errors == []
    return result


def test_the_page_is_isolated_with_shared_buffers(facts):
    assert facts["isolated"] is True
    assert facts["sabName"] == "SharedArrayBuffer" and facts["isShared"] == "[object SharedArrayBuffer]"


def test_shared_buffers_where_the_idl_allows_them(facts):
    assert facts["sharedViews"] == [11, 18, 33.5, 40.25]         # x + [10, 20, 30, 40]
    assert facts["sharedBuffer"] == [15, 26, 37, 48]


@pytest.mark.parametrize("case", ["loadSharedView", "loadSharedBuffer", "loadSharedWeights",
                                  "computeSharedInput", "computeSharedOutput"])
def test_type_error_where_allow_shared_is_absent(facts, case):
    outcome = facts[case]
    assert outcome.startswith("TypeError: ") and "SharedArrayBuffer" in outcome, (case, outcome)


def test_ordinary_buffers_still_work(facts):
    assert facts["computePlain"] == [0, 2, 0, 4]
