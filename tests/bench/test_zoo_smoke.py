"""bench/zoo.py --quick runs end to end on two small models: every node on ORT-web's WebNN
EP, every side's output matching onnxruntime native, both tables and their geometric means
printed. Timings are printed, never asserted."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench.conftest import require_browser_bench

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.bench_smoke
def test_quick_zoo_runs(pyodide_runtime):
    require_browser_bench("ort.all.min.mjs")
    # The fixture rebuilt the wheel from the current sources.
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "zoo.py"), "--quick", "--no-setup",
                           "--models", "add", "gru"], capture_output=True, text=True, timeout=300)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    assert "MISMATCH" not in out and "FAILED" not in proc.stderr
    assert "crossOriginIsolated=True" in out, out
    for name in ("add", "gru"):
        # browser row: three medians, two ratios, runs, warm-up, "yes" (all nodes on WebNN), three diffs
        assert re.search(rf"^{name}\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+×\s+[\d.]+×\s.*\syes\s+\S+; \S+; \S+$",
                         out, re.M), out
        # host row: two medians, their ratio, the two CPU times per run and their ratio
        assert re.search(rf"^{name}\s+[\d.]+\s+[\d.]+\s+[\d.]+×\s+[\d.]+ / [\d.]+\s+[\d.]+×\s", out, re.M), out
    # browser: /1T, /2T; host: wall clock, CPU time
    assert len(re.findall(r"^geometric mean\s+[\d.]+×\s+[\d.]+×\s*$", out, re.M)) == 2, out
    assert re.search(r"load average [\d.]+ → [\d.]+ → [\d.]+", out), out


def test_zoo_models_translate_to_webnn_on_the_host(tmp_path):
    """bench/onnx_webnn.py's translation of small zoo graphs computes what onnxruntime does."""
    for module in ("torch", "onnx", "onnxruntime"):
        pytest.importorskip(module)
    sys.path.insert(0, str(REPO / "bench"))
    import asyncio

    import numpy as np
    from onnx_webnn import emit_onnx
    from zoo_models import export_zoo

    import webnn_py

    async def run(name):
        model = export_zoo(name, tmp_path)
        context = await webnn_py.ml.createContext()
        builder = webnn_py.MLGraphBuilder(context)
        outputs = emit_onnx(model.path, builder)
        graph = await builder.build(outputs)
        inputs = {}
        for key, array in model.inputs.items():
            inputs[key] = await context.createTensor({"dataType": "float32", "shape": list(array.shape),
                                                      "writable": True})
            context.writeTensor(inputs[key], array)
        results = {k: await context.createTensor({"dataType": "float32", "shape": o.shape, "readable": True})
                   for k, o in outputs.items()}
        context.dispatch(graph, inputs, results)
        for key, expected in model.reference.items():
            got = np.frombuffer(await context.readTensor(results[key]), np.float32).reshape(expected.shape)
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5, err_msg=f"{name}: {key}")

    for name in ("lstm", "gru", "vit_block", "mobilenet_v3_small"):
        asyncio.run(run(name))
