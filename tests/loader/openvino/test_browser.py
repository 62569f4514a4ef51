"""The IR importer in headless Chromium, Firefox and WebKit: Loop models and torch models converted
to IR loaded through navigator.ml's MLModelLoader (webnn_py on Pyodide) match
OpenVINO's CPU plugin on the host (the zero-iteration row: hand-computed); a
runaway loop rejects compute() with OperationError; an absurd constant shape
rejects load() with DataError."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from .helpers import openvino_run, save, to_webnn
from .test_loop import FORMS, build_loop, forms_model, sliced_model
from .test_ops import most_ops_model
from .test_ops_breadth import reduce_condition_loop

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

PAGES = Path(__file__).resolve().parents[1] / "pages"
ARRAY_TYPES = {np.dtype(np.float32): "Float32Array", np.dtype(np.int32): "Int32Array",
               np.dtype(np.uint8): "Uint8Array", np.dtype(np.int64): "BigInt64Array"}


@pytest.fixture(scope="module")
def page(browser, tmp_path_factory):
    from webnn_py.serve import PolyfillServer

    models = tmp_path_factory.mktemp("ir-models")
    with PolyfillServer(root=PAGES, mounts={"/models/": models}) as server, browser.new_page() as tab:
        tab.goto(f"{server.url}/openvino.html")
        tab.wait_for("window.openvinoRun !== undefined")
        yield tab, models
        assert not tab.errors, tab.errors


def run_in_page(tab, models: Path, name: str, model, feeds: dict) -> dict[str, np.ndarray]:
    """Save the model and its inputs where the page fetches them; load and
    compute it there; {output name: array} as the page got them."""
    save(model, models, name)
    inputs = []
    for key, value in feeds.items():
        value = to_webnn(value)
        (models / f"{name}.{key}.raw").write_bytes(np.ascontiguousarray(value).tobytes())
        inputs.append({"name": key, "dimensions": list(value.shape), "type": ARRAY_TYPES[value.dtype]})
    got = tab.evaluate(f"window.openvinoRun(...{json.dumps([name, inputs])})")
    by_type = {v: k for k, v in ARRAY_TYPES.items()}
    return {key: np.asarray(value["data"], by_type[value["type"]]).reshape(value["dimensions"])
            for key, value in got.items()}


def check_against_openvino(got: dict, model, feeds: dict) -> None:
    reference = openvino_run(model, feeds)
    assert len(got) == len(reference)
    for names, expected in reference.items():
        (name,) = [n for n in got if n in names]
        expected = to_webnn(expected)
        assert got[name].shape == expected.shape and got[name].dtype == expected.dtype, name
        if expected.dtype.kind == "f":
            np.testing.assert_allclose(got[name], expected, rtol=0, atol=1e-5)
        else:
            np.testing.assert_array_equal(got[name], expected)


def _torch(name):
    from .test_torch_models import converted
    _, model, feeds = converted(name)
    return model, feeds


def _sliced():
    x = (np.arange(18, dtype=np.float32).reshape(6, 3) / 7).astype(np.float32)
    return sliced_model(stride=2, trip=3), {"X": x, "A": np.ones((1, 3), np.float32)}


CASES = {
    **{f"{form}-{trip}-{cond}": (lambda f=form, t=trip, c=cond: forms_model(f, t, c))
       for form in FORMS for trip, cond in (("scalar-i64", "scalar"), ("1d-i32", "1d"))},
    "sliced-back-edge-current-iteration": _sliced,
    "most-ops-body": most_ops_model,
    "reduce-max-sum-condition": reduce_condition_loop,
    "torch-mobilenet-like": lambda: _torch("mobilenet-like"),
    "torch-transformer-encoder": lambda: _torch("transformer-encoder"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_loop_models_match_openvino_in_the_browser(page, case):
    tab, models = page
    model, feeds = CASES[case]()
    check_against_openvino(run_in_page(tab, models, case, model, feeds), model, feeds)


def test_zero_iterations_in_the_browser_hand_computed(page):
    """A false execution condition: the initial value and an empty concatenation
    (OpenVINO's CPU plugin fails here; the values follow Loop-5's text)."""
    tab, models = page
    model, feeds = forms_model("for-with-condition", "scalar-i64", "scalar")
    feeds = {**feeds, "go": np.zeros((), np.bool_), "init": np.array([9], np.int32)}
    got = sorted(run_in_page(tab, models, "zero", model, feeds).values(), key=lambda v: v.size)
    assert got[0].shape == (0,) and got[0].dtype == np.int32
    np.testing.assert_array_equal(got[1], [9])


def test_runaway_loop_rejects_with_operation_error_in_the_browser(page):
    tab, models = page
    acc = ops.parameter([1], np.float32, name="acc")
    r_acc = ops.result(ops.add(acc, ops.constant(np.array([1], np.float32))))
    r_cond = ops.result(ops.constant(True))
    body = ov.Model([r_acc, r_cond], [acc], "body")
    init = ops.parameter([1], np.float32, name="init")
    (last,) = build_loop(ops.constant(np.int64(-1)), ops.constant(True), body, merged=[(acc, init, r_acc)],
                         last=[r_acc], condition_result=r_cond)
    save(ov.Model([ops.result(last)], [init], "m"), models, "runaway")
    result = tab.evaluate("window.openvinoRunaway('runaway')")
    assert result["error"] is not None and result["error"]["name"] == "OperationError", result
    assert "maxIterations (200)" in result["error"]["message"]


def test_absurd_constant_shape_is_a_data_error_in_the_browser(page):
    """Issue 19, item 11: a Const of shape [2147483648, 2147483648, 0] makes
    load() reject with a DataError naming the layer (it was "internal error")."""
    from .test_cli_and_limits import _absurd_constant_ir
    tab, models = page
    (models / "absurd.xml").write_bytes(_absurd_constant_ir("2147483648,2147483648,0"))
    error = tab.evaluate("""(async () => {
        const context = await navigator.ml.createContext();
        const xml = await (await fetch('/models/absurd.xml')).arrayBuffer();
        try {
            await new MLModelLoader(context).load(xml, {weights: new Uint8Array(0)});
            return null;
        } catch (e) {
            return {name: e.name, message: e.message, isDOMException: e instanceof DOMException};
        }
    })()""")
    assert error is not None and error["name"] == "DataError" and error["isDOMException"], error
    assert "layer 0 'c' (Const): shape [2147483648, 2147483648, 0]" in error["message"]
