"""Run inside Pyodide (tests/kernels/test_wasm_in_pyodide.py, through
tests/pyodide/run_portable.mjs): the wasm kernels are loaded on Pyodide's own memory,
the operators take them, and their results match float64 references."""
import sys

import numpy as np

from webnn_py import kernels

RNG = np.random.default_rng(7)


def _wasm():
    assert sys.platform == "emscripten"
    k = kernels.available()
    assert k is not None and k.name == "wasm", "kernels.wasm did not load"
    return k


def test_wasm_gemm_matches_float64():
    k = _wasm()
    for m, n, k_ in [(1, 1, 1), (5, 9, 7), (64, 40, 33), (130, 12, 200), (7, 3, 0)]:
        a = RNG.standard_normal((m, k_)).astype(np.float32)
        b = RNG.standard_normal((k_, n)).astype(np.float32)
        bias = RNG.standard_normal(n).astype(np.float32)
        want = np.clip(a.astype(np.float64) @ b + bias, 0, 6)
        got = k.gemm(a, b, bias_n=bias, clamp=(0.0, 6.0))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * max(1, k_))
        got = k.gemm(np.ascontiguousarray(a.T).T, b)
        np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5 * max(1, k_))


def test_wasm_gemm_integers_exact_and_leaves_neighbours_alone():
    k = _wasm()
    a = RNG.integers(-8, 9, (33, 29)).astype(np.float32)
    b = RNG.integers(-8, 9, (29, 21)).astype(np.float32)
    guard = np.full(33 * 21 + 16, 7.0, np.float32)
    out = guard[8:8 + 33 * 21].reshape(33, 21)
    k.gemm(a, b, out=out)
    np.testing.assert_array_equal(out, (a.astype(np.int64) @ b.astype(np.int64)).astype(np.float32))
    assert (guard[:8] == 7).all() and (guard[-8:] == 7).all()


def test_wasm_attention_pieces_exact_on_integers():
    """copy_2d (kᵀ laid out), a GEMM into every other head's columns of a wider array
    (rows ldc apart) and the scale activation, on small integers: exact."""
    k = _wasm()
    keys = RNG.integers(-8, 9, (3, 11, 24)).astype(np.float32)
    kt = k.copy_2d(keys[1, :, 8:16].T, np.empty((8, 11), np.float32))
    np.testing.assert_array_equal(kt, keys[1, :, 8:16].T)
    q = RNG.integers(-8, 9, (11, 8)).astype(np.float32)
    wide = np.full((11, 3, 11), 7.0, np.float32)
    k.gemm(q, kt, clamp=kernels.scale(0.25), out=wide[:, 1])
    np.testing.assert_array_equal(wide[:, 1], (q.astype(np.int64) @ kt.astype(np.int64)) * 0.25)
    assert (wide[:, 0] == 7).all() and (wide[:, 2] == 7).all()


def test_wasm_gemm_batch_every_head_in_one_call_exact_on_integers():
    """sgemm_batch: q kᵀ with kᵀ a transposed view of every head (laid out in C), the
    scale in the epilogue, and p v written into the [tokens, heads, d] layout (rows
    heads * d apart), on small integers: exact, nothing else written."""
    k = _wasm()
    heads, s, d = 3, 19, 8
    qkv = RNG.integers(-8, 9, (s, 3, heads, d)).astype(np.float32)
    q, keys, v = (qkv[:, i].transpose(1, 0, 2) for i in range(3))
    scores = np.full((heads, s, s), np.nan, np.float32)
    k.gemm_batch(q, keys.transpose(0, 2, 1), scores, clamp=kernels.scale(0.25))
    exact = np.einsum("hsd,htd->hst", q.astype(np.int64), keys.astype(np.int64))
    np.testing.assert_array_equal(scores, exact * 0.25)
    p = RNG.integers(-4, 5, (heads, s, s)).astype(np.float32)
    context = np.full((s + 1, heads, d), 7.0, np.float32)
    k.gemm_batch(p, v, context[:s].transpose(1, 0, 2))
    np.testing.assert_array_equal(context[:s], np.einsum("hst,htd->shd", p.astype(np.int64), v.astype(np.int64)))
    assert (context[s] == 7).all()


def test_wasm_depthwise_matches_float64():
    k = _wasm()
    x = RNG.standard_normal((1, 9, 10, 20)).astype(np.float32)
    f = RNG.standard_normal((3, 3, 20)).astype(np.float32)
    bias = RNG.standard_normal(20).astype(np.float32)
    got = k.depthwise_nhwc(x, f, bias, (5, 5), (2, 2), (1, 1), (1, 1), (0.0, 6.0))
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = np.zeros((1, 5, 5, 20))
    for i in range(3):
        for j in range(3):
            want += xp[:, i:i + 9:2, j:j + 9:2, :] * f[i, j]
    want = np.clip(want + bias, 0, 6)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_wasm_clamp_special_values():
    k = _wasm()
    x = np.array([-0.0, 0.0, np.inf, -np.inf, np.nan, 7.0, -1.0, 3.0] * 5, np.float32)
    got = k.clamp(x, 0.0, 6.0, np.empty_like(x))
    want = np.array([0.0, 0.0, 6.0, 0.0, np.nan, 6.0, 0.0, 3.0] * 5, np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    from webnn_py.ops.activations import clamp_into, relu_into
    calls = []
    original = k.clamp
    k.clamp = lambda *a: calls.append(1) or original(*a)
    try:
        np.testing.assert_array_equal(relu_into(x, x.copy()).view(np.uint32),
                                      np.array([0.0, 0.0, np.inf, 0.0, np.nan, 7.0, 0.0, 3.0] * 5,
                                               np.float32).view(np.uint32))
        y = x.copy()
        clamp_into(y, -0.5, 2.0, y)
        np.testing.assert_array_equal(y[5:8], [2.0, -0.5, 2.0])
        assert len(calls) == 2
    finally:
        k.clamp = original


def test_wasm_gelu_within_one_ulp():
    import math
    from webnn_py.ops.activations import gelu_kernel
    k = _wasm()
    x = np.concatenate([np.linspace(-14, 8, 20_001), [0.0, -0.0, 1e-30]]).astype(np.float32)
    got = k.gelu(x)
    ref = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64).tolist()])
    ulp = np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64)
    assert np.all(np.abs(got - ref) <= ulp), np.max(np.abs(got - ref) / ulp)
    calls = []
    original = k.gelu
    k.gelu = lambda *a: calls.append(1) or original(*a)
    try:
        (y,) = gelu_kernel([x], {}, None)
        np.testing.assert_array_equal(y, got)
        assert calls
    finally:
        k.gelu = original


def test_wasm_softmax_rows():
    from webnn_py.ops.activations import softmax
    k = _wasm()
    x = (RNG.standard_normal((4, 128)) * 20).astype(np.float32)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    ref = e / e.sum(axis=-1, keepdims=True)
    got = k.softmax_rows(x)
    assert np.all(np.abs(got - ref) <= np.spacing(np.abs(ref.astype(np.float32))))
    calls = []
    original = k.softmax_rows
    k.softmax_rows = lambda *a: calls.append(1) or original(*a)
    try:
        np.testing.assert_array_equal(softmax([x], {"axis": 1}, None)[0], got)
        assert calls
    finally:
        k.softmax_rows = original


def test_wasm_layernorm_rows_within_one_ulp():
    """The double lanes in wasm (4 per group) over rows with tails (197 = 49 * 4 + 1)."""
    k = _wasm()
    x = (RNG.standard_normal((3, 197)) * 3 + 5).astype(np.float32)
    scale = RNG.uniform(0.5, 1.5, 197).astype(np.float32)
    bias = RNG.standard_normal(197).astype(np.float32)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=-1, keepdims=True)
    eps = np.float64(np.float32(1e-5))
    ref = (x64 - mean) / np.sqrt(((x64 - mean) ** 2).mean(axis=-1, keepdims=True) + eps) * scale + bias
    got = k.layernorm_rows(x, scale, bias, float(eps))
    assert np.all(np.abs(got - ref) <= np.spacing(np.abs(ref.astype(np.float32))))


def test_wasm_image_layout_pieces_exact():
    """An NCHW image's planes into NHWC pixels (copy_2d, 3 columns), its 3-channel patch matrix
    (im2col: window rows inside the input copied whole, padding zeros) and a maxPool2d window
    maximum: data movement and maxima, so exact against numpy."""
    k = _wasm()
    planes = RNG.standard_normal((3, 9 * 11)).astype(np.float32)
    pixels = k.copy_2d(planes.T, np.empty((9 * 11, 3), np.float32))
    np.testing.assert_array_equal(pixels, planes.T)
    image = pixels.reshape(9, 11, 3)
    cols = k.im2col_nhwc(image, (3, 3), (2, 2), (1, 1), (1, 1), range(5), 6, np.empty((30, 27), np.float32))
    padded = np.pad(image, ((1, 1), (1, 1), (0, 0)))
    want = np.stack([padded[2 * oy:2 * oy + 3, 2 * ox:2 * ox + 3].reshape(27) for oy in range(5) for ox in range(6)])
    np.testing.assert_array_equal(cols, want)
    x = RNG.standard_normal((1, 9, 9, 6)).astype(np.float32)
    pooled = k.maxpool_nhwc(x, (3, 3), (2, 2), (1, 1), (1, 1), np.empty((1, 5, 5, 6), np.float32))
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)), constant_values=-np.inf)
    want = np.stack([xp[0, 2 * oy:2 * oy + 3, 2 * ox:2 * ox + 3].max(axis=(0, 1))
                     for oy in range(5) for ox in range(5)]).reshape(1, 5, 5, 6)
    np.testing.assert_array_equal(pooled, want)


def _bound_gemms_noting(k, note):
    """k.bind_gemm whose bound GEMMs call note(*their arguments) before running."""
    bind = type(k).bind_gemm

    def noting_bind(*args, **kwargs):
        run = bind(k, *args, **kwargs)
        return lambda *call: note(*call) or run(*call)
    return noting_bind


def test_bound_gemm_is_gemm_bit_for_bit():
    bound_gemm_matches_gemm(_wasm())


def bound_gemm_matches_gemm(k):
    """bind_gemm's run (the plan's constant-b GEMMs) against k.gemm itself: packed and unpacked
    b, fewer and more than 16 rows, rows ldc apart, a transposed a, stacked rows, the epilogue
    (also run on the host by tests/kernels/test_native_kernels.py)."""
    for m, kk, n, pack, strided_out, transposed, stacked, clamp in [
            (5, 7, 12, True, False, False, False, None), (40, 9, 24, True, True, False, False, (0.0, 6.0)),
            (33, 16, 5, False, False, True, False, kernels.HARD_SWISH), (20, 12, 16, False, False, False, True, None),
            (1, 3, 9, True, True, False, False, kernels.SIGMOID)]:
        a = RNG.standard_normal((kk, m) if transposed else (m, kk)).astype(np.float32)
        a = a.T if transposed else a
        b = RNG.standard_normal((kk, n)).astype(np.float32)
        bias = RNG.standard_normal(n).astype(np.float32)
        packed = k.pack_b(b) if pack else None
        wide = np.zeros((m, n + 3), np.float32)
        want_out = wide[:, 1:n + 1] if strided_out else np.empty((m, n), np.float32)
        residual = None if strided_out else RNG.standard_normal((m, n)).astype(np.float32)
        want = k.gemm(a, b, bias_n=bias, clamp=clamp, residual=residual, packed_b=packed, out=want_out).copy()
        run = k.bind_gemm(b, packed)
        if stacked:         # a C-contiguous [2, m / 2, k] and out [2, m / 2, n]: their rows as they are
            out = np.empty((2, m // 2, n), np.float32)
            got = run(a.reshape(2, m // 2, kk), out, None, bias, residual.reshape(out.shape), clamp).reshape(m, n)
        else:
            out = np.zeros((m, n + 3), np.float32)[:, 1:n + 1] if strided_out else np.empty((m, n), np.float32)
            got = run(a, out, None, bias, residual, clamp)
        np.testing.assert_array_equal(got, want)


def test_operators_take_the_wasm_path():
    """matmul and conv2d (1x1, 3x3 and depthwise, NHWC) call the wasm kernels."""
    from webnn_py.ops import convolution, matmul

    k = _wasm()
    calls = []
    original_gemm, original_dw = k.gemm, k.depthwise_nhwc
    k.gemm = lambda *a, **kw: calls.append("gemm") or original_gemm(*a, **kw)
    k.bind_gemm = _bound_gemms_noting(k, lambda *_: calls.append("gemm"))
    k.depthwise_nhwc = lambda *a, **kw: calls.append("depthwise") or original_dw(*a, **kw)
    try:
        a = RNG.standard_normal((6, 5)).astype(np.float32)
        b = RNG.standard_normal((5, 4)).astype(np.float32)
        (y,) = matmul.matmul_kernel([a, b], {}, None)
        np.testing.assert_allclose(y, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
        assert calls == ["gemm"]
        x = RNG.standard_normal((1, 6, 6, 8)).astype(np.float32)
        for w_shape, groups, expect in (((8, 8, 1, 1), 1, "gemm"), ((4, 8, 3, 3), 1, "gemm"),
                                        ((8, 1, 3, 3), 8, "depthwise")):
            calls.clear()
            w = RNG.standard_normal(w_shape).astype(np.float32)
            bias = RNG.standard_normal(w_shape[0]).astype(np.float32)
            attributes = {"padding": [1, 1, 1, 1] if w_shape[2] == 3 else [0, 0, 0, 0], "strides": [1, 1],
                          "dilations": [1, 1], "groups": groups, "inputLayout": "nhwc", "filterLayout": "oihw"}

            class Out:
                shape = (1, 6, 6, w_shape[0])
            (y,) = convolution.conv2d_kernel([x, w, bias], attributes, [Out])
            assert expect in calls, (w_shape, calls)
            # Reference: direct float64 sum over the taps.
            pad = attributes["padding"][0]
            xp = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
            want = np.zeros(Out.shape) + bias
            kh = w_shape[2]
            for i in range(kh):
                for j in range(kh):
                    patch = xp[:, i:i + 6, j:j + 6, :]
                    if groups == 1:
                        want += patch @ w[:, :, i, j].T.astype(np.float64)
                    else:
                        want += patch * w[:, 0, i, j]
            np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-4)
    finally:
        k.gemm, k.depthwise_nhwc = original_gemm, original_dw
        del k.bind_gemm


def test_missing_wasm_falls_back_to_numpy_with_a_warning():
    import logging
    from webnn_py.ops import matmul

    saved = kernels._loaded, kernels._tried, kernels.resources
    records = []

    class Catch(logging.Handler):
        def emit(self, record):
            records.append(record)

    class NoFiles:
        @staticmethod
        def files(_name):
            from pathlib import Path
            return Path("/nonexistent-webnn-py-kernels")

    handler = Catch(logging.WARNING)
    logging.getLogger("webnn_py").addHandler(handler)
    try:
        kernels._loaded, kernels._tried, kernels.resources = None, False, NoFiles
        assert kernels.available() is None
        assert any("kernels.wasm" in r.getMessage() and r.levelno == logging.WARNING for r in records)
        a = RNG.standard_normal((5, 4)).astype(np.float32)
        b = RNG.standard_normal((4, 3)).astype(np.float32)
        np.testing.assert_allclose(matmul.gemm(a, b), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    finally:
        logging.getLogger("webnn_py").removeHandler(handler)
        kernels._loaded, kernels._tried, kernels.resources = saved


async def test_asynchronous_compile_fallback():
    """Where a browser refuses the synchronous compile, the module is compiled
    asynchronously: numpy serves meanwhile, the kernels afterwards."""
    import asyncio
    saved = kernels._loaded, kernels._tried
    try:
        kernels._loaded, kernels._tried = None, True
        kernels._load_wasm(synchronously=False)
        assert kernels.available() is None           # not yet: the numpy paths serve
        for _ in range(100):
            if kernels.available() is not None:
                break
            await asyncio.sleep(0.05)
        k = kernels.available()
        assert k is not None and k is not saved[0]
        a = RNG.standard_normal((20, 9)).astype(np.float32)
        b = RNG.standard_normal((9, 17)).astype(np.float32)
        np.testing.assert_allclose(k.gemm(a, b), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    finally:
        kernels._loaded, kernels._tried = saved


async def test_bias_and_residual_adds_go_into_the_wasm_gemm_epilogue():
    """A transformer's linear + residual (matmul, add(bias), add(residual)) compiled in
    Pyodide: one GEMM with both adds in its epilogue, bit for bit the separate float32 adds."""
    from tests.portable.graph import compute

    k = _wasm()
    seen = []
    original = k.gemm
    k.gemm = lambda *a, **kw: seen.append((kw.get("bias_n") is not None, kw.get("residual") is not None)) \
        or original(*a, **kw)
    # run(a, out, bias_m, bias_n, residual, clamp) of a GEMM bound at build
    k.bind_gemm = _bound_gemms_noting(k, lambda *args: seen.append((args[3] is not None, args[4] is not None)))
    try:
        x = RNG.standard_normal((1, 16, 32)).astype(np.float32)
        w = RNG.standard_normal((32, 40)).astype(np.float32)
        b = RNG.standard_normal(40).astype(np.float32)
        r = RNG.standard_normal((1, 16, 40)).astype(np.float32)
        got = await compute(lambda g, op: g.add(g.add(g.matmul(op["x"], op["w"]), op["b"]), op["r"]),
                            {"x": x, "r": r}, {"w": w, "b": b})
        assert seen == [(True, True)], seen
        product = original(x.reshape(16, 32), w).reshape(1, 16, 40)
        np.testing.assert_array_equal(got, (product + b) + r)
    finally:
        k.gemm = original
        del k.bind_gemm


async def test_layer_normalization_takes_the_wasm_row_kernel():
    """A transformer's layerNormalization (last axis, scale and bias) in the wasm kernel,
    within 1 ulp of float64."""
    from tests.portable.graph import compute

    k = _wasm()
    seen = []
    original = k.layernorm_rows
    k.layernorm_rows = lambda *a, **kw: seen.append("layernorm") or original(*a, **kw)
    try:
        x = (RNG.standard_normal((1, 8, 256)) * 2).astype(np.float32)
        s = RNG.uniform(0.8, 1.2, 256).astype(np.float32)
        b = RNG.standard_normal(256).astype(np.float32)
        got = await compute(lambda g, op: g.layerNormalization(op["x"], {"axes": [2], "scale": op["s"],
                                                                         "bias": op["b"]}), {"x": x}, {"s": s, "b": b})
        assert seen == ["layernorm"]
        x64 = x.astype(np.float64)
        mean = x64.mean(-1, keepdims=True)
        want = ((x64 - mean) / np.sqrt(((x64 - mean) ** 2).mean(-1, keepdims=True) + np.float64(np.float32(1e-5)))
                * s + b).astype(np.float32)
        ulps = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
        assert ulps.max() <= 1, ulps.max()
    finally:
        k.layernorm_rows = original


def test_wasm_recurrent_sequences_match_the_numpy_steps():
    """lstm and gru take kernels.c's sequence loops in Pyodide and agree with the numpy
    step-by-step path (run here too, with the kernels switched off): hidden 36 (the recurrent
    product's rows in pairs), 35 (a last odd row, and columns past its blocks)."""
    for hidden in (36, 35):
        _check_recurrent_sequences(hidden)


def _check_recurrent_sequences(hidden):
    from webnn_py.ops import recurrent

    k = _wasm()
    calls = []

    class Counting:
        def __getattr__(self, attr):
            method = getattr(k, attr)
            if attr in ("bind_lstm_sequence", "bind_gru_sequence"):
                def bound(*a, **kw):          # the runner's loop, bound once: count its calls
                    loop = method(*a, **kw)
                    return lambda *b: (calls.append(attr[len("bind_"):]), loop(*b))
                return bound
            return method

    steps, batch, inp = 6, 2, 5
    x = RNG.uniform(-1, 1, (steps, batch, inp)).astype(np.float32)
    lstm_inputs = [x, RNG.uniform(-.5, .5, (2, 4 * hidden, inp)).astype(np.float32),
                   RNG.uniform(-.5, .5, (2, 4 * hidden, hidden)).astype(np.float32),
                   RNG.uniform(-1, 1, (2, 4 * hidden)).astype(np.float32), None,
                   RNG.uniform(-1, 1, (2, 3 * hidden)).astype(np.float32),
                   RNG.uniform(-1, 1, (2, batch, hidden)).astype(np.float32), None]
    lstm_attrs = {"steps": steps, "hidden_size": hidden, "direction": "both", "layout": "iofg",
                  "return_sequence": True, "activations": ("sigmoid", "tanh", "tanh")}
    gru_inputs = [x, RNG.uniform(-.5, .5, (1, 3 * hidden, inp)).astype(np.float32),
                  RNG.uniform(-.5, .5, (1, 3 * hidden, hidden)).astype(np.float32), None,
                  RNG.uniform(-1, 1, (1, 3 * hidden)).astype(np.float32), None]
    gru_attrs = {"steps": steps, "hidden_size": hidden, "direction": "backward", "layout": "zrn",
                 "reset_after": False, "return_sequence": True, "activations": ("sigmoid", "tanh")}
    original = kernels.simd
    try:
        kernels.simd = lambda: Counting()
        fast = (recurrent.lstm_kernel(lstm_inputs, lstm_attrs, None), recurrent.gru_kernel(gru_inputs, gru_attrs, None))
        kernels.simd = lambda: None
        slow = (recurrent.lstm_kernel(lstm_inputs, lstm_attrs, None), recurrent.gru_kernel(gru_inputs, gru_attrs, None))
    finally:
        kernels.simd = original
    assert calls == ["lstm_sequence", "lstm_sequence", "gru_sequence"], calls
    for got, want in zip(fast[0] + fast[1], slow[0] + slow[1]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * steps)
    # Without the counting wrapper the runner's calls are bound exports, made in one JS call
    # (Kernels.chain): the same C calls, so the same bits.
    chained = (recurrent.lstm_kernel(lstm_inputs, lstm_attrs, None), recurrent.gru_kernel(gru_inputs, gru_attrs, None))
    for got, want in zip(chained[0] + chained[1], fast[0] + fast[1]):
        np.testing.assert_array_equal(got, want)


def test_wasm_chain_makes_the_bound_calls_in_order_in_one_call():
    """Kernels.chain of bound exports is one JS function (a single crossing a run) making
    them in the order given: here a second GEMM reads the first's result, so the other order
    would read stale memory; bit for bit the bound calls made one by one from Python. A call
    that is not a bound export (a lambda) runs from Python, in order too."""
    from pyodide.ffi import JsProxy

    k = _wasm()
    a = RNG.uniform(-1, 1, (8, 5)).astype(np.float32)
    b1, b2 = RNG.uniform(-1, 1, (5, 16)).astype(np.float32), RNG.uniform(-1, 1, (16, 8)).astype(np.float32)
    bias1, bias2 = RNG.uniform(-1, 1, 16).astype(np.float32), RNG.uniform(-1, 1, 8).astype(np.float32)
    mid, out, log = np.zeros((8, 16), np.float32), np.zeros((8, 8), np.float32), []
    packed1, packed2 = k.pack_b(b1), k.pack_b(b2)        # bound by address: kept alive here
    threads, k.threads = k.threads, None    # in an isolated page the pool's GEMM is no bound export
    try:
        first = k.bind_input_gemm(a, b1, packed1, bias1, mid)
        second = k.bind_input_gemm(mid, b2, packed2, bias2, out)
    finally:
        k.threads = threads
    chained = k.chain([first, second])
    assert isinstance(chained, JsProxy)
    chained()
    want = (a.astype(np.float64) @ b1 + bias1) @ b2 + bias2
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    got = out.copy()
    mid[...] = 0
    out[...] = 0
    first()
    second()
    np.testing.assert_array_equal(out, got)
    mixed = k.chain([lambda: log.append("first"), lambda: log.append("second")])
    assert not isinstance(mixed, JsProxy)
    mixed()
    assert log == ["first", "second"]
