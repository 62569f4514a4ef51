"""A loop over an lstmCell / gruCell runs as one lstm / gru sequence
(webnn_py/runtime/compiler/recurrent_loop.py): in Pyodide that is the wasm runner.

Portable: runs on host CPython and inside Pyodide. The expected values are a float64
numpy loop over the spec's cell decompositions (§8.9.34, §8.9.26), written here;
tests/runtime/test_recurrent_loop.py has the variants, torch and the declined bodies.
"""
import numpy as np

import webnn_py

STEPS, BATCH, INPUT, HIDDEN = 5, 2, 3, 4


def _f32(*shape):
    return {"dataType": "float32", "shape": list(shape)}


def _const(b, a):
    return b.constant(_f32(*a.shape), np.ascontiguousarray(a))


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


async def _run_loop(make_cell, states: dict, x: np.ndarray):
    """Loop a body `make_cell(builder, x_t, {state: operand}) -> {state: new operand}` over
    x's first axis; returns ({state: last value}, the hidden states [T, B, H], body walks)."""
    context = await webnn_py.ml.createContext()
    bb = webnn_py.MLGraphBuilder(context)
    x_t = bb.reshape(bb.input("x", _f32(1, BATCH, INPUT)), [BATCH, INPUT])
    new = make_cell(bb, x_t, {name: bb.input(name, _f32(BATCH, HIDDEN)) for name in states})
    body = await bb.build({**{f"{n}_out": v for n, v in new.items()}, "seq": bb.reshape(new["h"], [1, BATCH, HIDDEN]),
                           "cond": bb.identity(bb.constant("uint8", 1))})
    walks = []
    walk = body._implementation.execute_iter
    body._implementation.execute_iter = lambda *a, **k: walks.append(1) or walk(*a, **k)

    b = webnn_py.MLGraphBuilder(context)
    outs = b.loop(b.constant("int32", STEPS), b.constant("uint8", 1), body, "cond",
                  [{"bodyInput": "x", "value": b.input("x", _f32(STEPS, BATCH, INPUT)), "axis": 0}]
                  + [{"bodyInput": n, "value": _const(b, v)} for n, v in states.items()],
                  [{"bodyOutput": f"{n}_out"} for n in states] + [{"bodyOutput": "seq", "axis": 0}],
                  {"backEdges": [{"from": f"{n}_out", "to": n} for n in states]})
    graph = await b.build({**{n: o for n, o in zip(states, outs)}, "seq": outs[-1]})
    tx = await context.createTensor({**_f32(STEPS, BATCH, INPUT), "writable": True})
    context.writeTensor(tx, x)
    shapes = {**{n: [BATCH, HIDDEN] for n in states}, "seq": [STEPS, BATCH, HIDDEN]}
    touts = {n: await context.createTensor({**_f32(*s), "readable": True}) for n, s in shapes.items()}
    context.dispatch(graph, {"x": tx}, touts)
    result = {n: np.frombuffer(await context.readTensor(t), np.float32).reshape(shapes[n]) for n, t in touts.items()}
    context.destroy()
    return result, len(walks)


async def test_lstm_cell_loop_with_peepholes():
    rng = np.random.default_rng(3)
    w, r = rng.uniform(-0.7, 0.7, (4 * HIDDEN, INPUT)), rng.uniform(-0.7, 0.7, (4 * HIDDEN, HIDDEN))
    bias, peep = rng.uniform(-1, 1, 4 * HIDDEN), rng.uniform(-1, 1, 3 * HIDDEN)
    x = rng.uniform(-1, 1, (STEPS, BATCH, INPUT)).astype(np.float32)
    h0, c0 = rng.uniform(-1, 1, (2, BATCH, HIDDEN)).astype(np.float32)
    w, r, bias, peep = (a.astype(np.float32) for a in (w, r, bias, peep))

    def cell(b, x_t, s):
        h, c = b.lstmCell(x_t, _const(b, w), _const(b, r), s["h"], s["c"], HIDDEN,
                          {"bias": _const(b, bias), "peepholeWeight": _const(b, peep)})
        return {"h": h, "c": c}

    out, walks = await _run_loop(cell, {"h": h0, "c": c0}, x)
    assert walks == 0
    # §8.9.34, layout "iofg", peepholes i, o, f read the incoming cell state.
    h, c, seq = h0.astype(np.float64), c0.astype(np.float64), []
    gate = {g: slice(k * HIDDEN, (k + 1) * HIDDEN) for k, g in enumerate("iofg")}
    p = {g: peep[k * HIDDEN:(k + 1) * HIDDEN] for k, g in enumerate("iof")}
    for x_t in x.astype(np.float64):
        pre = {g: x_t @ w[s].T + h @ r[s].T + bias[s] for g, s in gate.items()}
        i, f, o = (_sigmoid(pre[g] + c * p[g]) for g in "ifo")
        c = f * c + i * np.tanh(pre["g"])
        h = o * np.tanh(c)
        seq.append(h)
    np.testing.assert_allclose(out["h"], h, atol=5e-6)
    np.testing.assert_allclose(out["c"], c, atol=5e-6)
    np.testing.assert_allclose(out["seq"], np.stack(seq), atol=5e-6)


async def test_gru_cell_loop_reset_before():
    rng = np.random.default_rng(4)
    w = rng.uniform(-0.7, 0.7, (3 * HIDDEN, INPUT)).astype(np.float32)
    r = rng.uniform(-0.7, 0.7, (3 * HIDDEN, HIDDEN)).astype(np.float32)
    rbias = rng.uniform(-1, 1, 3 * HIDDEN).astype(np.float32)
    x = rng.uniform(-1, 1, (STEPS, BATCH, INPUT)).astype(np.float32)
    h0 = rng.uniform(-1, 1, (BATCH, HIDDEN)).astype(np.float32)

    def cell(b, x_t, s):
        return {"h": b.gruCell(x_t, _const(b, w), _const(b, r), s["h"], HIDDEN,
                               {"recurrentBias": _const(b, rbias), "resetAfter": False})}

    out, walks = await _run_loop(cell, {"h": h0}, x)
    assert walks == 0
    # §8.9.26, layout "zrn", reset applied before the recurrent product.
    h, seq = h0.astype(np.float64), []
    z_, r_, n_ = (slice(k * HIDDEN, (k + 1) * HIDDEN) for k in range(3))
    for x_t in x.astype(np.float64):
        z = _sigmoid(x_t @ w[z_].T + h @ r[z_].T + rbias[z_])
        rr = _sigmoid(x_t @ w[r_].T + h @ r[r_].T + rbias[r_])
        n = np.tanh(x_t @ w[n_].T + rbias[n_] + (rr * h) @ r[n_].T)
        h = z * h + (1 - z) * n
        seq.append(h)
    np.testing.assert_allclose(out["h"], h, atol=5e-6)
    np.testing.assert_allclose(out["seq"], np.stack(seq), atol=5e-6)
