"""Tests run inside Pyodide (the real 0.27.7 runtime) under Node.js: the portable
tests again, and the checks that need real JS values (tests/pyodide/*_checks.py)."""
import json
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MODULES = sorted([f"tests.portable.{p.stem}" for p in (REPO / "tests" / "portable").glob("test_*.py")]
                 + [f"tests.pyodide.{p.stem}" for p in (REPO / "tests" / "pyodide").glob("*_checks.py")])


@pytest.mark.parametrize("module", MODULES)
def test_portable_module_in_pyodide(module, pyodide_runtime):
    proc = subprocess.run(
        ["node", str(REPO / "tests" / "pyodide" / "run_portable.mjs"), str(pyodide_runtime), str(REPO),
         module],
        capture_output=True, text=True, timeout=300,
    )
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert results, f"no results from Pyodide:\n{proc.stdout}\n{proc.stderr}"
    assert all(r["platform"] == "emscripten" for r in results)
    failures = [f"{r['test']}\n{r['detail']}" for r in results if r["outcome"] != "passed"]
    assert not failures, "\n".join(failures)
    assert proc.returncode == 0, proc.stderr
