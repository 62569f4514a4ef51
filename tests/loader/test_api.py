"""The Model Loader API on the host, as the draft (../shared/spec/002) describes it."""
from __future__ import annotations

import asyncio

import numpy as np
import pytest

from webnn_py import ml
from webnn_py.base.errors import DataError, InvalidStateError
from webnn_py.loader import MLModel, MLModelLoader

from .tflite_writer import ModelWriter


def two_in_two_out() -> bytes:
    """z = x + y, w = x * y: hand-checkable."""
    w = ModelWriter()
    g = w.subgraph()
    x, y = g.tensor([2], name="x"), g.tensor([2], name="y")
    z, p = g.tensor([2], name="z"), g.tensor([2], name="w")
    g.op("ADD", [x, y], [z])
    g.op("MUL", [x, y], [p])
    g.io([x, y], [z, p])
    return w.finish()


def one_in_one_out() -> bytes:
    w = ModelWriter()
    g = w.subgraph()
    x, y = g.tensor([1], name="x"), g.tensor([1], name="y")
    g.op("RELU", [x], [y])
    g.io([x], [y])
    return w.finish()


def run(coroutine_fn):
    return asyncio.run(coroutine_fn())


def test_the_drafts_example():
    """§3: createContext with the loader's options, new MLModelLoader, load, three compute forms."""
    async def go():
        context = await ml.createContext({"devicePreference": "cpu", "powerPreference": "low-power",
                                          "numThreads": 0, "modelFormat": "tflite"})
        loader = MLModelLoader(context)
        model = await loader.load(one_in_one_out())
        assert isinstance(model, MLModel)
        # 1. one input, given without its name
        z = await model.compute({"data": np.array([10], np.float32), "dimensions": [1]})
        assert z["dimensions"] == [1] and z["data"].dtype == np.float32 and z["data"].tolist() == [10]
        # ... or by its name
        z = await model.compute({"x": {"data": np.array([-3], np.float32), "dimensions": [1]}})
        assert z["data"].tolist() == [0]
        # 3. the caller's output buffer, filled in place; resolves to undefined (None)
        out = np.zeros(1, np.float32)
        assert await model.compute({"data": np.array([7], np.float32), "dimensions": [1]},
                                   {"data": out, "dimensions": [1]}) is None
        assert out.tolist() == [7]
    run(go)


def test_record_forms_and_info():
    async def go():
        model = await MLModelLoader(await ml.createContext()).load(two_in_two_out())
        assert model.inputs() == [{"name": "x", "type": "float32", "dimensions": [2]},
                                  {"name": "y", "type": "float32", "dimensions": [2]}]
        assert [o["name"] for o in model.outputs()] == ["z", "w"]
        x, y = np.array([1, 2], np.float32), np.array([3, 4], np.float32)
        inputs = {"x": {"data": x, "dimensions": [2]}, "y": {"data": y, "dimensions": [2]}}
        result = await model.compute(inputs)
        assert set(result) == {"z", "w"}
        assert result["z"]["data"].tolist() == [4, 6] and result["w"]["data"].tolist() == [3, 8]
        z, w = np.zeros(2, np.float32), np.zeros(2, np.float32)
        await model.compute(inputs, {"z": {"data": z, "dimensions": [2]}, "w": {"data": w, "dimensions": [2]}})
        assert z.tolist() == [4, 6] and w.tolist() == [3, 8]
        # Concurrent computes keep their own inputs (they are ordered on the context's timeline).
        a = model.compute({"x": {"data": x, "dimensions": [2]}, "y": {"data": x, "dimensions": [2]}})
        b = model.compute(inputs)
        ra, rb = await a, await b
        assert ra["z"]["data"].tolist() == [2, 4] and rb["z"]["data"].tolist() == [4, 6]
    run(go)


def test_load_accepts_buffers_and_views():
    async def go():
        context = await ml.createContext()
        data = one_in_one_out()
        for source in (data, bytearray(data), np.frombuffer(data, np.uint8), memoryview(data)):
            model = await MLModelLoader(context).load(source)
            assert model.outputs()[0]["name"] == "y"
    run(go)


@pytest.mark.parametrize("inputs,message", [
    ({"x": {"data": np.zeros(2, np.float32), "dimensions": [2]}}, "lacks 'y'"),
    ({"x": {"data": np.zeros(2, np.float32), "dimensions": [2]}, "y": {"data": np.zeros(2, np.float32),
      "dimensions": [2]}, "q": {"data": np.zeros(2, np.float32), "dimensions": [2]}}, "no input named 'q'"),
    ({"x": {"data": np.zeros(2, np.float32), "dimensions": [1, 2]}, "y": {"data": np.zeros(2, np.float32),
      "dimensions": [2]}}, "dimensions \\[1, 2\\]"),
    ({"x": {"data": np.zeros(2, np.int32), "dimensions": [2]}, "y": {"data": np.zeros(2, np.float32),
      "dimensions": [2]}}, "Int32Array"),
    ({"x": {"data": np.zeros(3, np.float32), "dimensions": [2]}, "y": {"data": np.zeros(2, np.float32),
      "dimensions": [2]}}, "holds 12 bytes"),
    ({"data": np.zeros(2, np.float32), "dimensions": [2]}, "input"),   # single form, two inputs
    (42, "not an object"),
])
def test_compute_rejects_bad_inputs_with_type_errors(inputs, message):
    async def go():
        model = await MLModelLoader(await ml.createContext()).load(two_in_two_out())
        with pytest.raises(TypeError, match=message):
            await model.compute(inputs)
    run(go)


def test_output_buffer_mismatch_is_a_type_error():
    async def go():
        model = await MLModelLoader(await ml.createContext()).load(one_in_one_out())
        with pytest.raises(TypeError, match="dimensions"):
            await model.compute({"data": np.zeros(1, np.float32), "dimensions": [1]},
                                {"data": np.zeros(2, np.float32), "dimensions": [2]})
    run(go)


def test_load_rejections():
    async def go():
        context = await ml.createContext()
        loader = MLModelLoader(context)
        with pytest.raises(TypeError):
            await loader.load(42)
        with pytest.raises(DataError, match="load: the model is malformed"):
            await loader.load(b"definitely not a model")
        context.destroy()
        with pytest.raises(InvalidStateError):
            await loader.load(one_in_one_out())
        with pytest.raises(InvalidStateError):
            MLModelLoader(context)
    run(go)


def test_compute_after_the_context_is_lost():
    async def go():
        context = await ml.createContext()
        model = await MLModelLoader(context).load(one_in_one_out())
        context.destroy()
        with pytest.raises(InvalidStateError):
            await model.compute({"data": np.zeros(1, np.float32), "dimensions": [1]})
    run(go)


def test_constructor_needs_a_context():
    with pytest.raises(TypeError):
        MLModelLoader("not a context")


def test_run_model_cli(models_dir, tmp_path, capsys):
    from webnn_py.run_model import main
    x = np.zeros((1, 128, 128, 3), np.float32)
    np.save(tmp_path / "x.npy", x)
    assert main([str(models_dir / "face_detection_short_range.tflite"), "--input", f"input={tmp_path / 'x.npy'}",
                 "--output", str(tmp_path / "out.npz"), "--repeat", "2"]) == 0
    printed = capsys.readouterr().out
    assert "input: float32 [1, 128, 128, 3]" in printed and "regressors: float32 [1, 896, 16]" in printed
    assert "load:" in printed and "compute ×2" in printed
    saved = np.load(tmp_path / "out.npz")
    assert saved["regressors"].shape == (1, 896, 16) and saved["classificators"].shape == (1, 896, 1)
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"junk junk junk")
    assert main([str(bad)]) == 1
    assert "DataError" in capsys.readouterr().err
