"""The benchmark's models, each defined once as plain data, replayable through any MLGraphBuilder.

A model is a list of builder calls (operator name, arguments, options) over
named operands, plus its graph inputs and its constants (seeded numpy weights).
The same definition is

- emitted through a Python MLGraphBuilder with `emit(model, builder)` (host
  `webnn_py`, or webnn_py inside Pyodide),
- sent to a page as JSON + one binary blob (`to_wire`) and replayed there by
  page script through `navigator.ml`'s MLGraphBuilder (bench/webnn_bench.mjs),
- rebuilt as an equivalent, separately written torch module (`torch_module`)
  whose parameters are loaded from the same weights, for the ONNX export that
  ONNX Runtime (native and web) runs.

Layout: NCHW with OIHW filters, WebNN's defaults. The ONNX graph that ORT runs
(torch's export) is NCHW, so both sides receive the same graph in the same
layout; choosing a faster internal layout is the job of webnn-py's graph
compiler (issue 9, "layout decided once"), not of the benchmark.

Batch normalization is folded into the convolutions' weights and biases, as in
deployed MobileNetV2 graphs (and in torch's eval-mode ONNX export).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

SEED = 0


@dataclass(frozen=True)
class Ref:
    """An operand by name: a graph input, a constant or an earlier call's output."""
    name: str


@dataclass
class Model:
    name: str
    inputs: dict[str, dict] = field(default_factory=dict)          # name -> MLOperandDescriptor
    constants: dict[str, np.ndarray] = field(default_factory=dict)  # name -> float32 array
    calls: list[dict] = field(default_factory=list)                 # {"op", "args", "output"}
    outputs: dict[str, str] = field(default_factory=dict)           # graph output -> operand name
    # torch parameter name -> (constant name, stored transposed?): how torch_module loads the weights
    torch_weights: dict[str, tuple[str, bool]] = field(default_factory=dict)
    _rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(SEED), repr=False)

    # -- recording ---------------------------------------------------------------------------

    def input(self, name: str, shape) -> Ref:
        self.inputs[name] = {"dataType": "float32", "shape": list(shape)}
        return Ref(name)

    def constant(self, name: str, array: np.ndarray, torch_name: str | None = None,
                 transposed: bool = False) -> Ref:
        assert name not in self.constants and name not in self.inputs, name
        self.constants[name] = np.ascontiguousarray(array, dtype=np.float32)
        if torch_name:
            self.torch_weights[torch_name] = (name, transposed)
        return Ref(name)

    def weight(self, name: str, shape, fan_in: int, torch_name: str | None = None,
               transposed: bool = False) -> Ref:
        """He-normal weights, so activations keep their scale through deep stacks."""
        array = self._rng.standard_normal(shape) * math.sqrt(2.0 / fan_in)
        return self.constant(name, array, torch_name, transposed)

    def bias(self, name: str, size: int, torch_name: str | None = None) -> Ref:
        return self.constant(name, self._rng.uniform(-0.1, 0.1, size), torch_name)

    def call(self, op: str, *args, output: str) -> Ref:
        """Record builder.<op>(*args). Every WebNN operator takes its options dictionary last,
        so the options (added when absent) get label=output: errors and profiles name the call."""
        args = list(args)
        if args and isinstance(args[-1], dict):
            args[-1] = {**args[-1], "label": output}
        else:
            args.append({"label": output})
        self.calls.append({"op": op, "args": args, "output": output})
        return Ref(output)

    def sample_inputs(self, seed: int = SEED) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed + 1)
        return {name: rng.standard_normal(d["shape"]).astype(np.float32) for name, d in self.inputs.items()}

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for c in self.calls:
            counts[c["op"]] = counts.get(c["op"], 0) + 1
        return counts

    # -- replay --------------------------------------------------------------------------------

    def to_wire(self) -> tuple[dict, bytes]:
        """JSON-able description + the constants' bytes, concatenated (float32, 4-byte aligned)."""
        blob = bytearray()
        constants = {}
        for name, array in self.constants.items():
            constants[name] = {"dataType": "float32", "shape": list(array.shape),
                               "offset": len(blob), "length": int(array.size)}
            blob += array.tobytes()
        description = {"name": self.name, "inputs": self.inputs, "constants": constants,
                       "calls": [{**c, "args": _jsonable(c["args"])} for c in self.calls],
                       "outputs": self.outputs}
        return description, bytes(blob)


def _jsonable(value):
    if isinstance(value, Ref):
        return {"$ref": value.name}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def emit(model: Model, builder) -> dict:
    """Replay the model's calls through `builder`; returns {output name: MLOperand}."""
    operands = {name: builder.input(name, desc) for name, desc in model.inputs.items()}
    for name, array in model.constants.items():
        operands[name] = builder.constant({"dataType": "float32", "shape": list(array.shape)}, array)

    def resolve(value):
        if isinstance(value, Ref):
            return operands[value.name]
        if isinstance(value, (list, tuple)):
            return [resolve(v) for v in value]
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        return value

    for c in model.calls:
        operands[c["output"]] = getattr(builder, c["op"])(*resolve(c["args"]))
    return {name: operands[ref] for name, ref in model.outputs.items()}


# -- MobileNetV2 ---------------------------------------------------------------------------------

# (expansion t, output channels c, repeats n, first stride s): MobileNetV2's table 2
MOBILENET_V2_BLOCKS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
RELU6 = {"minValue": 0.0, "maxValue": 6.0}


def mobilenet_v2() -> Model:
    """MobileNetV2 1.0, 224×224×3 fp32, batch 1, 1000 classes, BN folded."""
    m = Model("mobilenet_v2")
    x = m.input("image", [1, 3, 224, 224])

    def conv(name, x, cin, cout, kernel, stride=1, groups=1, relu6=True):
        w = m.weight(f"{name}.weight", (cout, cin // groups, kernel, kernel), (cin // groups) * kernel * kernel,
                     torch_name=f"{name}.weight")
        b = m.bias(f"{name}.bias", cout, torch_name=f"{name}.bias")
        pad = kernel // 2
        y = m.call("conv2d", x, w, {"strides": [stride, stride], "padding": [pad] * 4, "groups": groups,
                                    "bias": b}, output=name)
        return m.call("clamp", y, RELU6, output=f"{name}.relu6") if relu6 else y

    x = conv("stem", x, 3, 32, 3, stride=2)
    channels = 32
    index = 0
    for t, c, n, s in MOBILENET_V2_BLOCKS:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = channels * t
            prefix = f"blocks.{index}"
            y = x
            if t != 1:
                y = conv(f"{prefix}.expand", y, channels, hidden, 1)
            y = conv(f"{prefix}.depthwise", y, hidden, hidden, 3, stride=stride, groups=hidden)
            y = conv(f"{prefix}.project", y, hidden, c, 1, relu6=False)
            if stride == 1 and channels == c:
                y = m.call("add", x, y, output=f"{prefix}.residual")
            x, channels = y, c
            index += 1
    x = conv("head", x, channels, 1280, 1)
    x = m.call("averagePool2d", x, {}, output="pool")           # global: the window defaults to H×W
    x = m.call("reshape", x, [1, 1280], output="flatten")
    w = m.weight("classifier.weight", (1000, 1280), 1280, torch_name="classifier.weight")
    b = m.bias("classifier.bias", 1000, torch_name="classifier.bias")
    m.call("gemm", x, w, {"c": b, "bTranspose": True}, output="logits")
    m.outputs = {"logits": "logits"}
    return m


# -- transformer encoder -------------------------------------------------------------------------

def transformer_encoder(seq: int = 128, hidden: int = 256, heads: int = 4, ffn: int = 1024,
                        layers: int = 2) -> Model:
    """BERT-style post-norm encoder layers (separate Q/K/V projections, exact GELU).

    Linear weights are stored [in, out] (MatMul's right operand), as torch's ONNX
    export stores them after folding the transpose, so both sides run MatMul on the
    same constant layout."""
    m = Model("transformer_encoder")
    head_dim = hidden // heads
    x = m.input("tokens", [1, seq, hidden])
    scale = m.constant("attention.scale", np.array(1.0 / math.sqrt(head_dim)))

    def linear(name, x, cin, cout):
        w = m.weight(f"{name}.weight", (cin, cout), cin, torch_name=f"{name}.weight", transposed=True)
        b = m.bias(f"{name}.bias", cout, torch_name=f"{name}.bias")
        y = m.call("matmul", x, w, output=f"{name}.matmul")
        return m.call("add", y, b, output=name)

    def layer_norm(name, x):
        gamma = m.constant(f"{name}.weight", m._rng.uniform(0.8, 1.2, hidden), torch_name=f"{name}.weight")
        beta = m.bias(f"{name}.bias", hidden, torch_name=f"{name}.bias")
        return m.call("layerNormalization", x, {"axes": [2], "scale": gamma, "bias": beta, "epsilon": 1e-5},
                      output=name)

    for i in range(layers):
        p = f"layers.{i}"
        split = {}
        for part in ("q", "k", "v"):
            y = linear(f"{p}.{part}", x, hidden, hidden)
            split[part] = m.call("reshape", y, [1, seq, heads, head_dim], output=f"{p}.{part}.heads")
        # q, v: [1, heads, seq, head_dim]; k: [1, heads, head_dim, seq] (transposed for q·kᵀ)
        q = m.call("transpose", split["q"], {"permutation": [0, 2, 1, 3]}, output=f"{p}.q.t")
        k = m.call("transpose", split["k"], {"permutation": [0, 2, 3, 1]}, output=f"{p}.k.t")
        v = m.call("transpose", split["v"], {"permutation": [0, 2, 1, 3]}, output=f"{p}.v.t")
        scores = m.call("matmul", q, k, output=f"{p}.scores")
        scores = m.call("mul", scores, scale, output=f"{p}.scaled")
        probs = m.call("softmax", scores, 3, {}, output=f"{p}.softmax")
        ctx = m.call("matmul", probs, v, output=f"{p}.context")
        ctx = m.call("transpose", ctx, {"permutation": [0, 2, 1, 3]}, output=f"{p}.context.t")
        ctx = m.call("reshape", ctx, [1, seq, hidden], output=f"{p}.context.merged")
        attn = linear(f"{p}.out", ctx, hidden, hidden)
        x = layer_norm(f"{p}.norm1", m.call("add", x, attn, output=f"{p}.residual1"))
        h = m.call("gelu", linear(f"{p}.ff1", x, hidden, ffn), {}, output=f"{p}.gelu")
        h = linear(f"{p}.ff2", h, ffn, hidden)
        x = layer_norm(f"{p}.norm2", m.call("add", x, h, output=f"{p}.residual2"))
    m.outputs = {"encoded": x.name}
    return m


MODELS = {"mobilenet": mobilenet_v2, "transformer": transformer_encoder}


# -- the torch equivalents (host only; for the ONNX export that ORT runs) ------------------------

def torch_module(model: Model):
    """A torch module written independently of the call list, with `model`'s weights loaded
    (strictly: every torch parameter must come from one of the model's constants)."""
    import torch

    module = {"mobilenet_v2": _torch_mobilenet_v2, "transformer_encoder": _torch_transformer}[model.name]()
    state = {}
    for key, (name, transposed) in model.torch_weights.items():
        array = model.constants[name]
        state[key] = torch.from_numpy(np.ascontiguousarray(array.T if transposed else array))
    module.load_state_dict(state, strict=True)
    return module.eval()


def _torch_mobilenet_v2():
    from torch import nn

    def conv(cin, cout, kernel, stride=1, groups=1):
        return nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups)

    class Block(nn.Module):
        def __init__(self, cin, cout, t, stride):
            super().__init__()
            hidden = cin * t
            if t != 1:
                self.expand = conv(cin, hidden, 1)
            self.depthwise = conv(hidden, hidden, 3, stride, groups=hidden)
            self.project = conv(hidden, cout, 1)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            y = nn.functional.relu6(self.expand(x)) if hasattr(self, "expand") else x
            y = self.project(nn.functional.relu6(self.depthwise(y)))
            return x + y if self.residual else y

    class MobileNetV2(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = conv(3, 32, 3, 2)
            blocks, cin = [], 32
            for t, c, n, s in MOBILENET_V2_BLOCKS:
                for i in range(n):
                    blocks.append(Block(cin, c, t, s if i == 0 else 1))
                    cin = c
            self.blocks = nn.Sequential(*blocks)
            self.head = conv(cin, 1280, 1)
            self.classifier = nn.Linear(1280, 1000)

        def forward(self, image):
            x = nn.functional.relu6(self.stem(image))
            x = nn.functional.relu6(self.head(self.blocks(x)))
            return self.classifier(nn.functional.adaptive_avg_pool2d(x, 1).flatten(1))

    return MobileNetV2()


def _torch_transformer(hidden: int = 256, heads: int = 4, ffn: int = 1024, layers: int = 2):
    import torch
    from torch import nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v, self.out = (nn.Linear(hidden, hidden) for _ in range(4))
            self.norm1, self.norm2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
            self.ff1, self.ff2 = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)

        def forward(self, x):
            batch, seq, _ = x.shape

            def split(t):
                return t.reshape(batch, seq, heads, hidden // heads).transpose(1, 2)

            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(hidden // heads))
            context = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(batch, seq, hidden)
            x = self.norm1(x + self.out(context))
            return self.norm2(x + self.ff2(nn.functional.gelu(self.ff1(x))))

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(Layer() for _ in range(layers))

        def forward(self, tokens):
            for layer in self.layers:
                tokens = layer(tokens)
            return tokens

    return Encoder()


def export_onnx(model: Model, path, opset: int = 17):
    """Export the torch equivalent with torch's TorchScript exporter (fixed shapes, plain
    ONNX operators, no onnxscript needed); returns the path."""
    import warnings

    import torch

    module = torch_module(model)
    example = tuple(torch.from_numpy(v) for v in model.sample_inputs().values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, example, str(path), input_names=list(model.inputs),
                          output_names=list(model.outputs), opset_version=opset, dynamo=False)
    return path
