"""tests/bench: the benchmark's models are correct, and the benchmark script runs end to end."""


def pytest_configure(config):
    config.addinivalue_line("markers", "bench_smoke: runs bench/webnn_bench.py --quick end to end "
                            "(headless Chromium; well under a minute)")


def require_browser_bench(ort_module: str) -> None:
    """Skip (or fail in CI) unless torch/onnx/onnxruntime/playwright, ORT-web's `ort_module`
    and a Chromium are there: what the benchmarks' browser sides need."""
    import os
    import shutil
    from pathlib import Path

    import pytest

    for module in ("torch", "onnx", "onnxruntime", "playwright"):
        pytest.importorskip(module)
    repo = Path(__file__).resolve().parents[2]
    if not (repo / "node_modules" / "onnxruntime-web" / "dist" / ort_module).is_file():
        if os.environ.get("CI"):
            pytest.fail("node_modules/onnxruntime-web is missing in CI: ./dev setup did not run npm ci")
        pytest.skip("no node_modules/onnxruntime-web: run ./dev setup")
    if not (os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")):
        pytest.skip("no Chromium: run ./dev setup")
