"""Run inside Pyodide in tests/browser/pages/kernel_pool.html (tests/browser/test_kernel_pool.py
sends this file's text and awaits `checks()`): the kernel pool's GEMMs, depthwise and im2col
convolutions against the same kernel on one thread (bit for bit) and against numpy in float64, over the
shapes, windows and epilogues the pool takes. Returns plain values for the test to assert on."""
import asyncio
from importlib import resources

import js  # type: ignore[import-not-found]
import numpy as np

import webnn_py.kernels as K


def reference(a, b, bias_m, bias_n, residual, activation):
    """The GEMM and its epilogue in float64 by numpy, the activation as kernels.c defines it."""
    y = a.astype(np.float64) @ b.astype(np.float64)
    if bias_m is not None:
        y += bias_m[:, None]
    if bias_n is not None:
        y += bias_n
    if residual is not None:
        y += residual
    if activation is None:
        return y
    if not isinstance(activation, K.Activation):
        return np.clip(y, *activation)
    if activation.code == 2:
        return y * np.clip(y + 3, 0, 6) / 6
    if activation.code == 4:
        return y / (1 + np.exp(-y))
    if activation.code == 6:
        return y * activation.a
    raise AssertionError(activation)


# (m, k, n, what): every epilogue term, remainder columns (n % 8), rows not a multiple of 4,
# strided A and C (views of wider arrays), a residual that is C itself; narrow GEMMs with many
# rows (k or n of 16-24: this thread keeps fewer rows, the copies being a larger part).
CASES = [
    (3136, 144, 64, "bias_n relu6"),
    (784, 576, 128, "bias_n residual"),
    (1001, 200, 77, "bias_m hardswish"),
    (402, 96, 100, "bias_n silu strided"),
    (640, 256, 96, "residual_is_out scale"),
    (197, 192, 576, "bias_n"),
    (12544, 16, 96, "bias_n relu6"),
    (3137, 144, 20, "bias_n strided"),
]


def one_case(kernels, rng, m, k, n, what):
    wide_a = rng.standard_normal((m, k + 5), dtype=np.float32)
    a = wide_a[:, 3:3 + k] if "strided" in what else np.ascontiguousarray(wide_a[:, :k])
    b = (rng.standard_normal((k, n), dtype=np.float32) / np.float32(np.sqrt(k))).astype(np.float32)
    bias_m = rng.standard_normal(m, dtype=np.float32) if "bias_m" in what else None
    bias_n = rng.standard_normal(n, dtype=np.float32) if "bias_n" in what else None
    activation = ((0.0, 6.0) if "relu6" in what else K.HARD_SWISH if "hardswish" in what else K.SILU
                  if "silu" in what else K.scale(np.float32(0.125)) if "scale" in what else None)
    packed = kernels.pack_b(b)

    def run(threads):
        kernels.threads = threads
        wide_out = np.zeros((m, n + 9), np.float32)
        out = wide_out[:, 2:2 + n] if "strided" in what else np.zeros((m, n), np.float32)
        residual = None
        if "residual_is_out" in what:
            out[...] = np.arange(m * n, dtype=np.float32).reshape(m, n) / np.float32(m * n)
            residual = out
        elif "residual" in what:
            residual = np.linspace(-1, 1, m * n, dtype=np.float32).reshape(m, n)
        start_residual = None if residual is None else residual.copy()
        kernels.gemm(a, b, bias_m, bias_n, activation, out=out, residual=residual, packed_b=packed)
        return out.copy(), start_residual

    threads = kernels.threads
    threads.pool.idle(2.0)                 # a worker late on the previous call has finished
    calls = threads.pool.stats()["calls"]
    try:
        single, residual = run(None)
        pooled, _ = run(threads)
    finally:
        kernels.threads = threads
    error = np.abs(pooled - reference(a, b, bias_m, bias_n, residual, activation)).max()
    return {"case": f"{m}x{k}x{n} {what}", "identical": bool(np.array_equal(single.view(np.int32),
                                                                            pooled.view(np.int32))),
            "max_error": float(error), "pooled": threads.pool.stats()["calls"] == calls + 1}


def depthwise_reference(x, filter_hwc, bias, out_hw, strides, dilations, pads_begin, clamp):
    """§8.9.10 depthwise conv2d of NHWC x [1, h, w, c] in float64 by numpy (zero padding)."""
    _, h, w, c = x.shape
    kh, kw, _ = filter_hwc.shape
    (oh, ow), (sh, sw), (dh, dw), (pt, pl) = out_hw, strides, dilations, pads_begin
    padded = np.zeros((h + pt + oh * sh + kh * dh, w + pl + ow * sw + kw * dw, c))
    padded[pt:pt + h, pl:pl + w] = x[0]
    y = np.zeros((oh, ow, c)) + (0 if bias is None else bias.astype(np.float64))
    for i in range(kh):
        for j in range(kw):
            y += padded[i * dh:i * dh + oh * sh:sh, j * dw:j * dw + ow * sw:sw] * filter_hwc[i, j]
    return np.clip(y, *clamp)[None] if clamp else y[None]


# (h, w, c, kh, kw, strides, dilations, (pt, pb, pl, pr), bias, clamp): MobileNet's 3×3 stride 1,
# EfficientNet's 5×5 stride 2 (uneven padding), channels not a multiple of 4 (the kernel's 1-channel tail), a 5×5 dilated window whose
# padding the workers' input slab must not shift, a window taller than the padding (slab rows
# trimmed at both ends), no bias.
DEPTHWISE_CASES = [
    (56, 56, 144, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1), True, (0.0, 6.0)),
    (112, 112, 96, 5, 5, (2, 2), (1, 1), (1, 2, 1, 2), True, (0.0, 6.0)),
    (40, 33, 67, 5, 5, (1, 2), (2, 1), (4, 4, 2, 2), True, None),
    (64, 24, 86, 7, 3, (2, 1), (1, 1), (1, 0, 1, 1), False, (-1.0, 1.0)),
]


def one_depthwise_case(kernels, rng, h, w, c, kh, kw, strides, dilations, pads, with_bias, clamp):
    (sh, sw), (dh, dw), (pt, pb, pl, pr) = strides, dilations, pads
    oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
    ow = (w + pl + pr - (kw - 1) * dw - 1) // sw + 1
    x = rng.standard_normal((1, h, w, c), dtype=np.float32)
    filter_hwc = rng.standard_normal((kh, kw, c), dtype=np.float32)
    bias = rng.standard_normal(c, dtype=np.float32) if with_bias else None
    threads = kernels.threads
    threads.pool.idle(2.0)
    calls = threads.pool.stats()["calls"]

    def run(pool):
        kernels.threads = pool
        try:
            return kernels.depthwise_nhwc(x, filter_hwc, bias, (oh, ow), strides, dilations, (pt, pl), clamp=clamp)
        finally:
            kernels.threads = threads
    single, pooled = run(None), run(threads)
    expected = depthwise_reference(x, filter_hwc, bias, (oh, ow), strides, dilations, (pt, pl), clamp)
    return {"case": f"depthwise {h}x{w}x{c} {kh}x{kw} s{strides} d{dilations} p{pads}",
            "identical": bool(np.array_equal(single.view(np.int32), pooled.view(np.int32))),
            "max_error": float(np.abs(pooled - expected).max()), "pooled": threads.pool.stats()["calls"] == calls + 1}


def conv_reference(x, weights, bias, out_hw, strides, dilations, pads_begin, residual, clamp):
    """conv2d of NHWC x [h, w, c] with HWIO weights [kh, kw, c, n] in float64 by numpy."""
    h, w, c = x.shape
    kh, kw, _, n = weights.shape
    (oh, ow), (sh, sw), (dh, dw), (pt, pl) = out_hw, strides, dilations, pads_begin
    padded = np.zeros((h + pt + oh * sh + kh * dh, w + pl + ow * sw + kw * dw, c))
    padded[pt:pt + h, pl:pl + w] = x
    y = np.zeros((oh, ow, n)) + bias.astype(np.float64) + residual.reshape(oh, ow, n)
    for i in range(kh):
        for j in range(kw):
            y += padded[i * dh:i * dh + oh * sh:sh, j * dw:j * dw + ow * sw:sw] @ weights[i, j].astype(np.float64)
    return np.clip(y, *clamp).reshape(oh * ow, n) if clamp else y.reshape(oh * ow, n)


# (h, w, c, kh, kw, strides, dilations, (pt, pb, pl, pr), n, what): resnet18's 3×3 layer, a
# stride-2 3×3 with a residual and remainder columns (n % 8), a 7×7 stem on 3 channels, a dilated
# window writing a channel slice of a wider output (a concat's part: rows ldc apart, its residual
# too); the page's patches 3 output rows at a time ("blocks": the one-thread blocks' loop).
CONV_CASES = [
    (28, 28, 64, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1), 64, "relu6"),
    (30, 29, 32, 3, 3, (2, 2), (1, 1), (1, 1, 1, 1), 77, "residual blocks"),
    (64, 64, 3, 7, 7, (2, 2), (1, 1), (3, 3, 3, 3), 64, "relu6"),
    (24, 20, 24, 3, 3, (1, 1), (2, 2), (2, 2, 2, 2), 40, "strided residual blocks"),
    # A 7x7 image: tiles of 32 pixels or more (5 of its rows), fewer than one tile's rows left.
    (7, 7, 128, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1), 128, "relu6"),
]


def one_conv_case(kernels, rng, h, w, c, kh, kw, strides, dilations, pads, n, what):
    (sh, sw), (dh, dw), (pt, pb, pl, pr) = strides, dilations, pads
    oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
    ow = (w + pl + pr - (kw - 1) * dw - 1) // sw + 1
    k = kh * kw * c
    x = rng.standard_normal((h, w, c), dtype=np.float32)
    weights = (rng.standard_normal((kh, kw, c, n), dtype=np.float32) / np.float32(np.sqrt(k))).astype(np.float32)
    b = np.ascontiguousarray(weights.reshape(k, n))
    packed = kernels.pack_b(b)
    bias = rng.standard_normal(n, dtype=np.float32)
    clamp = (0.0, 6.0) if "relu6" in what else None
    residual = rng.standard_normal((oh * ow, n), dtype=np.float32) if "residual" in what else None
    block = 3 if "blocks" in what else oh
    threads = kernels.threads
    threads.pool.idle(2.0)
    calls = threads.pool.stats()["calls"]

    def out_rows():
        wide = np.zeros((oh * ow, n + 11), np.float32)
        return wide[:, 5:5 + n] if "strided" in what else np.zeros((oh * ow, n), np.float32)

    def residual_like(out):
        if residual is None:
            return None
        view = out if "strided" in what else np.empty_like(out)
        view[...] = residual
        return view

    # One thread: the convolution's blocks as ops/convolution.py runs them without the pool.
    single = out_rows()
    single_residual = residual_like(single)
    cols = np.empty(block * ow * k, np.float32)
    kernels.threads = None
    try:
        for r0 in range(0, oh, block):
            rows = range(r0, min(r0 + block, oh))
            part = cols[:len(rows) * ow * k].reshape(len(rows) * ow, k)
            kernels.im2col_nhwc(x, (kh, kw), strides, dilations, (pt, pl), rows, ow, part)
            sl = slice(r0 * ow, rows.stop * ow)
            kernels.gemm(part, b, bias_n=bias, clamp=clamp, out=single[sl], packed_b=packed,
                         residual=None if single_residual is None else single_residual[sl])
    finally:
        kernels.threads = threads
    pooled = out_rows()
    pooled_residual = residual_like(pooled)
    took = kernels.im2col_gemm(x, (kh, kw), strides, dilations, (pt, pl), (oh, ow), b, packed, pooled, cols,
                               bias, pooled_residual, clamp)
    expected = conv_reference(x, weights, bias, (oh, ow), strides, dilations, (pt, pl),
                              np.zeros((oh * ow, n)) if residual is None else residual, clamp)
    return {"case": f"conv {h}x{w}x{c} {kh}x{kw}->{n} s{strides} d{dilations} p{pads} {what}", "took": took,
            "identical": bool(np.array_equal(single.view(np.int32), pooled.view(np.int32))),
            "max_error": float(np.abs(pooled - expected).max()), "pooled": threads.pool.stats()["calls"] == calls + 1}


async def checks():
    kernels = K.available()
    threads = kernels.threads
    result = {"threads": threads is not None, "variant": kernels.variant,
              "relaxed_validates": bool(js.WebAssembly.validate(js.Uint8Array.new(
                  (resources.files(K) / "wasm" / "kernels_relaxed.wasm").read_bytes())))}
    if threads is None:
        # A large GEMM must still run (on one thread) and create no worker.
        rng = np.random.default_rng(0)
        a = rng.standard_normal((2048, 256), dtype=np.float32)
        b = rng.standard_normal((256, 256), dtype=np.float32)
        out = kernels.gemm(a, b, packed_b=kernels.pack_b(b))
        result["max_error"] = float(np.abs(out - a.astype(np.float64) @ b).max())
        return result
    rng = np.random.default_rng(17)
    a = rng.standard_normal((2048, 256), dtype=np.float32)
    b = rng.standard_normal((256, 256), dtype=np.float32)
    packed = kernels.pack_b(b)
    # The workers start in the background: until one is ready the pool declines (one thread).
    # Each shape's first call is pooled, its second not, then the faster way is chosen.
    for _ in range(100):
        kernels.gemm(a, b, packed_b=packed)
        if threads.pool is not None and threads.pool.stats()["calls"]:
            break
        await asyncio.sleep(0.1)
    result["workers"] = threads.pool.workers if threads.pool else 0
    result["cases"] = [one_case(kernels, rng, *case) for case in CASES]
    result["depthwise_cases"] = [one_depthwise_case(kernels, rng, *case) for case in DEPTHWISE_CASES]
    result["conv_cases"] = [one_conv_case(kernels, rng, *case) for case in CONV_CASES]
    # A 3×3 depthwise of stride 2 (its copies ~0.8 of the workers' work) stays on this thread.
    stride_2 = one_depthwise_case(kernels, rng, 112, 112, 96, 3, 3, (2, 2), (1, 1), (0, 1, 0, 1), True, (0.0, 6.0))
    result["depthwise_stride_2"] = stride_2
    # A worker took tiles at least once (a worker the machine never schedules loses every
    # tile to the page's thread: retry with pauses that let it run).
    for size in range(300, 400):
        threads.pool.idle(2.0)
        a_size = a[:size * 4]           # a new shape: its first call is pooled
        kernels.gemm(a_size, b, packed_b=packed)
        if threads.pool.stats()["workerTiles"]:
            break
        await asyncio.sleep(0.05)
    # Constant Bs that die are released and their arena space reused: many short-lived Bs.
    for i in range(40):
        b_i = rng.standard_normal((256, 128), dtype=np.float32)
        packed_i = kernels.pack_b(b_i)
        got = kernels.gemm(a, b_i, packed_b=packed_i)
        if not np.allclose(got, a.astype(np.float64) @ b_i, rtol=1e-4, atol=1e-3):
            result["released_wrong"] = i
            break
        del b_i, packed_i
    # autoLinger (no kernelThreadsLingerMs in this page): one shape's one-thread times, then
    # enough pooled calls of it to compare.
    threads.pool.set_mode("one")
    for _ in range(5):
        kernels.gemm(a, b, packed_b=packed)
    threads.pool.set_mode("pool")
    for _ in range(20):
        kernels.gemm(a, b, packed_b=packed)
    threads.pool.set_mode("choose")
    result["stats"] = threads.pool.stats()
    result["kept"] = len(threads.pool._kept)
    return result


async def linger_checks():
    """In a page with a long kernelThreadsLingerMs (10 s): a worker that finished a call polls for
    the next one instead of sleeping, so pooled calls after the first wake nobody, whatever kind
    of call came before (a depthwise call's arguments once overwrote the linger with ~0).
    Returns [(kind, wake-ups)] per pooled call."""
    kernels = K.available()
    threads = kernels.threads
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2048, 256), dtype=np.float32)
    b = rng.standard_normal((256, 256), dtype=np.float32)
    packed = kernels.pack_b(b)
    x = rng.standard_normal((1, 56, 56, 144), dtype=np.float32)
    filter_hwc = rng.standard_normal((3, 3, 144), dtype=np.float32)
    for _ in range(100):   # the workers start in the background
        kernels.gemm(a, b, packed_b=packed)
        if threads.pool is not None and threads.pool.stats()["calls"]:
            break
        await asyncio.sleep(0.1)
    threads.pool.set_mode("pool")
    calls = {"gemm": lambda: kernels.gemm(a, b, packed_b=packed),
             "depthwise": lambda: kernels.depthwise_nhwc(x, filter_hwc, None, (56, 56), (1, 1), (1, 1), (1, 1))}
    wakes = []
    try:
        for kind in ("gemm", "depthwise", "gemm", "depthwise", "gemm"):
            threads.pool.idle(2.0)
            before = threads.pool.stats()
            calls[kind]()
            after = threads.pool.stats()
            wakes.append((kind, after["calls"] - before["calls"], after["wakeUps"] - before["wakeUps"]))
    finally:
        threads.pool.close()
    return wakes
