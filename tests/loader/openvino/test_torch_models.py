"""Whole models end to end: small torch networks in the style of torchvision's
architectures (written here: a VGG-like conv/bn/relu/pool/linear stack, a
ResNet basic block, a MobileNet-style depthwise separable block with hardswish
and squeeze-excitation) and a transformer encoder layer, converted to IR with
openvino.convert_model, loaded through MLModelLoader and compared with
OpenVINO's CPU plugin (f32)."""
from __future__ import annotations

import numpy as np
import pytest

from .helpers import compare

ov = pytest.importorskip("openvino")
torch = pytest.importorskip("torch")
nn = torch.nn


class VggLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2, ceil_mode=True),
            nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(16 * 2 * 2, 32), nn.ReLU(), nn.Dropout(),
                                        nn.Linear(32, 10), nn.Softmax(dim=1))

    def forward(self, x):
        return self.classifier(self.features(x))


class BasicBlock(nn.Module):
    """ResNet's basic block with a strided projection shortcut."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.down(x))


class ResNetLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 7, 2, 3, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        self.layer1 = BasicBlock(8, 8, 1)
        self.layer2 = BasicBlock(8, 16, 2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.layer2(self.layer1(self.stem(x)))), 1))


class MobileBlock(nn.Module):
    """MobileNetV3-style: expand 1x1, depthwise 3x3, squeeze-excitation, project 1x1, residual."""

    def __init__(self, c, expand):
        super().__init__()
        hidden = c * expand
        self.expand = nn.Sequential(nn.Conv2d(c, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.Hardswish())
        self.depthwise = nn.Sequential(nn.Conv2d(hidden, hidden, 3, 1, 1, groups=hidden, bias=False),
                                       nn.BatchNorm2d(hidden), nn.Hardswish())
        self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(hidden, 4, 1), nn.ReLU(),
                                nn.Conv2d(4, hidden, 1), nn.Hardsigmoid())
        self.project = nn.Sequential(nn.Conv2d(hidden, c, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        y = self.depthwise(self.expand(x))
        return x + self.project(y * self.se(y))


class MobileNetLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU6())
        self.blocks = nn.Sequential(MobileBlock(8, 3), MobileBlock(8, 2))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 6))

    def forward(self, x):
        up = nn.functional.interpolate(self.blocks(self.stem(x)), scale_factor=2, mode="bilinear",
                                       align_corners=False)
        return self.head(up), up


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation="gelu", batch_first=True)
        self.norm = nn.LayerNorm(32)

    def forward(self, x):
        return self.norm(self.layer(x))


def _randomise_batchnorm(module: nn.Module, rng: np.random.Generator) -> None:
    """Running statistics far from (0, 1), so folding them wrong would show."""
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.from_numpy(rng.standard_normal(n).astype(np.float32) * 0.3))
            m.running_var.copy_(torch.from_numpy(rng.uniform(0.5, 2.0, n).astype(np.float32)))
            m.weight.data.copy_(torch.from_numpy(rng.uniform(0.5, 1.5, n).astype(np.float32)))
            m.bias.data.copy_(torch.from_numpy(rng.standard_normal(n).astype(np.float32) * 0.1))


MODELS = {
    "vgg-like": (VggLike, (1, 3, 16, 16)),
    "resnet-like": (ResNetLike, (2, 3, 32, 32)),
    "mobilenet-like": (MobileNetLike, (1, 3, 24, 24)),
    "transformer-encoder": (Encoder, (2, 10, 32)),
}


def converted(name: str):
    """(the torch module, its IR model from openvino.convert_model, feeds) of MODELS[name]."""
    make, shape = MODELS[name]
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    module = make()
    _randomise_batchnorm(module, rng)
    module.eval()
    x = rng.standard_normal(shape).astype(np.float32)
    fastpath = torch.backends.mha.get_fastpath_enabled()
    # The encoder's inference fast path is one fused op that tracing sees differently per call.
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        model = ov.convert_model(module, example_input=torch.from_numpy(x), input=[("x", list(shape))])
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
    for index, output in enumerate(model.outputs):
        output.get_tensor().set_names({f"out{index}"})     # converted outputs may have no names
    return module, model, {"x": x}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_torch_model_converted_to_ir_matches_openvino(tmp_path, name):
    module, model, feeds = converted(name)
    got = compare(model, tmp_path, feeds)
    with torch.no_grad():
        expected = module(torch.from_numpy(feeds["x"]))
    expected = expected if isinstance(expected, tuple) else (expected,)
    # The same outputs as torch too (its own arithmetic, so a looser tolerance).
    for value in expected:
        matches = [v for v in got.values() if v.shape == tuple(value.shape)]
        assert any(np.allclose(v, value.numpy(), rtol=0, atol=1e-4) for v in matches)
