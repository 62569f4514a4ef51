"""The benchmark compares like with like: webnn-py's graph of each model computes what
onnxruntime computes on the torch export of the same model (same weights), and the
ONNX graph is made of the operators the WebNN graph uses."""
from __future__ import annotations

import asyncio
import collections
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import models  # noqa: E402

onnx = pytest.importorskip("onnx")
onnxruntime = pytest.importorskip("onnxruntime")
pytest.importorskip("torch")


@pytest.fixture(scope="module", params=list(models.MODELS))
def exported(request, tmp_path_factory):
    model = models.MODELS[request.param]()
    path = models.export_onnx(model, tmp_path_factory.mktemp("bench-models") / f"{request.param}.onnx")
    return model, path


async def _run_webnn(model):
    import webnn_py

    context = await webnn_py.ml.createContext()
    builder = webnn_py.MLGraphBuilder(context)
    outputs = models.emit(model, builder)
    graph = await builder.build(outputs)
    inputs = {}
    for name, array in model.sample_inputs().items():
        inputs[name] = await context.createTensor({**model.inputs[name], "writable": True})
        context.writeTensor(inputs[name], array)
    results = {name: await context.createTensor({"dataType": o.dataType, "shape": o.shape, "readable": True})
               for name, o in outputs.items()}
    context.dispatch(graph, inputs, results)
    return {name: np.frombuffer(await context.readTensor(t), np.float32).reshape(outputs[name].shape)
            for name, t in results.items()}


def test_webnn_matches_onnxruntime(exported):
    model, path = exported
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = list(model.outputs)
    reference = dict(zip(names, session.run(names, model.sample_inputs())))
    got = asyncio.run(_run_webnn(model))
    for name in names:
        assert got[name].shape == reference[name].shape
        # The outputs are not trivially small (the check has something to compare).
        assert np.abs(reference[name]).max() > 1.0
        np.testing.assert_allclose(got[name], reference[name], rtol=1e-4, atol=1e-4)


# WebNN operator -> the ONNX operator torch's export uses for it
ONNX_OP = {"conv2d": "Conv", "clamp": "Clip", "gemm": "Gemm", "matmul": "MatMul", "softmax": "Softmax",
           "layerNormalization": "LayerNormalization"}


def test_onnx_graph_has_the_same_operators(exported):
    model, path = exported
    onnx_ops = collections.Counter(node.op_type for node in onnx.load(str(path)).graph.node)
    for webnn_op, count in model.op_counts().items():
        if webnn_op in ONNX_OP:
            assert onnx_ops[ONNX_OP[webnn_op]] == count, (webnn_op, onnx_ops)
    if model.name == "transformer_encoder":
        assert onnx_ops["Erf"] == model.op_counts()["gelu"]      # exact GELU on both sides


def test_mobilenet_v2_architecture():
    """MobileNetV2 1.0 as in the paper (Sandler et al. 2018, table 2): 17 bottleneck blocks,
    10 of them residual; stem + 16 expansions + 17 depthwise + 17 projections + head = 52
    convolutions; 1280 features into a 1000-class classifier."""
    model = models.mobilenet_v2()
    ops = model.op_counts()
    assert ops["conv2d"] == 52
    assert ops["add"] == 10
    depthwise = [c for c in model.calls if c["op"] == "conv2d" and c["args"][-1]["groups"] > 1]
    assert len(depthwise) == 17
    assert all(model.constants[c["args"][1].name].shape[1:] == (1, 3, 3) for c in depthwise)
    assert model.constants["classifier.weight"].shape == (1000, 1280)
    assert model.inputs["image"]["shape"] == [1, 3, 224, 224]


def test_transformer_size():
    """Per layer: 4 projections 256×256 (+bias), FFN 256×1024 and 1024×256 (+biases),
    two layer norms; 2 layers, plus the attention scale: 1,579,521 numbers."""
    model = models.transformer_encoder()
    per_layer = 4 * (256 * 256 + 256) + (256 * 1024 + 1024) + (1024 * 256 + 256) + 2 * 2 * 256
    assert sum(a.size for a in model.constants.values()) == 2 * per_layer + 1
    assert model.inputs["tokens"]["shape"] == [1, 128, 256]


def test_weights_are_deterministic():
    a, b = models.mobilenet_v2(), models.mobilenet_v2()
    assert all(np.array_equal(a.constants[k], b.constants[k]) for k in a.constants)
