"""The test models: small torch modules exported to ONNX on the host (test-only).

Each model is exported at test time into a temporary directory (binary models
are never committed) with fixed shapes, and its reference outputs come from
onnxruntime's CPU execution provider on the host, an implementation independent
of webnn-py. The three models cover the operator families a WebNN client meets
most: a MobileNetV2-style CNN, a transformer encoder block and an LSTM.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

OPSET = 17


@dataclass
class ExportedModel:
    name: str
    path: Path
    inputs: dict[str, np.ndarray]
    reference: dict[str, np.ndarray]
    op_types: collections.Counter = field(default_factory=collections.Counter)
    node_count: int = 0


def _mobilenet_like():
    import torch
    from torch import nn

    class InvertedResidual(nn.Module):
        """MobileNetV2's block: expand 1×1, depthwise 3×3, project 1×1, plus the skip connection."""

        def __init__(self, channels: int, expansion: int):
            super().__init__()
            hidden = channels * expansion
            self.expand = nn.Conv2d(channels, hidden, 1)
            self.depthwise = nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden)
            self.project = nn.Conv2d(hidden, channels, 1)

        def forward(self, x):
            y = nn.functional.relu6(self.expand(x))       # exported as Clip(0, 6)
            y = nn.functional.relu6(self.depthwise(y))
            return x + self.project(y)

    class MobileNetLike(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 16, 3, stride=2, padding=1)
            self.block1 = InvertedResidual(16, 4)
            self.block2 = InvertedResidual(16, 6)
            self.classifier = nn.Linear(16, 10)          # exported as Gemm

        def forward(self, x):
            x = nn.functional.relu6(self.stem(x))
            x = self.block2(self.block1(x))
            x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)   # GlobalAveragePool
            return self.classifier(x)

    return MobileNetLike(), {"image": (1, 3, 56, 56)}, ["logits"]


def _transformer_encoder():
    import torch
    from torch import nn

    class EncoderLayer(nn.Module):
        """Post-norm encoder layer written out so the export has MatMul, Softmax,
        LayerNormalization, Erf-based GELU and the heads' Reshape/Transpose."""

        def __init__(self, dim: int, heads: int, ff: int):
            super().__init__()
            self.heads, self.head_dim = heads, dim // heads
            self.qkv = nn.Linear(dim, 3 * dim)
            self.out = nn.Linear(dim, dim)
            self.norm1 = nn.LayerNorm(dim)
            self.ff1 = nn.Linear(dim, ff)
            self.ff2 = nn.Linear(ff, dim)
            self.norm2 = nn.LayerNorm(dim)

        def forward(self, x):
            batch, seq, dim = x.shape
            q, k, v = self.qkv(x).split(dim, dim=-1)

            def heads(t):
                return t.reshape(batch, seq, self.heads, self.head_dim).transpose(1, 2)

            q, k, v = heads(q), heads(k), heads(v)
            scores = torch.matmul(q, k.transpose(-1, -2)) / (self.head_dim ** 0.5)
            attended = torch.matmul(torch.softmax(scores, dim=-1), v)
            attended = attended.transpose(1, 2).reshape(batch, seq, dim)
            x = self.norm1(x + self.out(attended))
            hidden = nn.functional.gelu(self.ff1(x))        # exact GELU: Erf in the export
            return self.norm2(x + self.ff2(hidden))

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([EncoderLayer(32, 4, 64) for _ in range(2)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    return Encoder(), {"tokens": (1, 8, 32)}, ["encoded"]


def _lstm():
    from torch import nn

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(input_size=12, hidden_size=16, num_layers=1, batch_first=False)
            self.head = nn.Linear(16, 5)

        def forward(self, x, h0, c0):
            sequence, (h, c) = self.lstm(x, (h0, c0))
            return self.head(sequence), h, c

    # Initial states are inputs, so the export holds one LSTM node and no
    # Shape/Expand arithmetic for zero states.
    return Tagger(), {"sequence": (10, 2, 12), "h0": (1, 2, 16), "c0": (1, 2, 16)}, ["tags", "hidden", "cell"]


def _embedding():
    from torch import nn

    class BagOfEmbeddings(nn.Module):
        """Token ids in: ORT's graph input is int64 (Gather's indices), the type
        ORT falls back to int32 for when a WebNN context lacks it."""

        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(50, 16)
            self.head = nn.Linear(16, 4)

        def forward(self, ids):
            return self.head(self.embedding(ids).mean(dim=1))

    return BagOfEmbeddings(), {"ids": ((2, 7), np.int64, 50)}, ["scores"]


def _hardmax_graph(rng):
    """A graph ORT must split (issue 19, item 15): ORT's WebNN EP takes no Hardmax, so
    Gemm+Relu run on WebNN, Hardmax on ORT's CPU EP (reading the first partition's float32
    output back through readTensor), and Mul+Add on WebNN again. Written with onnx.helper:
    torch has no Hardmax to export."""
    from onnx import TensorProto, helper, numpy_helper

    weights = {"w": rng.standard_normal((8, 6)).astype(np.float32),
               "b": rng.standard_normal(6).astype(np.float32),
               "c": rng.standard_normal(6).astype(np.float32)}
    nodes = [
        helper.make_node("Gemm", ["x", "w", "b"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Hardmax", ["r"], ["m"], axis=-1),
        helper.make_node("Mul", ["m", "r"], ["y"]),
        helper.make_node("Add", ["y", "c"], ["picked"]),
    ]
    graph = helper.make_graph(
        nodes, "hardmax_split", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8])],
        [helper.make_tensor_value_info("picked", TensorProto.FLOAT, [3, 6])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()])
    # IR version 8 (opset 17 needs >= 8): what the onnxruntime builds here and ORT-web load.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)
    return model, {"x": rng.standard_normal((3, 8)).astype(np.float32)}, ["picked"]


MODELS = {"mobilenet": _mobilenet_like, "transformer": _transformer_encoder, "lstm": _lstm, "embedding": _embedding,
          "transformer_dynamic": _transformer_encoder}
# Exported with free (symbolic) dimensions, as exporters write BERT-like models: the graph
# computes its reshapes' shapes at run time in int64 (Shape, Gather, Concat...).
DYNAMIC_AXES = {"transformer_dynamic": {"tokens": {0: "batch", 1: "sequence"}, "encoded": {0: "batch", 1: "sequence"}}}
# Models written directly in ONNX (no torch export): name -> builder(rng) -> (ModelProto, inputs, outputs).
ONNX_MODELS = {"hardmax": _hardmax_graph}


def export(name: str, directory: Path, seed: int = 0) -> ExportedModel:
    """Export one model with torch's TorchScript exporter and run onnxruntime (CPU) on it."""
    import warnings

    import onnx
    import torch

    if name in ONNX_MODELS:
        return _save_onnx_model(name, directory, seed)
    torch.manual_seed(seed)
    module, input_shapes, output_names = MODELS[name]()
    module.eval()
    rng = np.random.default_rng(seed)
    inputs = {}
    for key, spec in input_shapes.items():
        if isinstance(spec[0], tuple):      # (shape, integer dtype, exclusive upper bound)
            shape, dtype, high = spec
            inputs[key] = rng.integers(0, high, shape).astype(dtype)
        else:
            inputs[key] = rng.standard_normal(spec).astype(np.float32)
    path = directory / f"{name}.onnx"
    with warnings.catch_warnings():
        # dynamo=False: the TorchScript exporter writes fixed shapes and plain ONNX
        # operators (LSTM stays one node) without needing onnxscript.
        warnings.simplefilter("ignore")
        torch.onnx.export(module, tuple(torch.from_numpy(v) for v in inputs.values()), str(path),
                          input_names=list(inputs), output_names=output_names, opset_version=OPSET,
                          dynamic_axes=DYNAMIC_AXES.get(name), dynamo=False)
    return _with_reference(name, path, onnx.load(str(path)), inputs, output_names)


def _save_onnx_model(name: str, directory: Path, seed: int) -> ExportedModel:
    import onnx

    model, inputs, output_names = ONNX_MODELS[name](np.random.default_rng(seed))
    path = directory / f"{name}.onnx"
    onnx.save(model, str(path))
    return _with_reference(name, path, model, inputs, output_names)


def _with_reference(name: str, path: Path, model, inputs: dict, output_names: list) -> ExportedModel:
    """Check the model and run onnxruntime's CPU execution provider on it for the reference outputs."""
    import onnx
    import onnxruntime

    onnx.checker.check_model(model)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    reference = dict(zip(output_names, session.run(output_names, inputs)))
    ops = collections.Counter(node.op_type for node in model.graph.node if node.op_type != "Constant")
    return ExportedModel(name, path, inputs, reference, ops, sum(ops.values()))
