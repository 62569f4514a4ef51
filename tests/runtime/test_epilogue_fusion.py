"""Fusion of the CNN activations into the C kernels' epilogues (fusion.py _into_epilogue,
kernels.c activate4): hardSwish and hardSigmoid after a convolution bit for bit as the
unfused plan computes them, sigmoid and SiLU (mul(y, sigmoid(y)), either operand order)
within a few ULP of it, and all of them against torch in float64."""
import numpy as np
import pytest

from tests.portable.expect import assert_close, ulp_distance
from webnn_py.ops import operator_kind
from webnn_py.ops.activations import _hard_sigmoid, _hard_swish
from tests.runtime.test_compiler import SIGMOID_ULP, assert_same_bits, build, kinds, t64

torch = pytest.importorskip("torch")
F = torch.nn.functional

ACTIVATIONS = {  # builder call, torch reference, the operators' numpy kernels, bit-exact?
    "hardSwish": (lambda g, y: g.hardSwish(y), F.hardswish, lambda y: _hard_swish(y), True),
    "hardSigmoid": (lambda g, y: g.hardSigmoid(y, {"alpha": 1 / 6, "beta": 0.5}), F.hardsigmoid,
                    lambda y: _hard_sigmoid(y, np.float32(1 / 6), np.float32(0.5)), True),
    "sigmoid": (lambda g, y: g.sigmoid(y), torch.sigmoid, lambda y: _sigmoid(y), False),
    "silu": (lambda g, y: g.mul(y, g.sigmoid(y)), F.silu, lambda y: y * _sigmoid(y), False),
    "silu-swapped": (lambda g, y: g.mul(g.sigmoid(y), y), F.silu, lambda y: _sigmoid(y) * y, False),
}


def _sigmoid(y):
    return operator_kind("sigmoid").kernel([y], {}, None)[0]


@pytest.mark.parametrize("pointwise", [False, True], ids=["depthwise", "pointwise"])
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_conv_takes_the_activation_into_its_epilogue(name, pointwise):
    """A depthwise conv (so the stack runs channels-last in the C kernels), optionally
    followed by a 1x1 conv, then the activation: fused into the last conv's step. Against
    the same plan without the activation, whose result the operator's numpy kernel then
    takes, and against torch."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 8, 9, 11)).astype(np.float32) * 3
    weights = {"wd": rng.standard_normal((8, 1, 3, 3)).astype(np.float32), "bd": rng.standard_normal(8).astype(np.float32),
               "wp": rng.standard_normal((12, 8, 1, 1)).astype(np.float32) * 0.5,
               "bp": rng.standard_normal(12).astype(np.float32)}
    act, reference, numpy_kernel, exact = ACTIVATIONS[name]

    def convs(g, o):
        y = g.conv2d(o["x"], o["wd"], {"bias": o["bd"], "groups": 8, "padding": [1, 1, 1, 1]})
        return g.conv2d(y, o["wp"], {"bias": o["bp"]}) if pointwise else y
    plan, _ = build(lambda g, o: {"y": act(g, convs(g, o))}, {"x": x}, weights)
    before, _ = build(lambda g, o: {"y": convs(g, o)}, {"x": x}, weights)
    suffix = "+sigmoid+mul" if name.startswith("silu") else f"+{name}"
    assert kinds(plan).count(f"conv2d{suffix}") == 1, kinds(plan)
    got = plan.execute({"x": x})["y"]
    with np.errstate(all="ignore"):
        want = numpy_kernel(before.execute({"x": x})["y"])
    if exact:
        assert_same_bits(got, want)
    else:                       # SiLU: the sigmoid's ULP, then one product rounded
        assert ulp_distance(got, want).max() <= SIGMOID_ULP + (1 if name.startswith("silu") else 0)
    y = F.conv2d(t64(x), t64(weights["wd"]), t64(weights["bd"]), padding=1, groups=8)
    if pointwise:
        y = F.conv2d(y, t64(weights["wp"]), t64(weights["bp"]))
    assert_close(got, reference(y).numpy(), atol=1e-4, what=name)


def test_silu_on_a_graph_input_is_one_step_with_the_unfused_bits():
    x = np.linspace(-20, 20, 3 * 50, dtype=np.float32).reshape(3, 50)
    plan, plain = build(lambda g, o: {"y": g.mul(o["x"], g.sigmoid(o["x"]))}, {"x": x})
    assert kinds(plan) == ["sigmoid+mul"]
    assert_same_bits(plan.execute({"x": x})["y"], plain.execute({"x": x})["y"])


def test_sigmoid_read_twice_is_not_taken_as_silu():
    x = np.linspace(-5, 5, 40, dtype=np.float32).reshape(4, 10)

    def make(g, o):
        s = g.sigmoid(o["x"])
        return {"y": g.mul(o["x"], s), "s": s}
    plan, plain = build(make, {"x": x})
    assert "sigmoid+mul" not in kinds(plan)
    for key in ("y", "s"):
        assert_same_bits(plan.execute({"x": x})[key], plain.execute({"x": x})[key])
