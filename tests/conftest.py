"""Shared pytest set-up: async portable tests on asyncio, and the Pyodide runtime fixture."""
import asyncio
import inspect
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUNTIME = REPO / "build" / "pyodide"


def pytest_addoption(parser):
    parser.addoption("--op-coverage", metavar="FILE",
                     help="write the (operator, data type) pairs that passing tests in tests/ops ran "
                          "(tools/gen_op_table.py uses it)")
    # Used by tests/browser/conftest.py; declared here, where pytest reads options from
    # whatever folder the run starts in.
    parser.addoption("--browser", metavar="ENGINES", default=None,
                     help="engines for the browser tests: chromium, firefox, webkit, a comma list "
                          "of them, or all (default: all, or $WEBNN_PY_BROWSERS)")


def pytest_sessionfinish(session):
    path = session.config.getoption("--op-coverage")
    if path:
        import json

        from tests.ops.conftest import COVERAGE
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(sorted(COVERAGE)))


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

    Re-running the kernels and runtime steps is cheap when nothing changed (they only hash),
    and it keeps browser tests from silently testing a stale wheel after an edit.
    Without a runtime the test is skipped, except in CI, where that is a failure."""
    if not (RUNTIME / "pyodide.asm.wasm").is_file():
        if os.environ.get("CI"):
            pytest.fail("build/pyodide is missing in CI: ./dev setup did not run")
        pytest.skip("no Pyodide runtime in build/pyodide: run ./dev setup")
    # The wheel ships kernels.wasm: rebuild it first (a hash check when the C is unchanged).
    for step in ("build_kernels.py", "setup_runtime.py"):
        subprocess.run([sys.executable, str(REPO / "tools" / step)], check=True, stdout=subprocess.DEVNULL)
    return RUNTIME


class _FailOnWebNNErrors(logging.Handler):
    def __init__(self):
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture(autouse=True)
def fail_on_logged_webnn_errors():
    """A kernel that raises during dispatch is only logged (the spec cannot report
    it yet); in tests that must not pass silently."""
    handler = _FailOnWebNNErrors()
    logger = logging.getLogger("webnn_py")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
    if handler.records:
        pytest.fail("webnn_py logged errors:\n" + "\n".join(
            handler.format(r) + ("\n" + logging.Formatter().formatException(r.exc_info) if r.exc_info else "")
            for r in handler.records))
