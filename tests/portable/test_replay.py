"""Step replay (webnn_py/runtime/replay.py): in Pyodide a plan records its C kernels' calls at
its second and third run and then makes them as one call per segment; the results must be
those of walking the steps, bit for bit, whatever the inputs do. On the host nothing records
(the ctypes kernels gain nothing from it) and the plan walks.

Portable: runs on host CPython and inside Pyodide (where the replay is what is tested). The
reference is the same graph walked step by step (its replay switched off), and a float64
numpy evaluation of the same operators for the first run.
"""
import sys

import numpy as np

import webnn_py
from webnn_py.runtime import replay
from webnn_py.runtime.replay import Segment

IN_PYODIDE = sys.platform == "emscripten"
H = W = 16
C = 8


def _f32(*shape):
    return {"dataType": "float32", "shape": list(shape)}


def _weights(seed: int = 5) -> dict:
    rng = np.random.default_rng(seed)
    u = lambda *s: rng.uniform(-0.5, 0.5, s).astype(np.float32)   # noqa: E731
    return {"w1": u(16, 1, 1, C), "b1": u(16), "dw": u(1, 3, 3, 16), "bd": u(16), "s1": u(4, 1, 1, 16),
            "s2": u(16, 1, 1, 4), "w3": u(C, 1, 1, 16), "w4": u(8, 3, 3, C), "wa": u(4, 1, 1, 8), "wb": u(4, 1, 1, 8)}


def _build(b, x, k):
    """A small NHWC CNN with what the zoo's models have: a pointwise conv + relu, a depthwise
    conv + clamp, a squeeze-excitation block, a residual add, a strided 3x3 conv + hardSwish
    (im2col), a maxPool and a concat of two convolutions."""
    const = {name: b.constant(_f32(*a.shape), a) for name, a in k.items()}
    nhwc = {"inputLayout": "nhwc", "filterLayout": "ohwi"}
    c1 = b.relu(b.conv2d(x, const["w1"], {**nhwc, "bias": const["b1"]}))
    c2 = b.clamp(b.conv2d(c1, const["dw"], {"inputLayout": "nhwc", "filterLayout": "ihwo", "groups": 16,
                                             "padding": [1, 1, 1, 1], "bias": const["bd"]}),
                 {"minValue": 0, "maxValue": 6})
    pooled = b.averagePool2d(c2, {"windowDimensions": [H, W], "layout": "nhwc"})
    scale = b.hardSigmoid(b.conv2d(b.relu(b.conv2d(pooled, const["s1"], nhwc)), const["s2"], nhwc))
    c3 = b.add(b.conv2d(b.mul(c2, scale), const["w3"], nhwc), x)
    c4 = b.hardSwish(b.conv2d(c3, const["w4"], {**nhwc, "padding": [1, 1, 1, 1], "strides": [2, 2]}))
    m = b.maxPool2d(c4, {"windowDimensions": [3, 3], "strides": [2, 2], "layout": "nhwc"})
    return b.concat([b.relu(b.conv2d(m, const["wa"], nhwc)), b.relu(b.conv2d(m, const["wb"], nhwc))], 3)


def _reference(x: np.ndarray, k: dict) -> np.ndarray:
    """The same network in float64 numpy (NHWC; filters OHWI, the depthwise one IHWO)."""
    def conv(v, w, stride=1, pad=0, groups=1):
        v = np.pad(v, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
        o, kh, kw, _ = w.shape
        oh, ow = (v.shape[1] - kh) // stride + 1, (v.shape[2] - kw) // stride + 1
        out = np.zeros((1, oh, ow, o))
        for i in range(kh):
            for j in range(kw):
                patch = v[:, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride, :]
                out += patch * w[:, i, j, 0] if groups > 1 else patch @ w[:, i, j, :].T
        return out

    relu = lambda v: np.maximum(v, 0)     # noqa: E731
    x = x.astype(np.float64)
    k = {name: a.astype(np.float64) for name, a in k.items()}
    c1 = relu(conv(x, k["w1"]) + k["b1"])
    c2 = np.clip(conv(c1, k["dw"].transpose(3, 1, 2, 0), pad=1, groups=16) + k["bd"], 0, 6)
    s = relu(conv(c2.mean(axis=(1, 2), keepdims=True), k["s1"]))
    s = np.clip(0.2 * conv(s, k["s2"]) + 0.5, 0, 1)
    c3 = conv(c2 * s, k["w3"]) + x
    c4 = conv(c3, k["w4"], stride=2, pad=1)
    c4 = c4 * np.clip(c4 + 3, 0, 6) / 6
    m = np.max([c4[:, i:i + 5:2, j:j + 5:2, :] for i in range(3) for j in range(3)], axis=0)
    return np.concatenate([relu(conv(m, k["wa"])), relu(conv(m, k["wb"]))], axis=3)


async def _plans(k: dict):
    """(the plan that replays, the same graph's plan that walks)."""
    plans = []
    for _ in range(2):
        context = await webnn_py.ml.createContext()
        b = webnn_py.MLGraphBuilder(context)
        graph = await b.build({"y": _build(b, b.input("x", _f32(1, H, W, C)), k)})
        plans.append(graph._implementation)
    plans[1]._replay = None
    return plans


def _assert_replay_keeps_the_walks_bits(replayed, walked, x: np.ndarray, seed: int) -> None:
    """Six runs of both plans on the same input array, new values written in place each time
    (a segment reading it reads them): the replayed results are the walk's, bit for bit."""
    rng = np.random.default_rng(seed)
    for run in range(6):
        x[...] = rng.uniform(-1, 1, x.shape)
        got, expected = replayed.execute({"x": x})["y"], walked.execute({"x": x})["y"]
        assert got.tobytes() == expected.tobytes(), f"run {run + 2} differs"


def _segments(plan) -> list:
    schedule = plan._replay.schedule if plan._replay is not None else None
    return [unit for unit in schedule or () if isinstance(unit, Segment)]


async def test_replayed_runs_match_the_walk_bit_for_bit():
    k = _weights()
    replayed, walked = await _plans(k)
    x = np.random.default_rng(1).uniform(-1, 1, (1, H, W, C)).astype(np.float32)
    first = replayed.execute({"x": x})["y"]
    np.testing.assert_allclose(first, _reference(x, k), rtol=1e-4, atol=1e-4)
    _assert_replay_keeps_the_walks_bits(replayed, walked, x, seed=2)
    if IN_PYODIDE:
        bound = sum(segment.stop - segment.first for segment in _segments(replayed))
        assert bound >= len(replayed.steps) - 2, (bound, len(replayed.steps), replayed._replay.schedule)
    else:
        assert replayed._replay is None          # the host walks: nothing records


async def test_new_input_arrays_walk_the_steps_reading_them():
    """A dispatch's inputs are other arrays each time (writeTensor replaces a tensor's
    array): the step reading them is a segment alone, walked after it misses a few times,
    while the steps after it still replay; the results stay the walk's."""
    replayed, walked = await _plans(_weights(7))
    rng = np.random.default_rng(3)
    for run in range(replay.RECORDING_RUNS + replay.MISSES_TO_DISSOLVE + 3):
        x = rng.uniform(-1, 1, (1, H, W, C)).astype(np.float32)
        got, expected = replayed.execute({"x": x})["y"], walked.execute({"x": x})["y"]
        assert got.tobytes() == expected.tobytes(), f"run {run + 1} differs"
    if IN_PYODIDE:
        reads_input = [i for i, step in enumerate(replayed.steps)
                       if set(step.input_slots) & set(replayed.input_slots.values())]
        walked_steps = [i for unit in replayed._replay.schedule if isinstance(unit, range) for i in unit]
        assert set(reads_input) <= set(walked_steps), replayed._replay.schedule       # dissolved: walked
        assert _segments(replayed)


async def test_dispatches_through_tensors_replay_too():
    """The API's own path: writeTensor, dispatch, readTensor, a graph dispatched ten times."""
    k = _weights(9)
    context = await webnn_py.ml.createContext()
    b = webnn_py.MLGraphBuilder(context)
    graph = await b.build({"y": _build(b, b.input("x", _f32(1, H, W, C)), k)})
    tx = await context.createTensor({**_f32(1, H, W, C), "writable": True})
    ty = await context.createTensor({**_f32(1, 3, 3, 8), "readable": True})
    rng = np.random.default_rng(4)
    for run in range(10):
        x = rng.uniform(-1, 1, (1, H, W, C)).astype(np.float32)
        context.writeTensor(tx, x)
        context.dispatch(graph, {"x": tx}, {"y": ty})
        y = np.frombuffer(await context.readTensor(ty), np.float32).reshape(1, 3, 3, 8)
        np.testing.assert_allclose(y, _reference(x, k), rtol=1e-4, atol=1e-4, err_msg=f"dispatch {run + 1}")
    if IN_PYODIDE:
        assert _segments(graph._implementation)
    context.destroy()


async def test_a_profiled_run_walks_every_step():
    replayed, _ = await _plans(_weights())
    x = np.ones((1, H, W, C), np.float32)
    for _ in range(4):
        replayed.execute({"x": x})
    profile: dict = {}
    replayed.execute({"x": x}, profile=profile)
    assert set(profile) == {step.name for step in replayed.steps}


async def test_a_run_that_fails_part_way_is_no_recording():
    """A run closed part way (a dispatch aborted between steps) left a shorter recording: the
    schedule is made from whole runs only, and the results stay the walk's."""
    replayed, walked = await _plans(_weights(13))
    x = np.random.default_rng(5).uniform(-1, 1, (1, H, W, C)).astype(np.float32)
    replayed.execute({"x": x})
    partial = replayed.execute_iter({"x": x})
    next(partial)
    next(partial)
    partial.close()
    for run in range(5):
        assert replayed.execute({"x": x})["y"].tobytes() == walked.execute({"x": x})["y"].tobytes(), run
    if IN_PYODIDE:
        assert _segments(replayed)


async def test_the_page_can_switch_it_off():
    """webnnPolyfillConfig.stepReplay: false (read once, when the first plan is made): plans walk."""
    if not IN_PYODIDE:
        return
    import js  # type: ignore[import-not-found]
    from pyodide.ffi import to_js  # type: ignore[import-not-found]

    before = getattr(js.globalThis, "webnnPolyfillConfig", None)
    try:
        js.globalThis.webnnPolyfillConfig = to_js({"stepReplay": False}, dict_converter=js.Object.fromEntries)
        replay._enabled = None
        off, _ = await _plans(_weights())
        assert off._replay is None
        js.globalThis.webnnPolyfillConfig = to_js({}, dict_converter=js.Object.fromEntries)
        replay._enabled = None
        on, _ = await _plans(_weights())
        assert on._replay is not None
    finally:
        js.globalThis.webnnPolyfillConfig = before
        replay._enabled = None


# An encoder block as the zoo's transformer and ViT block have it (ONNX's spelling: the QKV
# projection split into heads by reshapes and transposes).
S, D, HEADS = 12, 16, 2


def _encoder_weights(seed: int = 11) -> dict:
    rng = np.random.default_rng(seed)
    u = lambda *s: rng.uniform(-0.5, 0.5, s).astype(np.float32)   # noqa: E731
    return {"g1": 1 + u(D), "e1": u(D), "wqkv": u(D, 3 * D), "bqkv": u(3 * D), "wo": u(D, D), "bo": u(D),
            "g2": 1 + u(D), "e2": u(D), "w1": u(D, 4 * D), "b1": u(4 * D), "w2": u(4 * D, D), "b2": u(D)}


def _build_encoder(b, x, k):
    """x [1, S, D]: layerNormalization, the QKV matmul + bias, split into heads, softmax of the
    scaled scores, the heads' values back into [1, S, D], the output projection + residual,
    then layerNormalization and a gelu FFN + residual."""
    const = {name: b.constant(_f32(*a.shape), a) for name, a in k.items()}
    dh = D // HEADS
    n1 = b.layerNormalization(x, {"axes": [2], "scale": const["g1"], "bias": const["e1"]})
    qkv = b.add(b.matmul(n1, const["wqkv"]), const["bqkv"])
    q, kk, v = (b.transpose(b.reshape(part, [1, S, HEADS, dh]), {"permutation": [0, 2, 1, 3]})
                for part in b.split(qkv, 3, {"axis": 2}))
    scores = b.mul(b.matmul(q, b.transpose(kk, {"permutation": [0, 1, 3, 2]})),
                   b.constant("float32", 1 / dh ** 0.5))
    heads = b.matmul(b.softmax(scores, 3), v)
    attended = b.reshape(b.transpose(heads, {"permutation": [0, 2, 1, 3]}), [1, S, D])
    h = b.add(b.add(b.matmul(attended, const["wo"]), const["bo"]), x)
    n2 = b.layerNormalization(h, {"axes": [2], "scale": const["g2"], "bias": const["e2"]})
    ffn = b.gelu(b.add(b.matmul(n2, const["w1"]), const["b1"]))
    return b.add(b.add(b.matmul(ffn, const["w2"]), const["b2"]), h)


def _encoder_reference(x: np.ndarray, k: dict) -> np.ndarray:
    from math import erf

    x = x.astype(np.float64)
    k = {name: a.astype(np.float64) for name, a in k.items()}

    def norm(v, g, e):
        mean = v.mean(axis=-1, keepdims=True)
        return (v - mean) / np.sqrt(((v - mean) ** 2).mean(axis=-1, keepdims=True) + 1e-5) * g + e

    dh = D // HEADS
    qkv = norm(x, k["g1"], k["e1"]) @ k["wqkv"] + k["bqkv"]
    q, kk, v = (qkv[..., i * D:(i + 1) * D].reshape(1, S, HEADS, dh).transpose(0, 2, 1, 3) for i in range(3))
    scores = q @ kk.transpose(0, 1, 3, 2) / dh ** 0.5
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    h = (p @ v).transpose(0, 2, 1, 3).reshape(1, S, D) @ k["wo"] + k["bo"] + x
    f = norm(h, k["g2"], k["e2"]) @ k["w1"] + k["b1"]
    f = f * 0.5 * (1 + np.vectorize(erf)(f / 2 ** 0.5))
    return f @ k["w2"] + k["b2"] + h


async def test_an_encoder_block_replays_its_normalisations_attention_and_ffn():
    """layerNormalization, the heads' batched products, softmax and the gelu epilogue write the
    plan's buffers by C calls alone (their working rows in the kernels' scratch), so in Pyodide
    they are bound like the GEMMs; the results stay the walk's, bit for bit."""
    k = _encoder_weights()
    plans = []
    for _ in range(2):
        context = await webnn_py.ml.createContext()
        b = webnn_py.MLGraphBuilder(context)
        graph = await b.build({"y": _build_encoder(b, b.input("x", _f32(1, S, D)), k)})
        plans.append(graph._implementation)
    replayed, walked = plans
    walked._replay = None
    x = np.random.default_rng(4).uniform(-1, 1, (1, S, D)).astype(np.float32)
    np.testing.assert_allclose(replayed.execute({"x": x})["y"], _encoder_reference(x, k), rtol=1e-4, atol=1e-4)
    _assert_replay_keeps_the_walks_bits(replayed, walked, x, seed=5)
    if IN_PYODIDE:
        bound = {replayed.steps[i].name for segment in _segments(replayed) for i in range(segment.first, segment.stop)}
        for name in ("layerNormalization", "softmax", "matmul+mul", "matmul+add+gelu"):
            assert name in bound, (name, bound, replayed._replay.schedule)
