"""bench/webnn_bench.py --quick runs end to end: browser (navigator.ml and ORT-web), host,
cold start and the per-operator breakdown, and every side's output matches onnxruntime.
Timings are printed, never asserted."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench.conftest import require_browser_bench

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.bench_smoke
def test_quick_benchmark_runs(pyodide_runtime):
    require_browser_bench("ort.wasm.min.mjs")
    # The transformer only: the script's every path in well under a minute (MobileNetV2's
    # outputs are checked on the host by test_models.py). The fixture rebuilt the wheel.
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "webnn_bench.py"), "--quick", "--no-setup",
                           "--models", "transformer"], capture_output=True, text=True, timeout=300)
    out = proc.stdout
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "MISMATCH" not in out + proc.stderr
    browser_row = re.search(r"^transformer\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)×\s+([\d.]+)×.*"
                            r"ok; [\d.e+-]+ ok; [\d.e+-]+ ok$", out, re.M)
    assert browser_row, out
    host_row = re.search(r"^transformer\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)×.* ok$", out, re.M)
    assert host_row, out
    assert re.search(r"createContext\(\) resolved at \d+;.*first result at \d+", out), out
    assert out.count("Per-operator breakdown, transformer") == 2, out     # in Chromium and on the host
    assert "crossOriginIsolated=True, ORT-wasm 2T page's numThreads=2, pages visible/visible;" in out, out
