"""WPT's idlharness.js (from npm wpt-runner) checks the polyfill's WebIDL surface
against idl/webnn.idl, in a window and in a dedicated worker."""
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
PASS = 0  # testharness.js's PASS status


def run_idlharness(query: str) -> dict:
    from webnn_py.serve import PolyfillServer
    from wpt_runner.chromium import launch_chromium

    mounts = {"/resources/": REPO / "node_modules" / "wpt-runner" / "testharness",
              "/interfaces/webnn.idl": REPO / "idl" / "webnn.idl", "/interfaces/": HERE / "interfaces"}
    with PolyfillServer(root=HERE / "pages", mounts=mounts) as server, launch_chromium() as browser:
        page = browser.new_page()
        page.goto(f"{server.url}/idlharness.html{query}")
        page.wait_for_function("window.harnessResult !== undefined", timeout=120_000)
        return page.evaluate("window.harnessResult")


@pytest.mark.parametrize("where", ["window", "worker"])
def test_idlharness(where, pyodide_runtime):
    result = run_idlharness("?worker" if where == "worker" else "")
    assert result["status"] == 0, result["message"]
    failures = [f"{t['name']}: {t['message']}" for t in result["tests"] if t["status"] != PASS]
    assert len(result["tests"]) > 200, f"only {len(result['tests'])} subtests ran"
    assert not failures, f"{len(failures)} of {len(result['tests'])} idlharness subtests failed:\n" + "\n".join(failures)
