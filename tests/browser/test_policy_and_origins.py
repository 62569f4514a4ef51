"""[SecureContext] and the "webnn" permissions policy (§7.5) in a real browser."""
from pathlib import Path

import pytest

PAGES = Path(__file__).parent / "pages"


@pytest.fixture(scope="module")
def server(pyodide_runtime):
    from webnn_py.serve import PolyfillServer

    # 0.0.0.0 is not needed: both names below resolve to loopback.
    with PolyfillServer(root=PAGES) as server:
        yield server


def test_non_secure_origin_has_no_navigator_ml(server):
    from wpt_runner.chromium import launch_chromium

    # http://name.test is not a potentially trustworthy origin, unlike 127.0.0.1.
    with launch_chromium(["--host-resolver-rules=MAP *.test 127.0.0.1"]) as browser:
        page = browser.new_page()
        page.goto(f"http://webnn.test:{server.port}/slice.html")
        facts = page.evaluate("({secure: isSecureContext, ml: 'ml' in navigator, MLContext: typeof MLContext,"
                              " ML: typeof ML})")
    assert facts == {"secure": False, "ml": False, "MLContext": "undefined", "ML": "undefined"}


def test_cross_origin_frames_follow_the_allow_attribute(server):
    from wpt_runner.chromium import launch_chromium

    with launch_chromium() as browser:
        page = browser.new_page()
        page.goto(f"{server.url}/policy_top.html")
        answers = page.evaluate("window.policyResult")
    assert answers["noAllow"]["ok"] is False and answers["noAllow"]["name"] == "SecurityError"
    assert answers["allowNone"]["ok"] is False and answers["allowNone"]["name"] == "SecurityError"
    assert answers["allowWebnn"] == {"ok": True, "context": "[object MLContext]"}
    assert answers["allowStar"] == {"ok": True, "context": "[object MLContext]"}
