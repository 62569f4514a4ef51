"""[SecureContext] and the "webnn" permissions policy (§7.5) in every engine."""
from pathlib import Path

import pytest

import browsers

from .conftest import require

PAGES = Path(__file__).parent / "pages"


@pytest.fixture(scope="module")
def server(pyodide_runtime):
    from webnn_py.serve import PolyfillServer

    # 0.0.0.0 is not needed: both names below resolve to loopback.
    with PolyfillServer(root=PAGES) as server:
        yield server


FACTS = ("({secure: isSecureContext, ml: 'ml' in navigator, MLContext: typeof MLContext,"
         " ML: typeof ML, origin: location.origin})")


def test_non_secure_origin_has_no_navigator_ml(server, engine):
    require(engine)
    # http://name.test is not a potentially trustworthy origin, unlike 127.0.0.1.
    with browsers.launch(engine, loopback_names=("webnn.test",)) as browser, browser.new_page() as page:
        page.goto(f"http://webnn.test:{server.port}/slice.html")
        facts = page.evaluate(FACTS)
        assert facts == {"secure": False, "ml": False, "MLContext": "undefined", "ML": "undefined",
                         "origin": f"http://webnn.test:{server.port}"}
        page.goto(f"{server.url}/slice.html")      # loopback itself still loads, and is secure
        assert page.evaluate(FACTS) == {"secure": True, "ml": True, "MLContext": "function",
                                        "ML": "function", "origin": server.url}


def test_browsers_with_loopback_names_start_every_time(server, engine, monkeypatch):
    """A reproducer: WebKitWebDriver given a proxy with a "noProxy" list started a
    MiniBrowser that segfaulted at start-up about once in seven launches under load,
    and the driver then waited for it forever (a CI run failed on it). The other
    engines resolve the names themselves: one launch each is enough there."""
    require(engine)
    monkeypatch.setattr("browsers.webkit.SESSION_ATTEMPTS", 1)    # its retry would hide the crash
    for _ in range(8 if engine == "webkit" else 1):
        with browsers.launch(engine, loopback_names=("webnn.test",)) as browser, browser.new_page() as page:
            page.goto(f"http://webnn.test:{server.port}/slice.html")
            assert page.evaluate("location.host") == f"webnn.test:{server.port}"


def test_cross_origin_frames_follow_the_allow_attribute(server, browser):
    with browser.new_page() as page:
        page.goto(f"{server.url}/policy_top.html")
        answers = page.evaluate("window.policyResult")
    assert answers["noAllow"]["ok"] is False and answers["noAllow"]["name"] == "SecurityError"
    assert answers["allowNone"]["ok"] is False and answers["allowNone"]["name"] == "SecurityError"
    assert answers["allowWebnn"] == {"ok": True, "context": "[object MLContext]"}
    assert answers["allowStar"] == {"ok": True, "context": "[object MLContext]"}
