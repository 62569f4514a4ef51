"""keepNative: a native navigator.ml is kept only if it works (js_shim, keepNativeIfItWorks).

No working native WebNN exists here, so the working path uses a page-side stand-in
installed before the polyfill (pages/keep_native.html); Debian Chromium's flagged
native navigator.ml, whose createContext() rejects, is the real failing one.
In Chromium, Firefox and WebKit; the last test needs a native navigator.ml, which
only Chromium has (behind its flag).
"""
import pytest

import browsers

from . import PAGES, lacks
from .conftest import require

FLAG = "--enable-features=WebMachineLearningNeuralNetwork"
SUM = [11, 22, 3.5]          # [1, 2, 3] + [10, 20, 0.5]


@pytest.fixture(scope="module")
def open_page(engine, pyodide_runtime):
    """facts(query): keep_native.html's facts in a fresh tab of one browser for the
    module (Chromium with its WebNN flag); yields (facts, browser, server)."""
    from webnn_py.serve import PolyfillServer

    require(engine)
    flags = (FLAG,) if engine == "chromium" else ()
    with PolyfillServer(root=PAGES) as server, browsers.launch(engine, extra_args=flags) as browser:
        def facts(query):
            with browser.new_page() as page:
                page.goto(f"{server.url}/keep_native.html{query}")
                result = page.evaluate("window.keepNativeFacts")
                assert not page.errors, page.errors
                return result
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


def test_a_browser_without_native_ml_gets_the_polyfill(open_page):
    """No stand-in: whatever navigator.ml the browser has (none, or Debian Chromium's
    flagged one, whose createContext() rejects) gives way to the polyfill."""
    facts = open_page[0]("")
    assert facts == {"decision": "polyfill", "sameML": False, "contextIsFake": False, "contextTag": "[object MLContext]",
                     "sum": SUM, "fakeCreateContextCalls": 0}


def test_debian_chromiums_flagged_native_ml_is_replaced(open_page):
    _, browser, server = open_page
    with browser.new_page() as page:
        page.goto(f"{server.url}/no_polyfill.html")
        has_native = page.evaluate("'ml' in navigator")
    if not has_native:
        pytest.skip(lacks(browser, "native navigator.ml (WebNN), not even behind a flag"))
    assert open_page[0]("")["decision"] == "polyfill"
