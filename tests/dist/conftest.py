"""dist/ built from the current sources (./dev dist), once per session."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def dist(pyodide_runtime) -> Path:
    """The repository's dist/, rebuilt by tools/build_dist.py (it only hashes when the
    compressed copies are cached) after pyodide_runtime rebuilt the wheel."""
    subprocess.run([sys.executable, str(REPO / "tools" / "build_dist.py")], check=True, stdout=subprocess.DEVNULL)
    return REPO / "dist"


@pytest.fixture(scope="session")
def manifest(dist) -> dict:
    return json.loads((dist / "manifest.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def browser():
    from browsers.chromium import launch_chromium

    with launch_chromium() as context:
        yield context


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: installs into a fresh venv or project (tens of seconds); "
                                       "in the suite, deselect with -m 'not slow'")
