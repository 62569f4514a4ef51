"""The self-test tree laid out as a WPT checkout: our tests plus WPT's harness files from npm."""
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
HARNESS = REPO / "node_modules" / "wpt-runner" / "testharness"


def make_wpt_root(target: Path) -> Path:
    if not (HARNESS / "testharness.js").is_file():
        pytest.skip("node_modules/wpt-runner is missing: run ./dev setup")
    shutil.copytree(HERE / "tree", target)
    resources = target / "resources"
    resources.mkdir()
    for name in ("testharness.js", "idlharness.js"):
        shutil.copy(HARNESS / name, resources / name)
    shutil.copy(HARNESS / "webidl2.js", resources / "WebIDLParser.js")   # its name in WPT
    # WPT's own testharnessreport.js is a vendor hook; the runner must not depend on
    # what it contains, so this one does nothing at all.
    (resources / "testharnessreport.js").write_text("// an inert testharnessreport.js\n")
    return target


@pytest.fixture(scope="session")
def wpt_root(tmp_path_factory) -> Path:
    return make_wpt_root(tmp_path_factory.mktemp("wpt") / "root")
