"""WPT's idlharness.js (from npm wpt-runner) checks the polyfill's WebIDL surface
against idl/webnn.idl, in a window and in a dedicated worker, in every engine."""
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
PASS = 0  # testharness.js's PASS status


@pytest.fixture(scope="module")
def server(pyodide_runtime):
    from webnn_py.serve import PolyfillServer

    mounts = {"/resources/": REPO / "node_modules" / "wpt-runner" / "testharness",
              "/interfaces/webnn.idl": REPO / "idl" / "webnn.idl", "/interfaces/": HERE / "interfaces"}
    with PolyfillServer(root=HERE / "pages", mounts=mounts) as server:
        yield server


@pytest.mark.parametrize("where", ["window", "worker"])
def test_idlharness(where, browser, server):
    with browser.new_page() as page:
        page.goto(f"{server.url}/idlharness.html{'?worker' if where == 'worker' else ''}")
        page.wait_for("window.harnessResult !== undefined")
        result = page.evaluate("window.harnessResult")
    assert result["status"] == 0, result["message"]
    failures = [f"{t['name']}: {t['message']}" for t in result["tests"] if t["status"] != PASS]
    assert len(result["tests"]) > 200, f"only {len(result['tests'])} subtests ran"
    assert not failures, f"{len(failures)} of {len(result['tests'])} idlharness subtests failed:\n" + "\n".join(failures)
