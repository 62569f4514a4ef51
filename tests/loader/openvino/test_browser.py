"""The IR importer in headless Chromium: a Loop model loaded through
navigator.ml's MLModelLoader (webnn_py on Pyodide) matches OpenVINO's CPU
plugin on the host; a runaway loop rejects compute() with OperationError."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from .helpers import openvino_run, save
from .test_loop import build_loop, counter_body, sliced_model

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

PAGES = Path(__file__).resolve().parents[1] / "pages"


@pytest.fixture(scope="module")
def page(pyodide_runtime, tmp_path_factory):
    from webnn_py.serve import PolyfillServer
    from wpt_runner.chromium import launch_chromium

    models = tmp_path_factory.mktemp("ir-models")
    with PolyfillServer(root=PAGES, mounts={"/models/": models}) as server, launch_chromium() as browser:
        tab = browser.new_page()
        errors = []
        tab.on("pageerror", lambda e: errors.append(str(e)))
        tab.goto(f"{server.url}/openvino.html")
        tab.wait_for_function("window.openvinoRun !== undefined")
        yield tab, models
        assert not errors, errors


def test_loop_model_matches_openvino_in_chromium(page):
    tab, models = page
    model = sliced_model(stride=1, trip=6)
    save(model, models, "sliced")
    x = (np.arange(18, dtype=np.float32).reshape(6, 3) / 7).astype(np.float32)
    a = np.ones((1, 3), np.float32)
    (models / "sliced.X.raw").write_bytes(x.tobytes())
    (models / "sliced.A.raw").write_bytes(a.tobytes())
    got = tab.evaluate("([m, i]) => window.openvinoRun(m, i)",
                       ["sliced", [{"name": "X", "dimensions": [6, 3]}, {"name": "A", "dimensions": [1, 3]}]])
    reference = openvino_run(model, {"X": x, "A": a})
    assert len(got) == len(reference) == 2
    for names, expected in reference.items():
        (name,) = [n for n in got if n in names]
        assert got[name]["type"] == "Float32Array"
        assert got[name]["dimensions"] == list(expected.shape)
        ours = np.asarray(got[name]["data"], np.float32).reshape(expected.shape)
        np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-5)


def test_while_loop_with_run_time_concatenation_matches_openvino_in_chromium(page):
    """A while loop whose concatenated output's size the data decides: the
    counting run and the specialised graph, in Pyodide."""
    tab, models = page
    body, acc, it, limit, r_acc, r_y, r_cond = counter_body()
    init = ops.parameter([1], np.int32, name="init")
    lim = ops.parameter([1], np.int32, name="lim")
    last, ys = build_loop(ops.constant(np.int64(-1)), ops.constant(True), body, merged=[(acc, init, r_acc)],
                          invariant=[(limit, lim)], last=[r_acc], concat=[(r_y, 0)], current=1,
                          condition_result=r_cond)
    model = ov.Model([ops.result(last), ops.result(ys)], [init, lim], "m")
    save(model, models, "while")
    feeds = {"init": np.array([1], np.int32), "lim": np.array([300], np.int32)}
    for name, value in feeds.items():
        (models / f"while.{name}.raw").write_bytes(value.tobytes())
    got = tab.evaluate("([m, i]) => window.openvinoRun(m, i)",
                       ["while", [{"name": n, "dimensions": [1], "type": "Int32Array"} for n in feeds]])
    reference = openvino_run(model, feeds)
    for names, expected in reference.items():
        (name,) = [n for n in got if n in names]
        assert got[name]["type"] == "Int32Array" and got[name]["dimensions"] == list(expected.shape)
        np.testing.assert_array_equal(np.asarray(got[name]["data"], np.int32).reshape(expected.shape), expected)
    assert max(len(v["data"]) for v in got.values()) > 1


def test_runaway_loop_rejects_with_operation_error_in_chromium(page):
    tab, models = page
    acc = ops.parameter([1], np.float32, name="acc")
    r_acc = ops.result(ops.add(acc, ops.constant(np.array([1], np.float32))))
    r_cond = ops.result(ops.constant(True))
    body = ov.Model([r_acc, r_cond], [acc], "body")
    init = ops.parameter([1], np.float32, name="init")
    (last,) = build_loop(ops.constant(np.int64(-1)), ops.constant(True), body, merged=[(acc, init, r_acc)],
                         last=[r_acc], condition_result=r_cond)
    save(ov.Model([ops.result(last)], [init], "m"), models, "runaway")
    result = tab.evaluate("(m) => window.openvinoRunaway(m)", "runaway")
    assert result["error"] is not None and result["error"]["name"] == "OperationError", result
    assert "maxIterations (200)" in result["error"]["message"]
