"""The benchmark zoo's models: torch modules written here with torchvision's layer
structure (torchvision itself does not install beside our torch), random weights,
exported to ONNX on the host.

Batch normalisation keeps activations O(1): its running statistics are calibrated
on one random batch (train mode with a cumulative average, one forward pass, so
mean and variance are that batch's), then the module is put in eval mode, which
the exporter folds into the convolutions as deployed graphs have it.

`export_zoo(name, directory)` writes NAME.onnx and returns an ExportedModel (as
tests/ort's) with the sample inputs and onnxruntime CPU's outputs for them (the
reference every side is checked against).
"""
from __future__ import annotations

import collections
import math
from pathlib import Path

import numpy as np

from tests.ort.models import ExportedModel

OPSET = 17
SEED = 0


def _make_divisible(value: float, divisor: int = 8) -> int:
    """torchvision's channel rounding (MobileNet's width multiplier arithmetic)."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def _nn():
    import torch
    from torch import nn
    return torch, nn


def _conv_bn(cin, cout, kernel, stride=1, groups=1, act=None, dilation=1):
    """Conv (no bias) → BatchNorm → activation, torchvision's Conv2dNormActivation."""
    _, nn = _nn()
    layers = [nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2 * dilation, dilation=dilation,
                        groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


# -- CNNs -----------------------------------------------------------------------------------------

def mobilenet_v2():
    _, nn = _nn()

    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, stride, t):
            super().__init__()
            hidden = cin * t
            layers = [] if t == 1 else [_conv_bn(cin, hidden, 1, act=nn.ReLU6)]
            layers += [_conv_bn(hidden, hidden, 3, stride, groups=hidden, act=nn.ReLU6), _conv_bn(hidden, cout, 1)]
            self.conv = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.conv(x) if self.residual else self.conv(x)

    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1)]
    features, cin = [_conv_bn(3, 32, 3, 2, act=nn.ReLU6)], 32
    for t, c, n, s in settings:
        for i in range(n):
            features.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
            cin = c
    features.append(_conv_bn(cin, 1280, 1, act=nn.ReLU6))
    return _Classifier(nn.Sequential(*features), nn.Linear(1280, 1000))


def _Classifier(features, head):
    _, nn = _nn()

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.features, self.head = features, head

        def forward(self, image):
            return self.head(nn.functional.adaptive_avg_pool2d(self.features(image), 1).flatten(1))
    return Classifier()


def resnet18():
    _, nn = _nn()

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = _conv_bn(cin, cout, 3, stride, act=nn.ReLU)
            self.conv2 = _conv_bn(cout, cout, 3)
            self.down = _conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else nn.Identity()

        def forward(self, x):
            return nn.functional.relu(self.conv2(self.conv1(x)) + self.down(x))

    layers = [_conv_bn(3, 64, 7, 2, act=nn.ReLU), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
        cin = cout
    return _Classifier(nn.Sequential(*layers), nn.Linear(512, 1000))


def _squeeze_excitation(channels, squeeze, act, gate):
    """Global average pool → 1×1 conv → act → 1×1 conv → gate, times the input."""
    _, nn = _nn()

    class SqueezeExcitation(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Conv2d(channels, squeeze, 1), nn.Conv2d(squeeze, channels, 1)
            self.act, self.gate = act(), gate()

        def forward(self, x):
            scale = self.gate(self.fc2(self.act(self.fc1(nn.functional.adaptive_avg_pool2d(x, 1)))))
            return x * scale
    return SqueezeExcitation()


def mobilenet_v3_small():
    _, nn = _nn()
    # (input, kernel, expanded, output, squeeze-excitation, hardswish, stride): torchvision's table
    settings = [(16, 3, 16, 16, True, False, 2), (16, 3, 72, 24, False, False, 2), (24, 3, 88, 24, False, False, 1),
                (24, 5, 96, 40, True, True, 2), (40, 5, 240, 40, True, True, 1), (40, 5, 240, 40, True, True, 1),
                (40, 5, 120, 48, True, True, 1), (48, 5, 144, 48, True, True, 1), (48, 5, 288, 96, True, True, 2),
                (96, 5, 576, 96, True, True, 1), (96, 5, 576, 96, True, True, 1)]

    class InvertedResidual(nn.Module):
        def __init__(self, cin, kernel, expanded, cout, se, hardswish, stride):
            super().__init__()
            act = nn.Hardswish if hardswish else nn.ReLU
            layers = [] if expanded == cin else [_conv_bn(cin, expanded, 1, act=act)]
            layers.append(_conv_bn(expanded, expanded, kernel, stride, groups=expanded, act=act))
            if se:
                layers.append(_squeeze_excitation(expanded, _make_divisible(expanded // 4), nn.ReLU, nn.Hardsigmoid))
            layers.append(_conv_bn(expanded, cout, 1))
            self.block = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.block(x) if self.residual else self.block(x)

    features = [_conv_bn(3, 16, 3, 2, act=nn.Hardswish)] + [InvertedResidual(*s) for s in settings]
    features.append(_conv_bn(96, 576, 1, act=nn.Hardswish))
    head = nn.Sequential(nn.Linear(576, 1024), nn.Hardswish(), nn.Linear(1024, 1000))
    return _Classifier(nn.Sequential(*features), head)


def squeezenet1_1():
    torch, nn = _nn()

    class Fire(nn.Module):
        def __init__(self, cin, squeeze, e1, e3):
            super().__init__()
            self.squeeze = nn.Conv2d(cin, squeeze, 1)
            self.expand1, self.expand3 = nn.Conv2d(squeeze, e1, 1), nn.Conv2d(squeeze, e3, 3, padding=1)

        def forward(self, x):
            x = torch.relu(self.squeeze(x))
            return torch.cat([torch.relu(self.expand1(x)), torch.relu(self.expand3(x))], 1)

    pool = lambda: nn.MaxPool2d(3, 2, ceil_mode=True)   # noqa: E731
    features = nn.Sequential(
        nn.Conv2d(3, 64, 3, 2), nn.ReLU(), pool(), Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), pool(),
        Fire(128, 32, 128, 128), Fire(256, 32, 128, 128), pool(), Fire(256, 48, 192, 192),
        Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), Fire(512, 64, 256, 256))

    class SqueezeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.features, self.classifier = features, nn.Conv2d(512, 1000, 1)
            # He-normal weights: SqueezeNet has no normalisation to keep activations O(1).
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
                    nn.init.uniform_(m.bias, -0.1, 0.1)

        def forward(self, image):
            x = torch.relu(self.classifier(self.features(image)))
            return nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
    return SqueezeNet()


def efficientnet_b0():
    _, nn = _nn()
    # (expansion, kernel, stride, input, output, repeats): torchvision's B0 table
    settings = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
                (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1)]

    class MBConv(nn.Module):
        def __init__(self, t, kernel, stride, cin, cout):
            super().__init__()
            expanded = cin * t
            layers = [] if t == 1 else [_conv_bn(cin, expanded, 1, act=nn.SiLU)]
            layers += [_conv_bn(expanded, expanded, kernel, stride, groups=expanded, act=nn.SiLU),
                       _squeeze_excitation(expanded, max(1, cin // 4), nn.SiLU, nn.Sigmoid),
                       _conv_bn(expanded, cout, 1)]
            self.block = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.block(x) if self.residual else self.block(x)

    features = [_conv_bn(3, 32, 3, 2, act=nn.SiLU)]
    for t, k, s, cin, cout, n in settings:
        for i in range(n):
            features.append(MBConv(t, k, s if i == 0 else 1, cin if i == 0 else cout, cout))
    features.append(_conv_bn(320, 1280, 1, act=nn.SiLU))
    return _Classifier(nn.Sequential(*features), nn.Linear(1280, 1000))


# -- transformers ---------------------------------------------------------------------------------

def _attention_layer(dim, heads, ffn, pre_norm):
    torch, nn = _nn()

    class Layer(nn.Module):
        """Self-attention + MLP written out (MatMul, Softmax, LayerNormalization, Erf GELU)."""

        def __init__(self):
            super().__init__()
            self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.ff1, self.ff2 = nn.Linear(dim, ffn), nn.Linear(ffn, dim)

        def attend(self, x):
            batch, seq, _ = x.shape
            q, k, v = (t.reshape(batch, seq, heads, dim // heads).transpose(1, 2)
                       for t in self.qkv(x).split(dim, dim=-1))
            scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(dim // heads))
            context = torch.matmul(torch.softmax(scores, dim=-1), v)
            return self.out(context.transpose(1, 2).reshape(batch, seq, dim))

        def mlp(self, x):
            return self.ff2(nn.functional.gelu(self.ff1(x)))

        def forward(self, x):
            if pre_norm:                               # ViT's block
                x = x + self.attend(self.norm1(x))
                return x + self.mlp(self.norm2(x))
            x = self.norm1(x + self.attend(x))         # the encoder of "Attention is all you need"
            return self.norm2(x + self.mlp(x))
    return Layer()


def vit_block():
    """One ViT-Ti block: 197 tokens (196 patches + class token), width 192, 3 heads, MLP 768."""
    return _attention_layer(192, 3, 768, pre_norm=True)


def transformer_encoder():
    """2 post-norm layers, seq 128, hidden 256, 4 heads, FFN 1024 (bench/models.py's encoder)."""
    _, nn = _nn()
    return nn.Sequential(*(_attention_layer(256, 4, 1024, pre_norm=False) for _ in range(2)))


# -- recurrent ------------------------------------------------------------------------------------

def _recurrent(kind):
    _, nn = _nn()

    class Recurrent(nn.Module):
        """One layer over 32 steps, 64 → 128, batch 1; the initial states are inputs, so the
        export is one LSTM/GRU node without zero-state arithmetic."""

        def __init__(self):
            super().__init__()
            self.rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(64, 128)

        def forward(self, x, *state):
            sequence, final = self.rnn(x, state if kind == "lstm" else state[0])
            return (sequence, *final) if kind == "lstm" else (sequence, final)
    return Recurrent()


def _add():
    torch, nn = _nn()

    class AddOne(nn.Module):
        """One Add node: what a run costs besides the arithmetic."""

        def forward(self, a, b):
            return a + b
    return AddOne()


IMAGE = {"image": (1, 3, 224, 224)}
# name -> (module factory, input shapes, output names)
ZOO = {
    "mobilenet_v2": (mobilenet_v2, IMAGE, ["logits"]),
    "resnet18": (resnet18, IMAGE, ["logits"]),
    "mobilenet_v3_small": (mobilenet_v3_small, IMAGE, ["logits"]),
    "squeezenet1_1": (squeezenet1_1, IMAGE, ["logits"]),
    "efficientnet_b0": (efficientnet_b0, IMAGE, ["logits"]),
    "vit_block": (vit_block, {"tokens": (1, 197, 192)}, ["encoded"]),
    "transformer": (transformer_encoder, {"tokens": (1, 128, 256)}, ["encoded"]),
    "lstm": (lambda: _recurrent("lstm"), {"sequence": (32, 1, 64), "h0": (1, 1, 128), "c0": (1, 1, 128)},
             ["outputs", "hidden", "cell"]),
    "gru": (lambda: _recurrent("gru"), {"sequence": (32, 1, 64), "h0": (1, 1, 128)}, ["outputs", "hidden"]),
    "add": (_add, {"a": (1, 1000), "b": (1, 1000)}, ["sum"]),
}


def _calibrate_batch_norm(module, input_shapes: dict, torch) -> None:
    """Running statistics = one random batch's statistics (see the module docstring), and
    affine parameters near 1 and 0, so every normalised activation is O(1)."""
    norms = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    for m in norms:
        m.reset_running_stats()
        m.momentum = None                       # cumulative average: one batch's statistics exactly
        with torch.no_grad():
            m.weight.uniform_(0.5, 1.5)
            m.bias.uniform_(-0.1, 0.1)
    module.train()
    with torch.no_grad():
        module(*(torch.randn(4, *shape[1:]) for shape in input_shapes.values()))
    module.eval()


def _reset_before(model, path: Path) -> None:
    """torch's GRU applies the reset gate after the recurrent product (ONNX
    linear_before_reset=1); ONNX Runtime Web 1.30's WebNN EP ignores that attribute and
    always builds gru(resetAfter: false), so its result would differ from every other
    side's (by ~0.2 here). The zoo's GRU is therefore the other variant,
    linear_before_reset=0 (random weights either way), which all sides compute alike."""
    import onnx
    from onnx import helper

    for node in model.graph.node:
        if node.op_type == "GRU":
            kept = [a for a in node.attribute if a.name != "linear_before_reset"]
            del node.attribute[:]
            node.attribute.extend(kept + [helper.make_attribute("linear_before_reset", 0)])
    onnx.save(model, str(path))


def export_zoo(name: str, directory: Path, seed: int = SEED) -> ExportedModel:
    """Export zoo model `name` to directory/NAME.onnx (TorchScript exporter: fixed shapes, plain
    ONNX operators, LSTM/GRU one node each) and run onnxruntime CPU on its sample inputs."""
    import warnings

    import onnx
    import onnxruntime
    import torch

    torch.manual_seed(seed)
    factory, input_shapes, output_names = ZOO[name]
    module = factory()
    _calibrate_batch_norm(module, input_shapes, torch)
    module.eval()
    rng = np.random.default_rng(seed)
    inputs = {key: rng.standard_normal(shape).astype(np.float32) for key, shape in input_shapes.items()}
    path = Path(directory) / f"{name}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, tuple(torch.from_numpy(v) for v in inputs.values()), str(path),
                          input_names=list(inputs), output_names=output_names, opset_version=OPSET, dynamo=False)
    model = onnx.load(str(path))
    if name == "gru":
        _reset_before(model, path)
    onnx.checker.check_model(model)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    reference = dict(zip(output_names, session.run(output_names, inputs)))
    ops = collections.Counter(node.op_type for node in model.graph.node if node.op_type != "Constant")
    return ExportedModel(name, path, inputs, reference, ops, sum(ops.values()))
