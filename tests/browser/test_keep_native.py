"""keepNative: a native navigator.ml is kept only if it works (js_shim, keepNativeIfItWorks).

No working native WebNN exists here, so the working path uses a page-side stand-in
installed before the polyfill (pages/keep_native.html); Debian Chromium's flagged
native navigator.ml, whose createContext() rejects, is the real failing one.
"""
from pathlib import Path

import pytest

FLAG = "--enable-features=WebMachineLearningNeuralNetwork"
SUM = [11, 22, 3.5]          # [1, 2, 3] + [10, 20, 0.5]


@pytest.fixture(scope="module")
def open_page(pyodide_runtime):
    from webnn_py.serve import PolyfillServer
    from wpt_runner.chromium import launch_chromium

    with PolyfillServer(root=Path(__file__).parent / "pages") as server, launch_chromium([FLAG]) as browser:
        def facts(query):
            page = browser.new_page()
            try:
                page.goto(f"{server.url}/keep_native.html{query}")
                return page.evaluate("window.keepNativeFacts")
            finally:
                page.close()
        yield facts, browser, server


def test_a_working_native_implementation_is_kept(open_page):
    facts = open_page[0]("?fake=working")
    assert facts == {"decision": "native", "sameML": True, "contextIsFake": True, "contextTag": "[object Object]",
                     "sum": SUM, "fakeCreateContextCalls": 2}      # the probe's context, then the page's


@pytest.mark.parametrize("query", ["?fake=wrong", "?fake=hang&timeout=500"])
def test_a_native_implementation_that_computes_wrongly_or_hangs_is_replaced(open_page, query):
    facts = open_page[0](query)
    assert facts == {"decision": "polyfill", "sameML": False, "contextIsFake": False, "contextTag": "[object MLContext]",
                     "sum": SUM, "fakeCreateContextCalls": 1}      # only the probe asked the stand-in


def test_debian_chromiums_flagged_native_ml_is_replaced(open_page):
    _, browser, server = open_page
    page = browser.new_page()
    page.goto(f"{server.url}/no_polyfill.html")
    has_native = page.evaluate("'ml' in navigator")
    page.close()
    if not has_native:
        pytest.skip("this Chromium build exposes no native navigator.ml even with the flag")
    facts = open_page[0]("")
    assert facts == {"decision": "polyfill", "sameML": False, "contextIsFake": False, "contextTag": "[object MLContext]",
                     "sum": SUM, "fakeCreateContextCalls": 0}
