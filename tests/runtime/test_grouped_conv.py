"""Grouped convolutions (1 < groups < channels) on the C kernels' path (specialise.py
_grouped_conv2d_nhwc: per group an im2col and a GEMM, bias / residual / activation in its
epilogue) in channels-last stacks, for every stride, dilation and padding tried, against
torch in float64 and against the unoptimised plan (numpy's grouped matmul)."""
import numpy as np
import pytest

from tests.portable.expect import assert_close
from tests.runtime.test_compiler import build, kinds, t64

torch = pytest.importorskip("torch")
F = torch.nn.functional

CASES = [  # (channels, out channels, groups, kernel, stride, dilation, padding)
    (8, 16, 2, 3, 1, 1, 1),
    (12, 12, 4, 3, 2, 1, 1),
    (16, 8, 4, 1, 1, 1, 0),           # ShuffleNet's grouped pointwise
    (6, 9, 3, (3, 2), (2, 1), (2, 1), (2, 1)),
    (32, 32, 8, 5, 1, 2, 4),
]


# The residual is the stem's output, so only a case that keeps the stem's shape takes one.
COMBINATIONS = [(case, chain) for case in CASES for chain in ("bias", "bias+relu6", "bias+hardSwish")]
COMBINATIONS.append((CASES[-1], "bias+residual+hardSwish"))


@pytest.mark.parametrize("case, chain", COMBINATIONS, ids=str)
def test_grouped_conv_in_the_c_kernels(case, chain):
    c, o, groups, kernel, stride, dilation, padding = case
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    dh, dw = (dilation, dilation) if isinstance(dilation, int) else dilation
    ph, pw = (padding, padding) if isinstance(padding, int) else padding
    rng = np.random.default_rng(c * o + groups)
    x = rng.standard_normal((1, c, 13, 12)).astype(np.float32)
    w = (rng.standard_normal((o, c // groups, kh, kw)) / np.sqrt(c // groups * kh * kw)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    stem = rng.standard_normal((c, c, 1, 1)).astype(np.float32) / np.sqrt(c)
    options = {"bias": None, "groups": groups, "strides": [sh, sw], "dilations": [dh, dw], "padding": [ph, ph, pw, pw]}
    out_h = (13 + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    out_w = (12 + 2 * pw - dw * (kw - 1) - 1) // sw + 1

    def make(g, ops):
        # a 3x3 stem first: the stack goes channels-last, as in a real network
        s = g.conv2d(ops["x"], ops["stem3"], {"padding": [1, 1, 1, 1]})
        y = g.conv2d(s, ops["w"], {**options, "bias": ops["b"]})
        if chain == "bias+relu6":
            y = g.clamp(y, {"minValue": 0, "maxValue": 6})
        elif chain == "bias+hardSwish":
            y = g.hardSwish(y)
        elif chain == "bias+residual+hardSwish":
            y = g.hardSwish(g.add(y, s))
        return {"y": y}
    stem3 = np.zeros((c, c, 3, 3), np.float32)
    stem3[:, :, 1, 1] = stem[:, :, 0, 0]
    plan, plain = build(make, {"x": x}, {"w": w, "b": b, "stem3": stem3})
    fused = {"bias": "conv2d", "bias+relu6": "conv2d+clamp", "bias+hardSwish": "conv2d+hardSwish",
             "bias+residual+hardSwish": "conv2d+add+hardSwish"}[chain]
    assert [k for k in kinds(plan) if k.startswith("conv2d")][-1] == fused and kinds(plan)[0] == "transpose", kinds(plan)
    got = plan.execute({"x": x})["y"]
    s = F.conv2d(t64(x), t64(stem3), padding=1)
    y = F.conv2d(s, t64(w), t64(b), (sh, sw), (ph, pw), (dh, dw), groups)
    if chain == "bias+relu6":
        y = torch.clamp(y, 0, 6)
    elif chain == "bias+hardSwish":
        y = F.hardswish(y)
    elif chain == "bias+residual+hardSwish":
        y = F.hardswish(y + s)
    assert_close(got, y.numpy(), atol=1e-4, what=f"grouped conv {case} {chain}")
    assert_close(got, plain.execute({"x": x})["y"], atol=1e-4, what="against numpy's grouped path")


def test_grouped_conv_takes_the_c_path(monkeypatch):
    """The step's kernel is the grouped C path: its im2col runs once per group."""
    import webnn_py.kernels
    fast = webnn_py.kernels.simd()
    if fast is None:
        pytest.skip("no C kernels on this host")
    calls = []
    original = type(fast).im2col_nhwc

    def counting(self, *a, **kw):
        calls.append(a[0].shape)
        return original(self, *a, **kw)
    monkeypatch.setattr(type(fast), "im2col_nhwc", counting)
    x = np.ones((1, 8, 6, 6), np.float32)
    w = np.ones((8, 2, 3, 3), np.float32)
    stem3 = np.zeros((8, 8, 3, 3), np.float32)
    plan, _ = build(lambda g, o: {"y": g.conv2d(g.conv2d(o["x"], o["s"], {"padding": [1] * 4}), o["w"],
                                               {"groups": 4})}, {"x": x}, {"w": w, "s": stem3})
    calls.clear()
    plan.execute({"x": x})
    assert calls.count((6, 6, 2)) == 4, calls           # four groups of 2 channels
