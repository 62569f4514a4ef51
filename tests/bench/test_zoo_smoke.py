"""bench/zoo.py --quick runs end to end on small models: every node on ORT-web's WebNN EP,
every side's output (webnn-py through ORT's EP and through the recorded builder calls, ORT-web
wasm 1T and 2T) matching onnxruntime native, both tables and their geometric means printed.
Timings are printed, never asserted. The recording the builder side replays is checked on
its own too: replayed by a Python stand-in for zoo.mjs's generic replay, it computes what
onnxruntime does."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench.conftest import require_browser_bench

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from onnx_webnn import emit_onnx  # noqa: E402  (bench/: numpy at import, onnx at first use)
from webnn_recording import record  # noqa: E402


@pytest.mark.bench_smoke
def test_quick_zoo_runs(pyodide_runtime):
    require_browser_bench("ort.all.min.mjs")
    # The fixture rebuilt the wheel from the current sources.
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "zoo.py"), "--quick", "--no-setup",
                           "--models", "add", "gru", "lstm"], capture_output=True, text=True, timeout=300)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    assert "MISMATCH" not in out and "FAILED" not in proc.stderr
    assert "crossOriginIsolated=True" in out, out
    assert 'the polyfill\'s {"kernelThreads":0},' in out, out      # zoo.html's options, no slice/post override
    for name in ("add", "gru", "lstm"):
        # browser row: four medians (EP, builder, ORT-wasm 1T, 2T), four ratios (EP and builder against
        # 1T and 2T), runs, warm-up, "yes" (all nodes on WebNN), four diffs (none a MISMATCH)
        assert re.search(rf"^{name}(\s+[\d.]+){{4}}(\s+[\d.]+×){{4}}\s.*\syes\s+\S+; \S+; \S+; \S+$", out, re.M), out
        # where a builder run goes: the writes, dispatch, the reads, the whole run
        assert re.search(rf"^{name}(\s+[\d.]+){{4}}\s*$", out, re.M), out
        # host row: two medians, their ratio, the two CPU times per run and their ratio
        assert re.search(rf"^{name}\s+[\d.]+\s+[\d.]+\s+[\d.]+×\s+[\d.]+ / [\d.]+\s+[\d.]+×\s", out, re.M), out
    # browser: EP /1T, /2T, builder /1T, /2T; host: wall clock, CPU time
    assert re.search(r"^geometric mean(\s+[\d.]+×){4}\s*$", out, re.M), out
    assert re.search(r"^geometric mean(\s+[\d.]+×){2}\s*$", out, re.M), out
    # and over the models alone (add times the per-run cost): browser four ratios, host two
    assert re.search(r"^geometric mean, models \(no add\)(\s+[\d.]+×){4}\s*$", out, re.M), out
    assert re.search(r"^geometric mean, models \(no add\)(\s+[\d.]+×){2}\s*$", out, re.M), out
    assert re.search(r"load average [\d.]+ → [\d.]+ → [\d.]+", out), out


@pytest.mark.bench_smoke
def test_quick_zoo_takes_the_pages_slice_options(pyodide_runtime):
    """--time-slice and --post-task reach the polyfill's configuration in the pages (the
    header prints the configuration the page holds), and the run still matches."""
    require_browser_bench("ort.all.min.mjs")
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "zoo.py"), "--quick", "--no-setup", "--skip-host",
                           "--models", "add", "--time-slice", "0", "--post-task", "pyodide"],
                          capture_output=True, text=True, timeout=300)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    assert 'the polyfill\'s {"kernelThreads":0,"timeSlice":0,"postTask":"pyodide"},' in out, out
    assert re.search(r"^add(\s+[\d.]+){4}(\s+[\d.]+×){4}\s.*\syes\s+\S+; \S+; \S+; \S+$", out, re.M), out


def test_the_models_geometric_mean_leaves_out_the_per_run_cost_row():
    from zoo import geomean_rows

    rows = dict(geomean_rows(["lstm", "add", "gru"], [[2.0, 8.0, 0.5], [1.0, 1.0, 4.0]]))
    assert rows["geometric mean"] == pytest.approx([2.0, 4 ** (1 / 3)])          # (2·8·0.5)^(1/3), (1·1·4)^(1/3)
    assert rows["geometric mean, models (no add)"] == pytest.approx([1.0, 2.0])   # (2·0.5)^(1/2), (1·4)^(1/2)
    assert list(dict(geomean_rows(["lstm", "gru"], [[2.0, 0.5]]))) == ["geometric mean"]


def _check_zoo_on_host(tmp_path, names, emit) -> None:
    """For each zoo model in `names`: `emit(model, context, builder)` gives {output: MLOperand}
    on a host MLGraphBuilder; built, run once on the model's sample inputs (writeTensor →
    dispatch → readTensor) and every output compared with onnxruntime's."""
    for module in ("torch", "onnx", "onnxruntime"):
        pytest.importorskip(module)
    import asyncio

    import numpy as np
    from zoo_models import export_zoo

    import webnn_py

    async def run(name):
        model = export_zoo(name, tmp_path)
        context = await webnn_py.ml.createContext()
        builder = webnn_py.MLGraphBuilder(context)
        outputs = emit(model, context, builder)
        graph = await builder.build(outputs)
        inputs = {}
        for key, array in model.inputs.items():
            inputs[key] = await context.createTensor({"dataType": "float32", "shape": list(array.shape),
                                                      "writable": True})
            context.writeTensor(inputs[key], array)
        results = {k: await context.createTensor({"dataType": o.dataType, "shape": o.shape, "readable": True})
                   for k, o in outputs.items()}
        context.dispatch(graph, inputs, results)
        for key, expected in model.reference.items():
            got = np.frombuffer(await context.readTensor(results[key]), np.float32).reshape(expected.shape)
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5, err_msg=f"{name}: {key}")

    for name in names:
        asyncio.run(run(name))


def test_zoo_models_translate_to_webnn_on_the_host(tmp_path):
    """bench/onnx_webnn.py's translation of small zoo graphs computes what onnxruntime does."""
    _check_zoo_on_host(tmp_path, ("lstm", "gru", "vit_block", "mobilenet_v3_small"),
                       lambda model, _context, builder: emit_onnx(model.path, builder))


def _replay(recording: dict, blob: bytes, builder) -> dict:
    """zoo.mjs's replay in Python: every recorded call on `builder`, arguments decoded as the page
    decodes them; {graph output name: MLOperand}."""
    import numpy as np

    dtypes = {"Float32Array": np.float32, "Int32Array": np.int32, "Uint32Array": np.uint32, "Int8Array": np.int8,
              "Uint8Array": np.uint8, "BigInt64Array": np.int64, "BigUint64Array": np.uint64}
    operands: dict = {}

    def decode(value):
        if isinstance(value, list):
            return [decode(v) for v in value]
        if not isinstance(value, dict):
            return value
        if "$operand" in value:
            return operands[value["$operand"]]
        if "$bytes" in value:
            offset, length = value["$bytes"]
            return np.frombuffer(blob, dtypes[value["type"]], length, offset)
        if "$number" in value:
            return float(value["$number"].replace("Infinity", "inf"))
        return {k: decode(v) for k, v in value.items()}

    for call in recording["calls"]:
        result = getattr(builder, call["op"])(*decode(call["args"]))
        ids = call["result"] if isinstance(call["result"], list) else [call["result"]]
        operands.update(zip(ids, result if isinstance(call["result"], list) else [result]))
    return {name: operands[i] for name, i in recording["outputs"].items()}


def test_recorded_builder_calls_replay_to_onnxruntime_results(tmp_path):
    """bench/webnn_recording.py's recording of bench/onnx_webnn.py's translation (what zoo.mjs's
    builder side replays in the page), replayed from its JSON and blob alone, computes what
    onnxruntime does: multi-output operators (lstm's three, gru's two), constants in the blob,
    graph inputs' descriptors."""
    def replayed(model, context, builder):
        text, blob = record(lambda recorder: emit_onnx(model.path, recorder), context)
        recording = json.loads(text)
        assert recording["inputs"] == {k: {"dataType": "float32", "shape": list(a.shape)}
                                       for k, a in model.inputs.items()}
        outputs = _replay(recording, blob, builder)
        assert list(outputs) == list(model.reference)
        return outputs

    _check_zoo_on_host(tmp_path, ("lstm", "gru", "add", "mobilenet_v3_small"), replayed)


def test_recording_encodes_what_json_cannot_hold():
    """Non-finite numbers (a clamp with one bound) and typed arrays of other types survive the trip."""
    import asyncio

    import numpy as np

    import webnn_py

    def emit(builder):
        x = builder.input("x", {"dataType": "float32", "shape": [2, 3]})
        clamped = builder.clamp(x, {"minValue": float("-inf"), "maxValue": 0.5})
        indices = builder.constant({"dataType": "int32", "shape": [2]}, np.array([2, 0], np.int32))
        return {"y": builder.gather(clamped, indices, {"axis": 1})}

    context = asyncio.run(webnn_py.ml.createContext())
    text, blob = record(emit, context)
    calls = json.loads(text)["calls"]
    assert calls[1]["args"][1] == {"minValue": {"$number": "-Infinity"}, "maxValue": 0.5}
    offset, length = calls[2]["args"][1]["$bytes"]
    assert calls[2]["args"][1]["type"] == "Int32Array" and offset % 8 == 0
    assert np.frombuffer(blob, np.int32, length, offset).tolist() == [2, 0]
    assert calls[3]["result"] == 3 and calls[3]["args"][0] == {"$operand": 1}
