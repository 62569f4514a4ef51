"""Shared pytest set-up: async portable tests on asyncio, and the Pyodide runtime fixture."""
import asyncio
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUNTIME = REPO / "build" / "pyodide"


def pytest_pyfunc_call(pyfuncitem):
    """Run `async def` tests (tests/portable) with asyncio.run on the host."""
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
        asyncio.run(pyfuncitem.obj(**args))
        return True
    return None


@pytest.fixture(scope="session")
def pyodide_runtime() -> Path:
    """build/pyodide with a webnn_py wheel built from the current sources.

    Re-running the runtime step is cheap when nothing changed (it only hashes),
    and it keeps browser tests from silently testing a stale wheel after an edit.
    Without a runtime the test is skipped, except in CI, where that is a failure."""
    if not (RUNTIME / "pyodide.asm.wasm").is_file():
        if os.environ.get("CI"):
            pytest.fail("build/pyodide is missing in CI: ./dev setup did not run")
        pytest.skip("no Pyodide runtime in build/pyodide: run ./dev setup")
    subprocess.run([sys.executable, str(REPO / "tools" / "setup_runtime.py")], check=True,
                   stdout=subprocess.DEVNULL)
    return RUNTIME
