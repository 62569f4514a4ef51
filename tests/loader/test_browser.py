"""Issue 6's check in headless Chromium, Firefox and WebKit: the real models through
navigator.ml's MLModelLoader (webnn_py on Pyodide) match LiteRT on the host within
1e-4 of each output's magnitude; and the API's forms and errors as a page sees them."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from .helpers import astronaut, litert_run, relative_error

TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def page(browser, models_dir, tmp_path_factory):
    from webnn_py.serve import PolyfillServer

    data_dir = tmp_path_factory.mktemp("loader-inputs")
    with PolyfillServer(root=Path(__file__).parent / "pages",
                        mounts={"/models/": models_dir, "/data/": data_dir}) as server, browser.new_page() as tab:
        tab.goto(f"{server.url}/loader.html")
        tab.wait_for("window.loaderRun !== undefined")
        yield tab, data_dir
        # With the console's errors beside them: where Pyodide reports a fatal error.
        assert not tab.errors, (tab.errors, [m.text for m in tab.console if m.level == "error"])


def test_real_models_match_litert_in_the_browser(page, models_dir):
    tab, data_dir = page
    inputs = {
        "selfie_segmentation.tflite": ("input_1", astronaut(256, 0.0, 1.0)),
        "face_detection_short_range.tflite": ("input", astronaut(128, -1.0, 1.0)),
    }
    cases = []
    for model, (_, x) in inputs.items():
        (data_dir / f"{model}.bin").write_bytes(x.tobytes())
        cases.append({"model": model, "input": f"{model}.bin"})
    results = tab.evaluate(f"window.loaderRun({json.dumps(cases)})")
    for model, (name, x) in inputs.items():
        reference = litert_run((models_dir / model).read_bytes(), {name: x})
        got = results[model]["values"]
        assert sorted(got) == sorted(reference)
        for output, expected in reference.items():
            assert got[output]["type"] == "Float32Array"
            assert got[output]["dimensions"] == list(expected.shape)
            ours = np.asarray(got[output]["data"], np.float32).reshape(expected.shape)
            error = relative_error(ours, expected)
            assert error <= TOLERANCE, f"{model} output {output}: relative error {error:.3g}"


def test_api_as_a_page_sees_it(page):
    tab, _ = page
    facts = tab.evaluate("window.loaderFacts()")
    assert facts["interfaces"] == ["function", "function"]
    assert facts["modelTag"] == "[object MLModel]" and facts["isMLModel"]
    assert facts["inPlaceResult"] == "undefined" and facts["inPlaceMatches"]
    assert facts["outputType"] == "Float32Array"
    assert facts["badBytes"] == "DataError"
    assert facts["wrongDims"] == "TypeError"
    assert facts["wrongType"] == "TypeError"
    assert facts["notAContext"] == "TypeError"
    assert facts["illegal"] == "Illegal constructor"


def test_loader_in_a_dedicated_worker_matches_the_window(page):
    tab, _ = page
    result = tab.evaluate("window.loaderWorkerAndWindow()")
    assert result["worker"]["ok"], result["worker"].get("error")
    assert result["worker"]["global"] == "DedicatedWorkerGlobalScope"
    assert result["worker"]["dimensions"] == result["window"]["dimensions"]
    assert result["worker"]["data"] == result["window"]["data"]


def test_streaming_model_and_reset_state_in_the_browser(page):
    """A stateful model (resource variables, CALL_ONCE) frame after frame in a page,
    resetState() after the fifth frame: LiteRT's invocations, a fresh interpreter after the reset."""
    from .test_state import litert_stream, streaming_model
    tab, data_dir = page
    model = streaming_model()
    (data_dir / "streaming.tflite").write_bytes(model)
    rng = np.random.default_rng(5)
    frames = [{"x": rng.uniform(-1, 1, (1, 4)).astype(np.float32)} for _ in range(10)]
    arguments = json.dumps(["streaming.tflite", [f["x"].reshape(-1).tolist() for f in frames], 5])
    result = tab.evaluate(f"window.loaderStream(...{arguments})")
    assert result["resetType"] == "function" and result["resetResult"] == "undefined"
    reference = litert_stream(model, frames[:5]) + litert_stream(model, frames[5:])
    for step, (ours, expected) in enumerate(zip(result["outputs"], reference)):
        np.testing.assert_allclose(np.asarray(ours, np.float32).reshape(1, 4), expected["y"], rtol=1e-5, atol=1e-6,
                                   err_msg=f"frame {step}")
