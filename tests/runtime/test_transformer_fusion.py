"""What ONNX Runtime Web's WebNN EP builds for a transformer (its Gemm for MatMul + Add,
with reshapes between 2-D gemms and the 3-D graph; attention's matmuls of computed
operands) through the compiler: gemm with a constant b in the C GEMM with its bias in the
epilogue (specialise.py _gemm, _rows_gemm), reshapes and the context's transpose written
by their producers (fusion.py _absorb_view), the residual add and attention's scale in the
epilogue, q kᵀ and p v one GEMM per head (specialise.py _matmul_computed). Against torch
in float64 and the unoptimised plan, with both GEMMs: the host's (BLAS + the C epilogue)
and kernels.c's own sgemm (what runs in Pyodide)."""
import math

import numpy as np
import pytest

import webnn_py.kernels as kernels_module
from tests.kernels.conftest import build_kernels
from tests.portable.expect import assert_close
from tests.runtime.test_compiler import assert_same_bits, build, kinds, t64
from webnn_py.kernels import NATIVE_LIBRARY, Kernels, native_library

torch = pytest.importorskip("torch")
F = torch.nn.functional
RNG = np.random.default_rng(17)


@pytest.fixture(params=["host", "c-sgemm"])
def gemm_path(request, monkeypatch):
    """'host': webnn_py.kernels.simd() as it is on the host (BLAS + the C epilogue);
    'c-sgemm': kernels.c's own sgemm and pack_b (the wasm code, built natively)."""
    if request.param == "c-sgemm":
        build_kernels()
        own = Kernels(native_library(NATIVE_LIBRARY), "native")
        monkeypatch.setattr(kernels_module, "simd", lambda: own)
    elif kernels_module.simd() is None:
        pytest.skip("no native kernels: run ./dev setup")
    return request.param


def _f32(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


C_SHAPES = {"[n]": lambda m, n: (n,), "[1,n]": lambda m, n: (1, n), "[m,1]": lambda m, n: (m, 1),
            "scalar": lambda m, n: ()}


@pytest.mark.parametrize("c_shape", list(C_SHAPES))
@pytest.mark.parametrize("transposes", [(False, False), (False, True), (True, False)], ids=str)
def test_gemm_bias_reshape_residual_is_one_step(gemm_path, c_shape, transposes):
    """reshape → gemm(c) → reshape → add(residual), ORT's Linear + residual: one step, the
    bias (any constant c broadcast along rows or columns) and the residual in the GEMM's
    epilogue, the reshapes free."""
    a_t, b_t = transposes
    m, k = 12, 16
    x = _f32(1, m, k)
    w = _f32(k, k, scale=0.3)
    c = _f32(*C_SHAPES[c_shape](m, k))
    beta = 0.5

    def make(g, o):
        a = g.reshape(o["x"], [m, k])
        if a_t:
            a = g.transpose(a)                       # [k, m], taken transposed by gemm
        y = g.gemm(a, g.transpose(o["w"]) if b_t else o["w"],
                   {"c": o["c"], "beta": beta, "aTranspose": a_t, "bTranspose": b_t})
        return {"y": g.add(g.reshape(y, [1, m, k]), o["x"])}
    plan, plain = build(make, {"x": x}, {"w": w, "c": c})
    # The reshape before the gemm is read by the gemm's step itself (fusion.py _absorb_input_reshapes).
    assert kinds(plan)[-1] == ("gemm+reshape+add" if a_t else "reshape+gemm+reshape+add"), kinds(plan)
    got = plan.execute({"x": x})["y"]
    a64 = t64(x).reshape(m, k)
    want = ((a64 @ t64(w)) + beta * t64(c)).reshape(1, m, k) + t64(x)
    assert_close(got, want.numpy(), atol=1e-4, what="gemm + bias + residual")
    if gemm_path == "host":                  # the same BLAS product and float32 adds as unfused
        assert_same_bits(got, plain.execute({"x": x})["y"])


def test_gemm_reshape_gelu_then_gemm(gemm_path):
    """The MLP as ORT writes it: gemm → reshape → gelu (spelled with erf) → reshape → gemm
    → reshape → add: two steps, nothing between them."""
    s, d, f = 9, 16, 24
    x = _f32(1, s, d)
    w1, b1, w2, b2 = _f32(d, f, scale=0.3), _f32(f), _f32(f, d, scale=0.3), _f32(d)

    def make(g, o):
        h = g.reshape(g.gemm(g.reshape(o["x"], [s, d]), o["w1"], {"c": o["b1"]}), [1, s, f])
        h = g.mul(g.mul(h, g.add(g.erf(g.div(h, g.constant("float32", math.sqrt(2)))),
                                  g.constant("float32", 1.0))), g.constant("float32", 0.5))
        y = g.gemm(g.reshape(h, [s, f]), o["w2"], {"c": o["b2"]})
        return {"y": g.add(g.reshape(y, [1, s, d]), o["x"])}
    plan, plain = build(make, {"x": x}, {"w1": w1, "b1": b1, "w2": w2, "b2": b2})
    assert kinds(plan) == ["reshape+gemm+reshape+gelu+reshape", "gemm+reshape+add"], kinds(plan)
    got = plan.execute({"x": x})["y"]
    h = F.gelu(t64(x).reshape(s, d) @ t64(w1) + t64(b1))
    want = (h @ t64(w2) + t64(b2)).reshape(1, s, d) + t64(x)
    assert_close(got, want.numpy(), atol=1e-4, what="mlp")
    assert_close(got, plain.execute({"x": x})["y"], atol=1e-5, what="mlp vs unfused")


def _attention(g, o, s, d, heads):
    """ORT's attention: gemm(qkv) → reshape → split → reshape/transpose per head, q kᵀ, a
    scale mul, softmax, p v, transpose back, reshape, the output gemm."""
    dh = d // heads
    qkv = g.reshape(g.gemm(g.reshape(o["x"], [s, d]), o["wqkv"], {"c": o["bqkv"]}), [1, s, 3 * d])
    q, k, v = g.split(qkv, 3, {"axis": 2})
    q = g.transpose(g.reshape(q, [1, s, heads, dh]), {"permutation": [0, 2, 1, 3]})
    kt = g.transpose(g.reshape(k, [1, s, heads, dh]), {"permutation": [0, 2, 3, 1]})
    v = g.transpose(g.reshape(v, [1, s, heads, dh]), {"permutation": [0, 2, 1, 3]})
    scores = g.mul(g.matmul(q, kt), g.constant("float32", 1 / math.sqrt(dh)))
    context = g.matmul(g.softmax(scores, 3), v)
    context = g.reshape(g.transpose(context, {"permutation": [0, 2, 1, 3]}), [s, d])
    return {"y": g.reshape(g.gemm(context, o["wo"], {"c": o["bo"]}), [1, s, d])}


@pytest.mark.parametrize("s, d, heads", [(7, 16, 2), (13, 24, 3)])
def test_attention_heads_write_their_layout(gemm_path, s, d, heads):
    x = _f32(1, s, d)
    weights = {"wqkv": _f32(d, 3 * d, scale=0.3), "bqkv": _f32(3 * d), "wo": _f32(d, d, scale=0.3), "bo": _f32(d)}
    plan, plain = build(lambda g, o: _attention(g, o, s, d, heads), {"x": x}, weights)
    names = kinds(plan)
    assert "matmul+mul" in names and "matmul+transpose+reshape" in names, names
    scale_step = next(step for step in plan.steps if step.name == "matmul+mul")
    assert scale_step.buffer >= 0                                # q kᵀ · scale into a plan buffer
    got = plan.execute({"x": x})["y"]
    dh = d // heads
    q, k, v = (t64(x).reshape(s, d) @ t64(weights["wqkv"]) + t64(weights["bqkv"])).split(d, dim=-1)
    q, k, v = (t.reshape(s, heads, dh).transpose(0, 1) for t in (q, k, v))
    context = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh), dim=-1) @ v
    want = (context.transpose(0, 1).reshape(s, d) @ t64(weights["wo"]) + t64(weights["bo"])).reshape(1, s, d)
    assert_close(got, want.numpy(), atol=1e-4, what="attention")
    assert_close(got, plain.execute({"x": x})["y"], atol=1e-5, what="attention vs unfused")
    # A second dispatch with other inputs: nothing of the first stays in the buffers.
    x2 = _f32(1, s, d)
    assert_close(plan.execute({"x": x2})["y"], plain.execute({"x": x2})["y"], atol=1e-5, what="second run")


def test_scale_is_the_unfused_product_bit_for_bit(gemm_path):
    """matmul of computed operands then mul by a constant: the product as the epilogue's
    last operation is the float32 product the mul operator rounds."""
    a, b = _f32(2, 5, 8), _f32(2, 8, 6)
    s = np.float32(0.37)
    plan, _ = build(lambda g, o: {"y": g.mul(g.matmul(o["a"], o["b"]), g.constant("float32", float(s)))},
                    {"a": a, "b": b})
    unscaled, _ = build(lambda g, o: {"y": g.matmul(o["a"], o["b"])}, {"a": a, "b": b})
    assert kinds(plan) == ["matmul+mul"]
    assert_same_bits(plan.execute({"a": a, "b": b})["y"], unscaled.execute({"a": a, "b": b})["y"] * s)


def test_a_transpose_that_moves_the_last_axis_is_not_absorbed(gemm_path):
    a, b = _f32(1, 3, 5, 8), _f32(1, 3, 8, 6)
    plan, _ = build(lambda g, o: {"y": g.relu(g.transpose(g.matmul(o["a"], o["b"]), {"permutation": [0, 1, 3, 2]}))},
                    {"a": a, "b": b})
    assert "matmul+transpose" not in "|".join(kinds(plan)), kinds(plan)
    want = np.maximum((t64(a) @ t64(b)).transpose(-1, -2).numpy(), 0)
    assert_close(plan.execute({"a": a, "b": b})["y"], want, atol=1e-5, what="transpose kept")


def test_a_reshape_read_by_one_step_is_done_by_that_step():
    """reshape → an operator whose kernel needs its own attributes (transpose's permutation,
    softmax's axis, layerNormalization's axes): one step each, the values numpy's."""
    x = _f32(2, 12)

    def make(g, o):
        t = g.transpose(g.reshape(o["x"], [2, 3, 4]), {"permutation": [2, 0, 1]})
        soft = g.softmax(g.reshape(o["x"], [4, 6]), 0)
        return {"t": t, "soft": soft, "norm": g.layerNormalization(g.reshape(o["x"], [6, 4]), {"axes": [1]})}
    plan, plain = build(make, {"x": x})
    assert sorted(kinds(plan)) == ["reshape+layerNormalization", "reshape+softmax", "reshape+transpose"], kinds(plan)
    got, want = plan.execute({"x": x}), plain.execute({"x": x})
    assert_same_bits(got["t"], np.ascontiguousarray(x.reshape(2, 3, 4).transpose(2, 0, 1)))
    for key in ("soft", "norm"):
        assert_close(got[key], want[key], atol=1e-6, what=key)
    x64 = t64(x)
    assert_close(got["soft"], torch.softmax(x64.reshape(4, 6), 0).numpy(), atol=1e-6, what="softmax")
    assert_close(got["norm"], F.layer_norm(x64.reshape(6, 4), (4,)).numpy(), atol=1e-5, what="layerNormalization")


def test_a_classifier_head_is_one_step(gemm_path):
    """global pool → reshape → gemm → hardSwish → gemm (MobileNetV3's head): the pooled
    vector and the hidden layer are small vectors passed on inside the last gemm's step."""
    x = _f32(1, 8, 5, 5)
    w = {"dw": _f32(8, 1, 3, 3), "w1": _f32(12, 8, scale=0.4), "b1": _f32(12), "w2": _f32(6, 12, scale=0.4),
         "b2": _f32(6)}

    def make(g, o):
        y = g.conv2d(o["x"], o["dw"], {"groups": 8, "padding": [1] * 4})       # channels-last stack
        v = g.reshape(g.averagePool2d(y), [1, 8])
        h = g.hardSwish(g.gemm(v, o["w1"], {"c": o["b1"], "bTranspose": True}))
        return {"y": g.gemm(h, o["w2"], {"c": o["b2"], "bTranspose": True})}
    plan, plain = build(make, {"x": x}, w)
    assert kinds(plan)[-1].startswith("averagePool2d+") and kinds(plan)[-1].endswith("gemm"), kinds(plan)
    tw = {k: t64(v) for k, v in w.items()}
    v = F.conv2d(t64(x), tw["dw"], groups=8, padding=1).mean((2, 3))
    want = F.hardswish(v @ tw["w1"].T + tw["b1"]) @ tw["w2"].T + tw["b2"]
    assert_close(plan.execute({"x": x})["y"], want.numpy(), atol=1e-4, what="head")


def test_products_of_computed_operands_write_their_concat_slices(gemm_path):
    """concat along the last axis of two matmuls of computed operands: each GEMM writes its
    columns of the concat's buffer (fusion.py _concat_in_place); torch's values."""
    a, b, c = _f32(2, 5, 8), _f32(2, 8, 6), _f32(2, 8, 3)
    plan, plain = build(lambda g, o: {"y": g.relu(g.concat([g.matmul(o["a"], o["b"]), g.matmul(o["a"], o["c"])], 2))},
                        {"a": a, "b": b, "c": c})
    assert kinds(plan) == ["matmul+matmul+concat+relu"], kinds(plan)
    got = plan.execute({"a": a, "b": b, "c": c})["y"]
    want = torch.relu(torch.cat([t64(a) @ t64(b), t64(a) @ t64(c)], 2))
    assert_close(got, want.numpy(), atol=1e-5, what="concat of products")
    assert_close(got, plain.execute({"a": a, "b": b, "c": c})["y"], atol=1e-6, what="vs unfused")
