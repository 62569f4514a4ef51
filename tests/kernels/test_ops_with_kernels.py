"""The operators' kernel paths (the ones Pyodide takes with kernels.wasm) run on the
host with the natively built C kernels standing in, against torch in float64:
conv2d's pointwise / im2col / depthwise paths in both layouts with and without bias,
matmul (batched, broadcast) and gemm, through real graphs."""
import numpy as np
import pytest
import torch

import webnn_py.kernels
from tests.ops.conftest import run
from tests.portable.expect import assert_close
from webnn_py.ops.convolution import Conv2dPlan

F = torch.nn.functional
RNG = np.random.default_rng(99)


COUNTED = {"gemm": "gemm", "gemm_batch": "gemm", "depthwise_nhwc": "depthwise", "clamp": "clamp", "im2col_nhwc": "im2col",
           "softmax_rows": "softmax", "gelu": "gelu", "layernorm_rows": "layernorm"}


@pytest.fixture
def with_native(native, monkeypatch):
    calls = []

    def note_gemm(kw):
        calls.append("gemm")
        calls.append(("epilogue",) + tuple(k for k in ("bias_n", "residual", "clamp") if kw.get(k) is not None))

    class Counting:
        """The native kernels, each call of a counted one noted under its label; the GEMM
        and depthwise calls also note what went into their epilogue, e.g.
        ("epilogue", "bias_n", "residual")."""
        name = "native"

        def __getattr__(self, attr):
            method = getattr(native, attr)
            if attr == "bind_gemm":           # a constant right operand's GEMM, bound at build
                def bind(*a, **kw):
                    run = method(*a, **kw)

                    def counted_run(a, out, bias_m=None, bias_n=None, residual=None, clamp=None):
                        note_gemm({"bias_n": bias_n, "residual": residual, "clamp": clamp})
                        return run(a, out, bias_m, bias_n, residual, clamp)
                    return counted_run
                return bind
            label = COUNTED.get(attr)
            if label is None:                 # pack_b, ...: not a computation
                return method

            def counted(*a, **kw):
                if attr == "gemm":
                    note_gemm(kw)
                    return method(*a, **kw)
                calls.append(label)
                if attr == "depthwise_nhwc":
                    calls.append(("depthwise epilogue", kw.get("clamp")))
                return method(*a, **kw)
            return counted

    monkeypatch.setattr(webnn_py.kernels, "available", lambda: Counting())
    return calls


CASES = [  # (c, size, o, groups, kernel, stride, dilation, padding, expected kernel call)
    (16, 9, 24, 1, 1, 1, 1, (0, 0, 0, 0), "gemm"),
    (16, 9, 24, 1, 1, 2, 1, (0, 0, 0, 0), "gemm"),
    (3, 17, 8, 1, 3, 2, 1, (0, 1, 0, 1), "gemm"),
    (5, 11, 7, 1, (3, 2), (1, 2), (2, 1), (2, 1, 0, 3), "gemm"),
    (12, 10, 12, 12, 3, 1, 1, (1, 1, 1, 1), "depthwise"),
    (20, 13, 20, 20, 3, 2, 1, (0, 1, 0, 1), "depthwise"),
    (8, 12, 8, 8, 5, 1, 2, (4, 4, 4, 4), "depthwise"),
    (8, 10, 16, 8, 3, 1, 1, (1, 1, 1, 1), None),          # grouped: numpy
]


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[-1]}-{c[0]}x{c[1]}x{c[2]}x{c[3]}")
@pytest.mark.parametrize("batches", [1, 2])
@pytest.mark.parametrize("with_bias", [False, True])
def test_conv2d_through_the_kernels(with_native, case, layout, batches, with_bias, monkeypatch):
    c, size, o, groups, k, stride, dilation, padding, expect = case
    monkeypatch.setattr(Conv2dPlan, "BLOCK_ELEMENTS", 64)   # several im2col blocks per image
    k, stride, dilation = _pair(k), _pair(stride), _pair(dilation)
    x = RNG.standard_normal((batches, c, size, size)).astype(np.float32)
    w = RNG.standard_normal((o, c // groups, *k)).astype(np.float32)
    bias = RNG.standard_normal(o).astype(np.float32) if with_bias else None
    xt = F.pad(torch.from_numpy(x).double(), (padding[2], padding[3], padding[0], padding[1]))
    ref = F.conv2d(xt, torch.from_numpy(w).double(), None if bias is None else torch.from_numpy(bias).double(),
                   stride=stride, dilation=dilation, groups=groups).numpy()
    options = {"padding": list(padding), "strides": list(stride), "dilations": list(dilation), "groups": groups,
               "inputLayout": layout}
    if layout == "nhwc":
        x, ref = np.ascontiguousarray(x.transpose(0, 2, 3, 1)), ref.transpose(0, 2, 3, 1)
    constants = {"w": w} | ({"b": bias} if with_bias else {})
    got = run(lambda g, op: g.conv2d(op["x"], op["w"], options | ({"bias": op["b"]} if with_bias else {})),
              {"x": x}, constants)
    assert_close(got, ref, atol=1e-4)
    if expect is not None:
        # (an NCHW depthwise conv too: the compiler's layout pass runs it channels-last)
        assert expect in with_native
    if expect == "gemm" and k != (1, 1) and layout == "nhwc" and batches == 1:
        assert "im2col" in with_native


def test_conv2d_relu6_chain_and_float16(with_native):
    """MobileNet's conv + bias + clamp(0, 6) (fused by the compiler, the clamp in the depthwise
    kernel's epilogue: no separate clamp pass), and float16 (computed in float32)."""
    x = RNG.standard_normal((1, 7, 7, 8)).astype(np.float32)
    w = RNG.standard_normal((8, 1, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(8).astype(np.float32)
    ref = F.conv2d(F.pad(torch.from_numpy(x.transpose(0, 3, 1, 2)).double(), (1, 1, 1, 1)),
                   torch.from_numpy(w).double(), torch.from_numpy(b).double(), groups=8).clamp(0, 6)
    ref = ref.numpy().transpose(0, 2, 3, 1)
    options = {"padding": [1, 1, 1, 1], "groups": 8, "inputLayout": "nhwc"}
    got = run(lambda g, op: g.clamp(g.conv2d(op["x"], op["w"], options | {"bias": op["b"]}),
                                    {"minValue": 0, "maxValue": 6}), {"x": x}, {"w": w, "b": b})
    assert_close(got, ref, atol=1e-4)
    assert ("depthwise epilogue", (0, 6)) in with_native and "clamp" not in with_native
    got = run(lambda g, op: g.conv2d(op["x"], op["w"], options | {"bias": op["b"]}),
              {"x": x.astype(np.float16)}, {"w": w.astype(np.float16), "b": b.astype(np.float16)})
    assert got.dtype == np.float16


@pytest.mark.parametrize("a_shape,b_shape", [((5, 7), (7, 3)), ((2, 3, 9, 16), (16, 8)), ((4, 17, 8), (4, 8, 33)),
                                             ((2, 1, 6, 5), (3, 5, 4)), ((1, 1), (1, 1))])
@pytest.mark.parametrize("constant_b", [False, True])
def test_matmul_through_the_kernel(with_native, a_shape, b_shape, constant_b):
    a = RNG.standard_normal(a_shape).astype(np.float32)
    b = RNG.standard_normal(b_shape).astype(np.float32)
    ref = torch.matmul(torch.from_numpy(a).double(), torch.from_numpy(b).double()).numpy()
    if constant_b:
        got = run(lambda g, op: g.matmul(op["a"], op["b"]), {"a": a}, {"b": b})
    else:
        got = run(lambda g, op: g.matmul(op["a"], op["b"]), {"a": a, "b": b})
    assert_close(got, ref, atol=1e-4)
    assert "gemm" in with_native


@pytest.mark.parametrize("a_t,b_t", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_through_the_kernel(with_native, a_t, b_t):
    a = RNG.standard_normal((6, 11) if not a_t else (11, 6)).astype(np.float32)
    b = RNG.standard_normal((11, 9) if not b_t else (9, 11)).astype(np.float32)
    c = RNG.standard_normal(9).astype(np.float32)
    at, bt = (a.T if a_t else a).astype(np.float64), (b.T if b_t else b).astype(np.float64)
    ref = 0.5 * at @ bt + 2.0 * c
    options = {"aTranspose": a_t, "bTranspose": b_t, "alpha": 0.5, "beta": 2.0}
    got = run(lambda g, op: g.gemm(op["a"], op["b"], options | {"c": op["c"]}), {"a": a, "b": b, "c": c})
    assert_close(got, ref, atol=1e-4)
    assert "gemm" in with_native


def test_transformer_mlp_chain_through_the_kernels(with_native):
    """matmul + add + gelu (fused by the compiler; gelu in the gelu kernel), and a lone gelu,
    against torch's exact (erf) gelu in float64; float16 gelu keeps the numpy path."""
    x = RNG.standard_normal((16, 32)).astype(np.float32)
    w = (RNG.standard_normal((32, 64)) / 4).astype(np.float32)
    b = RNG.standard_normal(64).astype(np.float32)
    ref = F.gelu(torch.from_numpy(x).double() @ torch.from_numpy(w).double() + torch.from_numpy(b).double()).numpy()
    got = run(lambda g, op: g.gelu(g.add(g.matmul(op["x"], op["w"]), op["b"])), {"x": x}, {"w": w, "b": b})
    assert_close(got, ref, atol=1e-5)
    assert with_native.count("gelu") == 1 and "gemm" in with_native
    got = run(lambda g, op: g.gelu(op["x"]), {"x": x})
    assert_close(got, F.gelu(torch.from_numpy(x).double()).numpy(), ulp=1)
    with_native.clear()
    run(lambda g, op: g.gelu(op["x"]), {"x": x.astype(np.float16)})
    assert "gelu" not in with_native


@pytest.mark.parametrize("axis", [1, 2, 0])
def test_softmax_through_the_kernel(with_native, axis):
    x = (RNG.standard_normal((4, 8, 33)) * 5).astype(np.float32)
    ref = torch.softmax(torch.from_numpy(x).double(), dim=axis).numpy()
    got = run(lambda g, op: g.softmax(op["x"], axis), {"x": x})
    assert_close(got, ref, ulp=1)
    assert ("softmax" in with_native) == (axis == 2)      # only the last, contiguous axis


@pytest.mark.parametrize("bias_first", [True, False])
def test_bias_and_residual_adds_in_the_gemm_epilogue(with_native, bias_first):
    """A transformer's linear + residual: matmul, add(constant bias), add(residual), then
    gelu. The compiler hands both adds to the GEMM's epilogue, whose float32 additions are
    the separate adds' own: bit for bit the unfused graph (checked against numpy doing
    the adds one by one on the same product) and close to torch in float64. With the
    bias given as (1, 1, n) and the adds' operands swapped, the same; a bias after the
    residual would change the order of the additions, so it stays a separate step."""
    x = RNG.standard_normal((2, 8, 32)).astype(np.float32)
    w = (RNG.standard_normal((32, 24)) / 4).astype(np.float32)
    b = RNG.standard_normal(24).astype(np.float32)
    r = RNG.standard_normal((2, 8, 24)).astype(np.float32)

    def build(g, op):
        y = g.matmul(op["x"], op["w"])
        if bias_first:
            return g.gelu(g.add(op["r"], g.add(op["b"], y)))
        return g.gelu(g.add(g.add(y, op["r"]), op["b"]))

    bias = b.reshape(1, 1, 24) if bias_first else b
    got = run(build, {"x": x, "r": r}, {"w": w, "b": bias})
    xt, wt = torch.from_numpy(x).double(), torch.from_numpy(w).double()
    bt, rt = torch.from_numpy(b).double(), torch.from_numpy(r).double()
    ref = F.gelu(xt @ wt + bt + rt).numpy()
    assert_close(got, ref, atol=1e-5)
    epilogues = [c for c in with_native if isinstance(c, tuple)]
    assert epilogues == [("epilogue", "bias_n", "residual")] if bias_first else [("epilogue", "residual")]
    # Bit for bit the unfused float32 arithmetic: the same GEMM, then each add rounded.
    with_native.clear()
    product = run(lambda g, op: g.matmul(op["x"], op["w"]), {"x": x}, {"w": w})
    unfused = ((product + b) + r) if bias_first else ((product + r) + b)
    fused_pre_gelu = run(lambda g, op: g.add(g.add(g.matmul(op["x"], op["w"]), op["b"]), op["r"]) if bias_first
                         else g.add(g.add(g.matmul(op["x"], op["w"]), op["r"]), op["b"]),
                         {"x": x, "r": r}, {"w": w, "b": b})
    np.testing.assert_array_equal(fused_pre_gelu, unfused)


def test_conv_residual_in_the_gemm_epilogue(with_native):
    """MobileNet's projection conv (1x1, bias) + residual add: the add in the GEMM epilogue."""
    x = RNG.standard_normal((1, 6, 5, 16)).astype(np.float32)
    w = RNG.standard_normal((8, 1, 1, 16)).astype(np.float32)       # ohwi
    b = RNG.standard_normal(8).astype(np.float32)
    r = RNG.standard_normal((1, 6, 5, 8)).astype(np.float32)
    options = {"inputLayout": "nhwc", "filterLayout": "ohwi"}
    got = run(lambda g, op: g.add(g.conv2d(op["x"], op["w"], options | {"bias": op["b"]}), op["r"]),
              {"x": x, "r": r}, {"w": w, "b": b})
    ref = (torch.from_numpy(x).double().reshape(30, 16) @ torch.from_numpy(w).double().reshape(8, 16).T
           + torch.from_numpy(b).double()).numpy().reshape(1, 6, 5, 8) + r
    assert_close(got, ref, atol=1e-5)
    assert [c for c in with_native if isinstance(c, tuple)] == [("epilogue", "bias_n", "residual")]


def test_clamp_in_the_gemm_epilogue_is_the_separate_clamp(with_native):
    """conv2d 1x1 + residual + relu, and matmul + bias + clamp: the clamp in the GEMM's
    epilogue gives bit for bit what the clamp operator gives on the unfused result."""
    x = RNG.standard_normal((1, 4, 5, 16)).astype(np.float32)
    w = RNG.standard_normal((8, 1, 1, 16)).astype(np.float32)
    b = RNG.standard_normal(8).astype(np.float32)
    r = RNG.standard_normal((1, 4, 5, 8)).astype(np.float32)
    options = {"inputLayout": "nhwc", "filterLayout": "ohwi"}
    fused = run(lambda g, op: g.relu(g.add(g.conv2d(op["x"], op["w"], options | {"bias": op["b"]}), op["r"])),
                {"x": x, "r": r}, {"w": w, "b": b})
    assert [c for c in with_native if isinstance(c, tuple)] == [("epilogue", "bias_n", "residual", "clamp")]
    unfused = run(lambda g, op: g.add(g.conv2d(op["x"], op["w"], options | {"bias": op["b"]}), op["r"]),
                  {"x": x, "r": r}, {"w": w, "b": b})
    np.testing.assert_array_equal(fused, np.maximum(unfused, np.float32(0)))
    a = RNG.standard_normal((12, 16)).astype(np.float32)
    m = RNG.standard_normal((16, 8)).astype(np.float32)
    with_native.clear()
    fused = run(lambda g, op: g.clamp(g.add(g.matmul(op["a"], op["m"]), op["b"]), {"minValue": -0.5, "maxValue": 0.75}),
                {"a": a}, {"m": m, "b": b})
    assert [c for c in with_native if isinstance(c, tuple)] == [("epilogue", "bias_n", "clamp")]
    unfused = run(lambda g, op: g.add(g.matmul(op["a"], op["m"]), op["b"]), {"a": a}, {"m": m, "b": b})
    np.testing.assert_array_equal(fused, np.minimum(np.maximum(unfused, np.float32(-0.5)), np.float32(0.75)))


@pytest.mark.parametrize("axes,with_affine", [([2], True), ([2], False), ([1, 2], True), ([1], True)])
def test_layer_normalization_through_the_kernel(with_native, axes, with_affine):
    """layerNormalization over the last axis takes the row kernel (others keep numpy),
    against torch in float64."""
    x = (RNG.standard_normal((2, 6, 40)) * 2 + 1).astype(np.float32)
    shape = [x.shape[a] for a in axes]
    scale = RNG.uniform(0.5, 1.5, shape).astype(np.float32)
    bias = RNG.standard_normal(shape).astype(np.float32)
    options = {"axes": axes, "epsilon": 1e-3}
    constants = {"s": scale, "b": bias} if with_affine else {}
    got = run(lambda g, op: g.layerNormalization(op["x"], options | ({"scale": op["s"], "bias": op["b"]}
                                                                    if with_affine else {})), {"x": x}, constants)
    xt = torch.from_numpy(x).double()
    dims = tuple(axes)
    mean = xt.mean(dim=dims, keepdim=True)
    var = ((xt - mean) ** 2).mean(dim=dims, keepdim=True)
    ref = (xt - mean) / torch.sqrt(var + float(np.float32(1e-3)))
    if with_affine:
        view = [1] * 3
        for a in axes:
            view[a] = x.shape[a]
        ref = ref * torch.from_numpy(scale).double().reshape(view) + torch.from_numpy(bias).double().reshape(view)
    if axes == [2]:
        assert_close(got, ref.numpy(), ulp=1, what="layerNormalization")   # double inside, one rounding
    else:   # the numpy path in float32: tests/ops/test_normalization.py's budget
        ulps = 8 + 2 * int(np.prod(shape))
        assert_close(got, ref.numpy(), atol=ulps * np.finfo(np.float32).eps * float(np.abs(ref.numpy()).max()))
    assert ("layernorm" in with_native) == (axes == [2])
