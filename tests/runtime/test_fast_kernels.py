"""The fast kernels: every conv2d path (pointwise GEMM, blocked im2col, direct, depthwise,
grouped) in both layouts against torch in float64, and erf/erfc/gelu against
Python's math.erf/math.erfc over dense sweeps."""
import math

import numpy as np
import pytest

from tests.ops.conftest import run
from tests.portable.expect import assert_close
from webnn_py import kernels
from webnn_py.ops.convolution import Conv2dPlan
from webnn_py.ops.elementwise_unary import erf, erfc, erfc_nonnegative

torch = pytest.importorskip("torch")
F = torch.nn.functional

# (input channels, size, output channels, groups, kernel, stride, dilation, padding, expected path)
CASES = [
    (16, 9, 24, 1, 1, 1, 1, (0, 0, 0, 0), "pointwise"),
    (16, 9, 24, 1, 1, 2, 1, (0, 0, 0, 0), "im2col"),          # 1x1 with stride: not a plain GEMM
    (3, 17, 8, 1, 3, 2, 1, (0, 1, 0, 1), "image"),             # im2col, or direct (_expected_path)
    (3, 19, 20, 1, 3, (2, 1), (1, 2), (1, 1, 2, 2), "image"),
    (5, 11, 7, 1, (3, 2), (1, 2), (2, 1), (2, 1, 0, 3), "im2col"),
    (12, 10, 12, 12, 3, 1, 1, (1, 1, 1, 1), "depthwise"),
    (12, 13, 12, 12, 3, 2, 1, (0, 1, 0, 1), "depthwise"),
    (8, 12, 8, 8, 5, 1, 2, (4, 4, 4, 4), "depthwise"),
    (8, 10, 16, 8, 3, 1, 1, (1, 1, 1, 1), "grouped"),          # depth multiplier 2
    (12, 9, 6, 3, 3, 1, 1, (1, 1, 1, 1), "grouped"),
]


def _expected_path(path: str, layout: str, batches: int, out_channels: int) -> str:
    """An "image" case (3 input channels, groups 1) takes the direct path on one NHWC image
    where the C kernels allow its output channels (the host's), else im2col."""
    if path != "image":
        return path
    fast = kernels.simd()
    direct = (layout == "nhwc" and batches == 1 and fast is not None and out_channels % 4 == 0
              and out_channels <= fast.direct_conv2d_max_out)
    return "direct" if direct else "im2col"


def _pair(v):
    return (v, v) if isinstance(v, int) else v


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c[-1] + "-" + "x".join(map(str, c[:4])))
@pytest.mark.parametrize("batches", [1, 2])
def test_conv2d_paths_against_torch(case, layout, batches, monkeypatch):
    c, size, o, groups, k, stride, dilation, padding, path = case
    # A tiny im2col block forces several blocks per image.
    monkeypatch.setattr(Conv2dPlan, "BLOCK_ELEMENTS", 64)
    rng = np.random.default_rng(c * 100 + size)
    (kh, kw), (sh, sw), (dh, dw) = _pair(k), _pair(stride), _pair(dilation)
    x = rng.standard_normal((batches, c, size, size)).astype(np.float32)
    w = rng.standard_normal((o, c // groups, kh, kw)).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    pt, pb, pl, pr = padding
    ref = F.conv2d(F.pad(torch.from_numpy(x).double(), (pl, pr, pt, pb)), torch.from_numpy(w).double(),
                   torch.from_numpy(bias).double(), stride=(sh, sw), dilation=(dh, dw), groups=groups).numpy()
    attrs = {"inputLayout": layout, "groups": groups, "padding": list(padding), "strides": [sh, sw],
             "dilations": [dh, dw]}
    xin = x if layout == "nchw" else np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    expected = ref if layout == "nchw" else ref.transpose(0, 2, 3, 1)
    plan = Conv2dPlan(xin.shape, w, attrs, expected.shape)
    path = _expected_path(path, layout, batches, o)
    assert plan.path == path
    y = plan(xin)
    plan.add_bias(y, bias)
    assert y.dtype == np.float32 and y.flags.c_contiguous
    assert_close(y, expected, atol=1e-4, what=f"{path} {layout}")

    # The same through the API (filter a constant: specialised at build), float32 and float16.
    options = {"padding": list(padding), "strides": [sh, sw], "dilations": [dh, dw], "groups": groups,
               "inputLayout": layout, "filterLayout": "oihw"}
    got = run(lambda g, op: g.conv2d(op["x"], op["w"], {**options, "bias": op["b"]}), {"x": xin},
              {"w": w, "b": bias})
    assert_close(got, expected, atol=1e-4, what=f"conv2d {path} {layout}")
    x16, w16, b16 = xin.astype(np.float16), w.astype(np.float16), bias.astype(np.float16)
    got16 = run(lambda g, op: g.conv2d(op["x"], op["w"], {**options, "bias": op["b"]}), {"x": x16},
                {"w": w16, "b": b16})
    x64 = x16.astype(np.float64) if layout == "nchw" else x16.astype(np.float64).transpose(0, 3, 1, 2)
    ref16 = F.conv2d(F.pad(torch.from_numpy(x64), (pl, pr, pt, pb)), torch.from_numpy(w16.astype(np.float64)),
                     torch.from_numpy(b16.astype(np.float64)), stride=(sh, sw), dilation=(dh, dw),
                     groups=groups).numpy()
    ref16 = ref16 if layout == "nchw" else ref16.transpose(0, 2, 3, 1)
    # float32 accumulation rounded once to float16: within 1 float16 ULP plus the sum's error.
    assert got16.dtype == np.float16
    assert_close(got16, ref16, atol=np.abs(ref16).max() * 2 ** -10 + 1e-3, what=f"conv2d float16 {path}")


def test_conv2d_with_a_filter_computed_at_run_time(rng=np.random.default_rng(4)):
    # The filter is a graph input: no build-time layout, the same paths per call.
    x = rng.standard_normal((1, 6, 7, 7)).astype(np.float32)
    w = rng.standard_normal((6, 1, 3, 3)).astype(np.float32)
    got = run(lambda g, op: g.conv2d(op["x"], op["w"], {"groups": 6, "padding": [1, 1, 1, 1]}),
              {"x": x, "w": w})
    ref = F.conv2d(torch.from_numpy(x).double(), torch.from_numpy(w).double(), padding=1, groups=6).numpy()
    assert_close(got, ref, atol=1e-4)


# -- erf / erfc / gelu ---------------------------------------------------------------------------

def test_erfc_nonnegative_relative_error_over_a_dense_sweep():
    z = np.concatenate([np.linspace(0, 10.99, 400_001), np.geomspace(1e-300, 1e-3, 2000)])
    got = erfc_nonnegative(z)
    ref = np.array([math.erfc(v) for v in z.tolist()])
    assert np.max(np.abs(got - ref) / ref) < 1e-9


def test_erf_and_erfc_relative_error_over_a_dense_sweep():
    x = np.concatenate([np.linspace(-12, 12, 400_001), np.geomspace(1e-310, 0.6, 3000),
                        -np.geomspace(1e-310, 0.6, 3000)])
    got = erf(x)
    ref = np.array([math.erf(v) for v in x.tolist()])
    nonzero = ref != 0
    assert np.max(np.abs(got - ref)[nonzero] / np.abs(ref[nonzero])) < 1e-9
    got_c = erfc(x)
    ref_c = np.array([math.erfc(v) for v in x.tolist()])
    tiny = ref_c > 1e-290                      # erfc underflows past 26; we return 0 from 11 on
    rel = np.abs(got_c - ref_c)[tiny & (np.abs(x) < 11)] / ref_c[tiny & (np.abs(x) < 11)]
    assert rel.max() < 1e-9
    far = erfc(np.array([11.0, 20.0, 30.0, np.inf, np.nan]))
    assert 0 < far[0] < 1e-52 and 0 <= far[1] < 1e-52     # 0 in every WebNN type
    assert far[2] == far[3] == 0 and np.isnan(far[4])


def test_erf_special_values():
    got = erf(np.array([0.0, -0.0, np.inf, -np.inf, np.nan]))
    assert got[0] == 0 and not np.signbit(got[0])
    assert got[1] == 0 and np.signbit(got[1])
    assert got[2:4].tolist() == [1.0, -1.0]
    assert np.isnan(got[4])


def test_gelu_float32_within_one_ulp_over_a_dense_sweep():
    x = np.linspace(-16, 8, 200_001).astype(np.float32)
    got = run(lambda g, op: g.gelu(op["x"]), {"x": x})
    ref = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64).tolist()])
    assert_close(got, ref, ulp=1, what="gelu")
