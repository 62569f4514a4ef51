"""Debian's Chromium with its WebNN flag exposes a native navigator.ml whose
createContext() rejects (DESIGN.md §3); the polyfill replaces it."""
from pathlib import Path

import pytest

FLAG = "--enable-features=WebMachineLearningNeuralNetwork"
CREATE = """async () => {
  try {
    const context = await navigator.ml.createContext();
    return {ok: true, tag: Object.prototype.toString.call(context)};
  } catch (e) {
    return {ok: false, name: e.name};
  }
}"""


@pytest.fixture(scope="module")
def pages(pyodide_runtime):
    from webnn_py.serve import PolyfillServer
    from browsers.chromium import launch_chromium

    with PolyfillServer(root=Path(__file__).parent / "pages") as server, launch_chromium([FLAG]) as browser:
        native, polyfilled = browser.new_page(), browser.new_page()
        native.goto(f"{server.url}/no_polyfill.html")
        polyfilled.goto(f"{server.url}/slice.html")
        yield native, polyfilled


def test_native_navigator_ml_cannot_create_a_context(pages):
    native, _ = pages
    if not native.evaluate("'ml' in navigator"):
        pytest.skip("this Chromium build exposes no native navigator.ml even with the flag")
    assert native.evaluate(CREATE) == {"ok": False, "name": "NotSupportedError"}


def test_polyfill_replaces_the_unusable_native_one(pages):
    _, polyfilled = pages
    assert polyfilled.evaluate(CREATE) == {"ok": True, "tag": "[object MLContext]"}
    facts = polyfilled.evaluate("window.sliceFacts")
    assert facts["sum"] == [11, 22, 33, 14, 25, 36]
