"""A loop whose body steps an lstmCell or gruCell over a sliced sequence runs as one
lstm/gru sequence run (webnn_py/runtime/compiler/recurrent_loop.py).

Each case is checked three ways: against torch's nn.LSTM / nn.GRU with the same
weights where torch has the variant (and otherwise against a float64 numpy reference
of the spec's lstmCell / gruCell decompositions, §8.9.34 / §8.9.26, written here and
itself checked against torch), against the same graph compiled without optimisation
(ExecutionPlan(optimize=False): the loop's registered kernel, one walk of the body's plan
per iteration), and structurally: which kernel the loop step got and how many times
the body's plan was walked. Every body the recogniser must decline still gives the
reference's values, through the per-iteration walk.
"""
import asyncio
import zlib

import numpy as np
import pytest

import webnn_py
from webnn_py.base.errors import OperationError
from webnn_py.runtime.plan import ExecutionPlan
from tests.portable.graph import descriptor

torch = pytest.importorskip("torch")

F32 = np.float32
STEPS, BATCH, INPUT, HIDDEN = 6, 3, 5, 8
# The runners' sigmoid/tanh are within 3 float32 ULP of the exact values, numpy's within
# ~2: over these few steps of O(1) values the two paths stay within ~1e-6 of each other
# and of the float64 reference (measured); this leaves a margin.
ATOL = 5e-6

# -- references ----------------------------------------------------------------------------------


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


ACT = {"sigmoid": _sigmoid, "tanh": np.tanh, "relu": lambda x: np.maximum(x, 0)}


def lstm_reference(x, w, r, h, c, bias=None, rbias=None, peephole=None, layout="iofg",
                   activations=("sigmoid", "tanh", "tanh")):
    """§8.9.34's decomposition in float64, every step of x [T, B, I]: (h, c, [h_t])."""
    hidden = r.shape[1]
    blocks = {gate: slice(k * hidden, (k + 1) * hidden) for k, gate in enumerate(layout)}
    peep = {gate: (np.zeros(hidden) if peephole is None else peephole[k * hidden:(k + 1) * hidden])
            for k, gate in enumerate("iof")}
    b = np.zeros(4 * hidden) if bias is None else bias.astype(np.float64)
    rb = np.zeros(4 * hidden) if rbias is None else rbias.astype(np.float64)
    f_act, g_act, h_act = (ACT[a] for a in activations)
    h, c = h.astype(np.float64), c.astype(np.float64)
    sequence = []
    for x_t in x.astype(np.float64):
        def pre(gate):
            s = blocks[gate]
            return x_t @ w[s].T + h @ r[s].T + b[s] + rb[s]
        i = f_act(pre("i") + c * peep["i"])
        f = f_act(pre("f") + c * peep["f"])
        o = f_act(pre("o") + c * peep["o"])
        g = g_act(pre("g"))
        c = f * c + i * g
        h = o * h_act(c)
        sequence.append(h)
    return h, c, np.stack(sequence)


def gru_reference(x, w, r, h, bias=None, rbias=None, layout="zrn", reset_after=True,
                  activations=("sigmoid", "tanh")):
    """§8.9.26's decomposition in float64: (h, [h_t])."""
    hidden = r.shape[1]
    blocks = {gate: slice(k * hidden, (k + 1) * hidden) for k, gate in enumerate(layout)}
    b = np.zeros(3 * hidden) if bias is None else bias.astype(np.float64)
    rb = np.zeros(3 * hidden) if rbias is None else rbias.astype(np.float64)
    f_act, g_act = (ACT[a] for a in activations)
    h = h.astype(np.float64)
    sequence = []
    for x_t in x.astype(np.float64):
        z = f_act(x_t @ w[blocks["z"]].T + h @ r[blocks["z"]].T + b[blocks["z"]] + rb[blocks["z"]])
        rr = f_act(x_t @ w[blocks["r"]].T + h @ r[blocks["r"]].T + b[blocks["r"]] + rb[blocks["r"]])
        s = blocks["n"]
        if reset_after:
            n = g_act(x_t @ w[s].T + b[s] + rr * (h @ r[s].T + rb[s]))
        else:
            n = g_act(x_t @ w[s].T + b[s] + rb[s] + (rr * h) @ r[s].T)
        h = z * h + (1 - z) * n
        sequence.append(h)
    return h, np.stack(sequence)


def _reorder(a, source, target):
    """Gate blocks of a (along axis 0) from layout `source` to layout `target`."""
    size = a.shape[0] // len(source)
    return np.concatenate([a[source.index(g) * size:(source.index(g) + 1) * size] for g in target])


def test_the_numpy_references_match_torch():
    rng = np.random.default_rng(1)
    p = lstm_parameters(rng, peephole=False)
    lstm = torch.nn.LSTM(INPUT, HIDDEN).double()
    with torch.no_grad():       # torch's gates are i, f, g, o ("ifgo")
        lstm.weight_ih_l0.copy_(torch.from_numpy(_reorder(p["w"], "iofg", "ifgo").astype(np.float64)))
        lstm.weight_hh_l0.copy_(torch.from_numpy(_reorder(p["r"], "iofg", "ifgo").astype(np.float64)))
        lstm.bias_ih_l0.copy_(torch.from_numpy(_reorder(p["bias"], "iofg", "ifgo").astype(np.float64)))
        lstm.bias_hh_l0.copy_(torch.from_numpy(_reorder(p["rbias"], "iofg", "ifgo").astype(np.float64)))
        seq, (h, c) = lstm(torch.from_numpy(p["x"].astype(np.float64)),
                           (torch.from_numpy(p["h0"][None].astype(np.float64)),
                            torch.from_numpy(p["c0"][None].astype(np.float64))))
    ours = lstm_reference(p["x"], p["w"], p["r"], p["h0"], p["c0"], p["bias"], p["rbias"])
    np.testing.assert_allclose(ours[2], seq.numpy(), atol=1e-12)
    np.testing.assert_allclose(ours[1], c.numpy()[0], atol=1e-12)

    g = gru_parameters(rng)
    gru = torch.nn.GRU(INPUT, HIDDEN).double()
    with torch.no_grad():       # torch's gates are r, z, n, reset after the recurrent product
        gru.weight_ih_l0.copy_(torch.from_numpy(_reorder(g["w"], "zrn", "rzn").astype(np.float64)))
        gru.weight_hh_l0.copy_(torch.from_numpy(_reorder(g["r"], "zrn", "rzn").astype(np.float64)))
        gru.bias_ih_l0.copy_(torch.from_numpy(_reorder(g["bias"], "zrn", "rzn").astype(np.float64)))
        gru.bias_hh_l0.copy_(torch.from_numpy(_reorder(g["rbias"], "zrn", "rzn").astype(np.float64)))
        seq, _ = gru(torch.from_numpy(g["x"].astype(np.float64)), torch.from_numpy(g["h0"][None].astype(np.float64)))
    np.testing.assert_allclose(gru_reference(g["x"], g["w"], g["r"], g["h0"], g["bias"], g["rbias"])[1],
                               seq.numpy(), atol=1e-12)


# -- graphs ----------------------------------------------------------------------------------------


def _uniform(rng, *shape):
    return rng.uniform(-1, 1, shape).astype(F32)


def lstm_parameters(rng, peephole=True, steps=STEPS, batch=BATCH):
    return {"x": _uniform(rng, steps, batch, INPUT), "w": _uniform(rng, 4 * HIDDEN, INPUT) * F32(0.6),
            "r": _uniform(rng, 4 * HIDDEN, HIDDEN) * F32(0.6), "bias": _uniform(rng, 4 * HIDDEN),
            "rbias": _uniform(rng, 4 * HIDDEN), "peephole": _uniform(rng, 3 * HIDDEN) if peephole else None,
            "h0": _uniform(rng, batch, HIDDEN), "c0": _uniform(rng, batch, HIDDEN)}


def gru_parameters(rng, steps=STEPS, batch=BATCH):
    return {"x": _uniform(rng, steps, batch, INPUT), "w": _uniform(rng, 3 * HIDDEN, INPUT) * F32(0.6),
            "r": _uniform(rng, 3 * HIDDEN, HIDDEN) * F32(0.6), "bias": _uniform(rng, 3 * HIDDEN),
            "rbias": _uniform(rng, 3 * HIDDEN), "h0": _uniform(rng, batch, HIDDEN)}


def const(b, a):
    return b.constant(descriptor(a), np.ascontiguousarray(a))


def true(b, _inputs=None):
    """A body condition that is always true and reads no body input."""
    return b.identity(b.constant("uint8", 1))


def f32(*shape):
    return {"dataType": "float32", "shape": list(shape)}


class Built:
    """An outer graph with a loop: its compiled plan, the same graph unoptimised
    (the loop's registered kernel: the per-iteration walk), and the walks of the body."""

    def __init__(self, plan, plain, body_plan):
        self.plan, self.plain, self.body_plan = plan, plain, body_plan
        self.walks = 0
        walk = body_plan.execute_iter

        def counted(*args, **kwargs):
            self.walks += 1
            return walk(*args, **kwargs)
        body_plan.execute_iter = counted

    def run(self, feeds):
        """(the compiled plan's outputs, the per-iteration walk's), counting the first's walks."""
        self.walks = 0
        fast = self.plan.execute(feeds)
        walks = self.walks
        slow = self.plain.execute(feeds)
        self.walks = walks
        return fast, slow


def build(make_body, make_outer, inputs: dict) -> Built:
    """make_body(builder) -> {name: operand}; make_outer(builder, graph inputs, body) -> {name: operand}."""
    async def go():
        context = await webnn_py.ml.createContext()
        body_builder = webnn_py.MLGraphBuilder(context)
        body = await body_builder.build(make_body(body_builder))
        builder = webnn_py.MLGraphBuilder(context)
        operands = {name: builder.input(name, descriptor(a)) for name, a in inputs.items()}
        outputs = make_outer(builder, operands, body)
        graph = await builder.build(outputs)
        plain = ExecutionPlan({n: o._value for n, o in outputs.items()}, optimize=False)
        return Built(graph._implementation, plain, body._implementation)
    return asyncio.run(go())


def lstm_body(p, *, layout="iofg", activations=None, options=("bias", "rbias", "peephole"),
              x_shape=(1, BATCH, INPUT), state_shape=(BATCH, HIDDEN), seq_shape=(1, BATCH, HIDDEN),
              weights_from=None, condition=true, extra=None):
    """The body: x (sliced), h, c -> h_out, c_out, seq (h_out reshaped), cond. `weights_from`
    names body inputs giving the weights (else body constants); `extra(b, outputs)` edits."""
    def make(b):
        x = b.input("x", f32(*x_shape))
        h = b.input("h", f32(*state_shape))
        c = b.input("c", f32(*state_shape))
        names = {"bias": "bias", "rbias": "recurrentBias", "peephole": "peepholeWeight"}
        opts = {names[k]: const(b, p[k]) for k in options if p.get(k) is not None}
        if activations:
            opts["activations"] = list(activations)
        w = b.input("w", f32(*p["w"].shape)) if weights_from else const(b, p["w"])
        h2, c2 = b.lstmCell(b.reshape(x, [BATCH, INPUT]), w, const(b, p["r"]), b.reshape(h, [BATCH, HIDDEN]),
                            b.reshape(c, [BATCH, HIDDEN]), HIDDEN, {"layout": layout, **opts})
        outputs = {"h_out": b.reshape(h2, list(state_shape)), "c_out": b.reshape(c2, list(state_shape)),
                   "seq": b.reshape(h2, list(seq_shape)), "cond": condition(b, {"h": h, "c": c})}
        if extra is not None:
            outputs = extra(b, outputs)
        return outputs
    return make


def lstm_loop(b, o, body, *, trip=STEPS, axis=0, state_shape=(BATCH, HIDDEN), concat=0, options=None,
              weights=None, outputs=("h_out", "c_out", "seq")):
    inputs = [{"bodyInput": "x", "value": o["x"], "axis": axis},
              {"bodyInput": "h", "value": b.reshape(o["h0"], list(state_shape))},
              {"bodyInput": "c", "value": b.reshape(o["c0"], list(state_shape))}]
    if weights is not None:
        inputs.append({"bodyInput": "w", "value": weights})
    trip = b.constant("int32", trip) if isinstance(trip, int) else trip
    results = b.loop(trip, b.constant("uint8", 1), body, "cond", inputs,
                     [{"bodyOutput": n, **({"axis": concat} if n == "seq" else {})} for n in outputs],
                     {"backEdges": [{"from": "h_out", "to": "h"}, {"from": "c_out", "to": "c"}], **(options or {})})
    return dict(zip(outputs, results))


def lstm_feeds(p):
    return {"x": p["x"], "h0": p["h0"], "c0": p["c0"]}


def check(built, feeds, expected: dict, *, fused: bool, walks=None):
    """The compiled plan's outputs against `expected` (float64 reference) and against the
    per-iteration walk; whether the loop ran as one sequence (no walk of the body's plan)
    or walked the body `walks` times."""
    fast, slow = built.run(feeds)
    for name, want in expected.items():
        assert fast[name].shape == want.shape, name
        np.testing.assert_allclose(fast[name], want, rtol=0, atol=ATOL, err_msg=name)
        np.testing.assert_allclose(fast[name], slow[name], rtol=0, atol=ATOL, err_msg=name)
    assert built.walks == (0 if fused else walks)
    return fast


def lstm_expected(p, count=STEPS, **kw):
    h, c, seq = lstm_reference(p["x"][:count], p["w"], p["r"], p["h0"], p["c0"], p.get("bias"), p.get("rbias"),
                               p.get("peephole"), **kw)
    return {"h_out": h, "c_out": c, "seq": seq}


# -- the fused path ----------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["iofg", "ifgo"])
@pytest.mark.parametrize("options", [("bias", "rbias", "peephole"), ("bias",), ()])
@pytest.mark.parametrize("activations", [None, ("sigmoid", "relu", "tanh"), ("tanh", "tanh", "sigmoid")])
def test_lstm_cell_loop_runs_as_one_sequence(layout, options, activations):
    rng = np.random.default_rng(zlib.crc32(repr((layout, options, activations)).encode()))
    p = lstm_parameters(rng)
    p = {k: (v if k in ("x", "h0", "c0", "w", "r") or k in options else None) for k, v in p.items()}
    built = build(lstm_body(p, layout=layout, activations=activations, options=options),
                  lambda b, o, body: lstm_loop(b, o, body), lstm_feeds(p))
    kw = {"layout": layout} | ({"activations": activations} if activations else {})
    out = check(built, lstm_feeds(p), lstm_expected(p, **kw), fused=True)
    assert np.abs(out["h_out"] - p["h0"]).max() > 1e-2        # the state evolved


def test_lstm_matches_torch_directly():
    """The fused loop against torch's nn.LSTM itself (no reference of ours in between)."""
    rng = np.random.default_rng(5)
    p = lstm_parameters(rng, peephole=False)
    built = build(lstm_body(p, options=("bias", "rbias"), layout="ifgo"),
                  lambda b, o, body: lstm_loop(b, o, body), lstm_feeds(p))
    lstm = torch.nn.LSTM(INPUT, HIDDEN)
    with torch.no_grad():
        for name, key in (("weight_ih_l0", "w"), ("weight_hh_l0", "r"), ("bias_ih_l0", "bias"),
                          ("bias_hh_l0", "rbias")):
            getattr(lstm, name).copy_(torch.from_numpy(p[key]))
        seq, (h, c) = lstm(torch.from_numpy(p["x"]), (torch.from_numpy(p["h0"][None]), torch.from_numpy(p["c0"][None])))
    check(built, lstm_feeds(p), {"h_out": h.numpy()[0], "c_out": c.numpy()[0], "seq": seq.numpy()}, fused=True)


@pytest.mark.parametrize("layout", ["zrn", "rzn"])
@pytest.mark.parametrize("reset_after", [True, False])
@pytest.mark.parametrize("biases", [("bias", "rbias"), ("rbias",), ()])
@pytest.mark.parametrize("activations", [None, ("sigmoid", "relu")])
def test_gru_cell_loop_runs_as_one_sequence(layout, reset_after, biases, activations):
    rng = np.random.default_rng(zlib.crc32(repr((layout, reset_after, biases, activations)).encode()))
    p = gru_parameters(rng)

    def body(b):
        x, h = b.input("x", f32(1, BATCH, INPUT)), b.input("h", f32(BATCH, HIDDEN))
        names = {"bias": "bias", "rbias": "recurrentBias"}
        opts = {names[k]: const(b, p[k]) for k in biases}
        if activations:
            opts["activations"] = list(activations)
        h2 = b.gruCell(b.reshape(x, [BATCH, INPUT]), const(b, p["w"]), const(b, p["r"]), h, HIDDEN,
                       {"layout": layout, "resetAfter": reset_after, **opts})
        return {"h_out": h2, "seq": b.reshape(h2, [1, BATCH, HIDDEN]), "cond": true(b)}

    def outer(b, o, body):
        last, seq = b.loop(b.constant("int64", -1), b.constant("uint8", 1), body, "cond",
                           [{"bodyInput": "x", "value": o["x"], "axis": 0}, {"bodyInput": "h", "value": o["h0"]}],
                           [{"bodyOutput": "h_out"}, {"bodyOutput": "seq", "axis": 0}],
                           {"backEdges": [{"from": "h_out", "to": "h"}]})
        return {"h_out": last, "seq": seq}

    built = build(body, outer, {"x": p["x"], "h0": p["h0"]})
    h, seq = gru_reference(p["x"], p["w"], p["r"], p["h0"], p["bias"] if "bias" in biases else None,
                           p["rbias"] if "rbias" in biases else None, layout, reset_after,
                           activations or ("sigmoid", "tanh"))
    check(built, {"x": p["x"], "h0": p["h0"]}, {"h_out": h, "seq": seq}, fused=True)


def test_gru_matches_torch_directly():
    rng = np.random.default_rng(6)
    p = gru_parameters(rng, batch=1)

    def body(b):
        x, h = b.input("x", f32(1, 1, INPUT)), b.input("h", f32(1, HIDDEN))
        h2 = b.gruCell(b.reshape(x, [1, INPUT]), const(b, p["w"]), const(b, p["r"]), h, HIDDEN,
                       {"layout": "rzn", "bias": const(b, p["bias"]), "recurrentBias": const(b, p["rbias"])})
        return {"h_out": h2, "seq": b.reshape(h2, [1, 1, HIDDEN]), "cond": true(b)}

    built = build(body, lambda b, o, bd: dict(zip(("h_out", "seq"), b.loop(
        b.constant("int32", STEPS), b.constant("uint8", 1), bd, "cond",
        [{"bodyInput": "x", "value": o["x"], "axis": 0}, {"bodyInput": "h", "value": o["h0"]}],
        [{"bodyOutput": "h_out"}, {"bodyOutput": "seq", "axis": 0}], {"backEdges": [{"from": "h_out", "to": "h"}]}))),
        {"x": p["x"], "h0": p["h0"]})
    gru = torch.nn.GRU(INPUT, HIDDEN)
    with torch.no_grad():
        for name, key in (("weight_ih_l0", "w"), ("weight_hh_l0", "r"), ("bias_ih_l0", "bias"),
                          ("bias_hh_l0", "rbias")):
            getattr(gru, name).copy_(torch.from_numpy(p[key]))
        seq, h = gru(torch.from_numpy(p["x"]), torch.from_numpy(p["h0"][None]))
    check(built, {"x": p["x"], "h0": p["h0"]}, {"h_out": h.numpy()[0], "seq": seq.numpy()}, fused=True)


def test_batch_major_slicing_states_through_reshapes_and_weights_from_outer_constants():
    """x [B, T, I] sliced along axis 1 (an OpenVINO model's batch-major sequence), states
    carried as [1, B, H] and reshaped around the cell, the sequence concatenated along
    axis 1 as [B, 1, H] parts, the input weight an outer constant bound as-is."""
    rng = np.random.default_rng(11)
    p = lstm_parameters(rng)
    batch_major = np.ascontiguousarray(p["x"].transpose(1, 0, 2))
    built = build(lstm_body(p, x_shape=(BATCH, 1, INPUT), state_shape=(1, BATCH, HIDDEN),
                            seq_shape=(BATCH, 1, HIDDEN), weights_from="w"),
                  lambda b, o, body: lstm_loop(b, o, body, axis=1, state_shape=(1, BATCH, HIDDEN), concat=1,
                                               weights=const(b, p["w"])),
                  {"x": batch_major, "h0": p["h0"], "c0": p["c0"]})
    want = lstm_expected(p)
    check(built, {"x": batch_major, "h0": p["h0"], "c0": p["c0"]},
          {"h_out": want["h_out"][None], "c_out": want["c_out"][None], "seq": want["seq"].transpose(1, 0, 2)},
          fused=True)


def test_trip_count_below_the_slices_and_a_runtime_trip_count():
    rng = np.random.default_rng(12)
    p = lstm_parameters(rng)
    built = build(lstm_body(p), lambda b, o, body: lstm_loop(b, o, body, trip=4), lstm_feeds(p))
    check(built, lstm_feeds(p), lstm_expected(p, count=4), fused=True)
    # A trip count given at dispatch (last values only: a concatenation needs a static count).
    feeds = lstm_feeds(p)
    built = build(lstm_body(p), lambda b, o, body: lstm_loop(b, o, body, trip=o["trip"], outputs=("h_out", "c_out")),
                  {**feeds, "trip": np.array(3, np.int64)})
    for trip, count in ((3, 3), (-1, STEPS), (100, STEPS), (1, 1)):
        want = lstm_expected(p, count=count)
        check(built, {**feeds, "trip": np.array(trip, np.int64)}, {"h_out": want["h_out"], "c_out": want["c_out"]},
              fused=True)


def test_a_condition_passed_through_or_constant_false():
    """A body condition that passes a body input through unchanged (bound as-is, its back
    edge from itself): true runs every slice, false one iteration (do-while); a constant
    false body condition also runs one."""
    rng = np.random.default_rng(13)
    p = lstm_parameters(rng)
    feeds = lstm_feeds(p)

    def passed(b, _inputs):
        return b.identity(b.input("go", {"dataType": "uint8", "shape": []}))

    def outer(b, o, body):
        results = b.loop(b.constant("int32", -1), b.constant("uint8", 1), body, "cond",
                         [{"bodyInput": "x", "value": o["x"], "axis": 0},
                          {"bodyInput": "h", "value": o["h0"]}, {"bodyInput": "c", "value": o["c0"]},
                          {"bodyInput": "go", "value": o["go"]}],
                         [{"bodyOutput": "h_out"}, {"bodyOutput": "c_out"}],
                         {"backEdges": [{"from": "h_out", "to": "h"}, {"from": "c_out", "to": "c"},
                                        {"from": "cond", "to": "go"}]})
        return dict(zip(("h_out", "c_out"), results))

    built = build(lstm_body(p, condition=passed), outer, {**feeds, "go": np.array(1, np.uint8)})
    for go, count in ((1, STEPS), (0, 1), (7, STEPS)):
        want = lstm_expected(p, count=count)
        check(built, {**feeds, "go": np.array(go, np.uint8)}, {"h_out": want["h_out"], "c_out": want["c_out"]},
              fused=True)

    built = build(lstm_body(p, condition=lambda b, _inputs: b.identity(b.constant("uint8", 0))),
                  lambda b, o, body: lstm_loop(b, o, body), feeds)
    check(built, feeds, lstm_expected(p, count=1), fused=True)


def test_an_openvino_style_body_with_gathered_weights_and_a_split_bias():
    """Weights computed from an outer constant in the body (a gate re-ordering gather, as the
    OpenVINO importer emits for non-constant weights) and a GRU bias split by slice + concat
    (the importer's linear_before_reset): constant under the bindings, so still fused."""
    rng = np.random.default_rng(14)
    p = gru_parameters(rng)
    order = np.concatenate([np.arange(HIDDEN, 2 * HIDDEN), np.arange(HIDDEN), np.arange(2 * HIDDEN, 3 * HIDDEN)])
    stored_w = np.empty_like(p["w"])
    stored_w[order] = p["w"]                       # gather(stored_w, order) == p["w"]
    packed_bias = np.concatenate([p["bias"], p["rbias"][2 * HIDDEN:]])   # [z, r, n of W+R..., n of R]

    def body(b):
        x, h = b.input("x", f32(1, BATCH, INPUT)), b.input("h", f32(BATCH, HIDDEN))
        w = b.gather(b.input("w_stored", f32(3 * HIDDEN, INPUT)), const(b, order.astype(np.int32)), {"axis": 0})
        packed = const(b, packed_bias)
        bias = b.slice(packed, [0], [3 * HIDDEN])
        rbias = b.concat([const(b, np.zeros(2 * HIDDEN, F32)), b.slice(packed, [3 * HIDDEN], [HIDDEN])], 0)
        h2 = b.gruCell(b.reshape(x, [BATCH, INPUT]), w, const(b, p["r"]), h, HIDDEN,
                       {"bias": bias, "recurrentBias": rbias, "resetAfter": True})
        return {"h_out": h2, "cond": true(b)}

    built = build(body, lambda b, o, bd: {"h_out": b.loop(
        b.constant("int32", STEPS), b.constant("uint8", 1), bd, "cond",
        [{"bodyInput": "x", "value": o["x"], "axis": 0}, {"bodyInput": "h", "value": o["h0"]},
         {"bodyInput": "w_stored", "value": const(b, stored_w)}],
        [{"bodyOutput": "h_out"}], {"backEdges": [{"from": "h_out", "to": "h"}]})[0]}, {"x": p["x"], "h0": p["h0"]})
    rbias = np.concatenate([np.zeros(2 * HIDDEN, F32), p["rbias"][2 * HIDDEN:]])
    h, _ = gru_reference(p["x"], p["w"], p["r"], p["h0"], p["bias"], rbias)
    check(built, {"x": p["x"], "h0": p["h0"]}, {"h_out": h}, fused=True)


def test_the_fused_loop_reuses_its_runner_across_dispatches_and_batches_of_one():
    rng = np.random.default_rng(15)
    for batch in (1, BATCH):
        p = lstm_parameters(rng, batch=batch)

        def body(b, p=p, batch=batch):
            x, h, c = b.input("x", f32(1, batch, INPUT)), b.input("h", f32(batch, HIDDEN)), b.input("c", f32(batch, HIDDEN))
            h2, c2 = b.lstmCell(b.reshape(x, [batch, INPUT]), const(b, p["w"]), const(b, p["r"]), h, c, HIDDEN,
                                {"bias": const(b, p["bias"])})
            return {"h_out": h2, "c_out": c2, "cond": true(b)}

        built = build(body, lambda b, o, bd: dict(zip(("h_out", "c_out"), b.loop(
            b.constant("int32", STEPS), b.constant("uint8", 1), bd, "cond",
            [{"bodyInput": "x", "value": o["x"], "axis": 0}, {"bodyInput": "h", "value": o["h0"]},
             {"bodyInput": "c", "value": o["c0"]}], [{"bodyOutput": "h_out"}, {"bodyOutput": "c_out"}],
            {"backEdges": [{"from": "h_out", "to": "h"}, {"from": "c_out", "to": "c"}]}))), lstm_feeds(p))
        first = None
        for run in range(3):
            q = dict(p, x=_uniform(rng, STEPS, batch, INPUT)) if run else p
            h, c, _ = lstm_reference(q["x"], p["w"], p["r"], p["h0"], p["c0"], p["bias"])
            out = check(built, lstm_feeds(q), {"h_out": h, "c_out": c}, fused=True)
            if first is None:
                first = {k: v.copy() for k, v in out.items()}
                kept = out
        # Earlier results are the caller's: a later run does not write into them.
        for name in first:
            np.testing.assert_array_equal(kept[name], first[name])


# -- what keeps the per-iteration walk -------------------------------------------------------------


def _declined(make_body, make_outer, feeds, expected, walks):
    built = build(make_body, make_outer, feeds)
    check(built, feeds, expected, fused=False, walks=walks)


def test_a_condition_reading_the_state_is_walked():
    rng = np.random.default_rng(21)
    p = lstm_parameters(rng)

    def condition(b, inputs):       # go on while max(h) < 10: reads the carried state
        return b.cast(b.lesser(b.reduceMax(inputs["h"]), b.constant("float32", 10)), "uint8")
    want = lstm_expected(p)
    _declined(lstm_body(p, condition=condition),
              lambda b, o, body: lstm_loop(b, o, body, outputs=("h_out", "c_out")), lstm_feeds(p),
              {"h_out": want["h_out"], "c_out": want["c_out"]}, STEPS)


def test_an_extra_operation_is_walked():
    rng = np.random.default_rng(22)
    p = lstm_parameters(rng)

    def scaled(b, outputs):
        return {**outputs, "seq": b.mul(outputs["seq"], b.constant("float32", 2))}
    want = lstm_expected(p)
    _declined(lstm_body(p, extra=scaled), lambda b, o, body: lstm_loop(b, o, body), lstm_feeds(p),
              {**want, "seq": 2 * want["seq"]}, STEPS)


def test_weights_given_at_dispatch_are_walked():
    rng = np.random.default_rng(23)
    p = lstm_parameters(rng)
    feeds = {**lstm_feeds(p), "w": p["w"]}
    _declined(lstm_body(p, weights_from="w"), lambda b, o, body: lstm_loop(b, o, body, weights=o["w"]), feeds,
              lstm_expected(p), STEPS)


def test_a_state_without_a_back_edge_is_walked():
    """h bound as-is and never fed back (every step starts from h0), c carried."""
    rng = np.random.default_rng(29)
    p = lstm_parameters(rng)

    def outer(b, o, body):
        results = b.loop(b.constant("int32", STEPS), b.constant("uint8", 1), body, "cond",
                         [{"bodyInput": "x", "value": o["x"], "axis": 0}, {"bodyInput": "h", "value": o["h0"]},
                          {"bodyInput": "c", "value": o["c0"]}], [{"bodyOutput": "h_out"}, {"bodyOutput": "c_out"}],
                         {"backEdges": [{"from": "c_out", "to": "c"}]})
        return dict(zip(("h_out", "c_out"), results))

    c, h = p["c0"].astype(np.float64), None
    for x_t in p["x"]:
        h, c, _ = lstm_reference(x_t[None], p["w"], p["r"], p["h0"], c, p["bias"], p["rbias"], p["peephole"])
    _declined(lstm_body(p), outer, lstm_feeds(p), {"h_out": h, "c_out": c}, STEPS)


def test_a_concatenation_along_a_batch_axis_is_walked():
    """The parts [B, H] concatenated along axis 0 ([T * B, H]): not a new axis of size 1."""
    rng = np.random.default_rng(24)
    p = lstm_parameters(rng)
    want = lstm_expected(p)
    _declined(lstm_body(p, seq_shape=(BATCH, HIDDEN)), lambda b, o, body: lstm_loop(b, o, body), lstm_feeds(p),
              {**want, "seq": want["seq"].reshape(STEPS * BATCH, HIDDEN)}, STEPS)


def test_the_reverse_direction_through_current_iteration_is_walked():
    """Steps taken from the last slice to the first (x bound whole, gathered at
    T - 1 - currentIteration): the reference runs the reversed sequence."""
    rng = np.random.default_rng(25)
    p = lstm_parameters(rng)

    def body(b):
        i = b.input("i", {"dataType": "int32", "shape": []})
        index = b.sub(b.constant("int32", STEPS - 1), i)
        x_t = b.gather(b.input("x", f32(STEPS, BATCH, INPUT)), index, {"axis": 0})
        h2, c2 = b.lstmCell(x_t, const(b, p["w"]), const(b, p["r"]), b.input("h", f32(BATCH, HIDDEN)),
                            b.input("c", f32(BATCH, HIDDEN)), HIDDEN, {"bias": const(b, p["bias"])})
        return {"h_out": h2, "c_out": c2, "cond": true(b)}

    def outer(b, o, bd):
        return dict(zip(("h_out", "c_out"), b.loop(
            b.constant("int32", STEPS), b.constant("uint8", 1), bd, "cond",
            [{"bodyInput": "x", "value": o["x"]}, {"bodyInput": "h", "value": o["h0"]},
             {"bodyInput": "c", "value": o["c0"]}], [{"bodyOutput": "h_out"}, {"bodyOutput": "c_out"}],
            {"backEdges": [{"from": "h_out", "to": "h"}, {"from": "c_out", "to": "c"}], "currentIteration": "i"})))

    h, c, _ = lstm_reference(p["x"][::-1], p["w"], p["r"], p["h0"], p["c0"], p["bias"])
    _declined(body, outer, lstm_feeds(p), {"h_out": h, "c_out": c}, STEPS)


def test_two_stacked_cells_are_walked():
    rng = np.random.default_rng(26)
    p, q = lstm_parameters(rng), gru_parameters(rng)
    q_w = _uniform(rng, 3 * HIDDEN, HIDDEN)

    def body(b):
        h2, c2 = b.lstmCell(b.reshape(b.input("x", f32(1, BATCH, INPUT)), [BATCH, INPUT]), const(b, p["w"]),
                            const(b, p["r"]), b.input("h", f32(BATCH, HIDDEN)), b.input("c", f32(BATCH, HIDDEN)),
                            HIDDEN)
        g2 = b.gruCell(h2, const(b, q_w), const(b, q["r"]), b.input("g", f32(BATCH, HIDDEN)), HIDDEN)
        return {"h_out": h2, "c_out": c2, "g_out": g2, "cond": true(b)}

    def outer(b, o, bd):
        return {"g_out": b.loop(
            b.constant("int32", STEPS), b.constant("uint8", 1), bd, "cond",
            [{"bodyInput": "x", "value": o["x"], "axis": 0}, {"bodyInput": "h", "value": o["h0"]},
             {"bodyInput": "c", "value": o["c0"]}, {"bodyInput": "g", "value": o["h0"]}], [{"bodyOutput": "g_out"}],
            {"backEdges": [{"from": "h_out", "to": "h"}, {"from": "c_out", "to": "c"},
                           {"from": "g_out", "to": "g"}]})[0]}

    _, _, hs = lstm_reference(p["x"], p["w"], p["r"], p["h0"], p["c0"])
    g, _ = gru_reference(hs, q_w, q["r"], p["h0"])
    _declined(body, outer, lstm_feeds(p), {"g_out": g}, STEPS)


def test_float16_is_walked():
    rng = np.random.default_rng(27)
    p = gru_parameters(rng)
    half = {k: v.astype(np.float16) for k, v in p.items()}

    def body(b):
        x, h = b.input("x", {"dataType": "float16", "shape": [1, BATCH, INPUT]}), \
            b.input("h", {"dataType": "float16", "shape": [BATCH, HIDDEN]})
        return {"h_out": b.gruCell(b.reshape(x, [BATCH, INPUT]), const(b, half["w"]), const(b, half["r"]), h, HIDDEN),
                "cond": true(b)}

    built = build(body, lambda b, o, bd: {"h_out": b.loop(
        b.constant("int32", STEPS), b.constant("uint8", 1), bd, "cond",
        [{"bodyInput": "x", "value": o["x"], "axis": 0}, {"bodyInput": "h", "value": o["h0"]}],
        [{"bodyOutput": "h_out"}], {"backEdges": [{"from": "h_out", "to": "h"}]})[0]},
        {"x": half["x"], "h0": half["h0"]})
    fast, slow = built.run({"x": half["x"], "h0": half["h0"]})
    h, _ = gru_reference(half["x"], half["w"], half["r"], half["h0"])
    np.testing.assert_allclose(fast["h_out"], h, rtol=0, atol=1e-2)     # float16 rounding at every step
    np.testing.assert_array_equal(fast["h_out"], slow["h_out"])
    assert built.walks == STEPS


def test_zero_iterations_and_max_iterations_take_the_walk():
    """The fused kernel hands a false executionCondition (zero iterations: the initial
    states) and a count above maxIterations (its OperationError, after maxIterations walks)
    to the walk."""
    rng = np.random.default_rng(28)
    p = lstm_parameters(rng)
    feeds = lstm_feeds(p)

    def outer(b, o, body, **options):
        results = b.loop(o["trip"], o["go"], body, "cond",
                         [{"bodyInput": "x", "value": o["x"], "axis": 0}, {"bodyInput": "h", "value": o["h0"]},
                          {"bodyInput": "c", "value": o["c0"]}], [{"bodyOutput": "h_out"}, {"bodyOutput": "c_out"}],
                         {"backEdges": [{"from": "h_out", "to": "h"}, {"from": "c_out", "to": "c"}], **options})
        return dict(zip(("h_out", "c_out"), results))

    def inputs(trip, go):
        return {**feeds, "trip": np.array(trip, np.int32), "go": np.array(go, np.uint8)}

    built = build(lstm_body(p), lambda b, o, body: outer(b, o, body, maxIterations=4, label="rnn"), inputs(3, 1))
    want = lstm_expected(p, count=3)
    check(built, inputs(3, 1), {"h_out": want["h_out"], "c_out": want["c_out"]}, fused=True)
    want = lstm_expected(p, count=4)           # exactly maxIterations
    check(built, inputs(4, 1), {"h_out": want["h_out"], "c_out": want["c_out"]}, fused=True)
    check(built, inputs(3, 0), {"h_out": p["h0"], "c_out": p["c0"]}, fused=True)   # zero iterations, no walk

    messages = []
    for plan in (built.plan, built.plain):
        built.walks = 0
        with pytest.raises(OperationError) as caught:
            plan.execute(inputs(STEPS, 1))
        messages.append(str(caught.value))
        assert built.walks == 4
    assert messages[0] == messages[1] and "maxIterations (4)" in messages[0] and messages[0].startswith("[rnn] loop")


def test_a_reshaped_output_of_a_walked_loop_is_the_loop_step_s_own():
    """A reshape of a loop's result (the walk: the loop's kernel is a generator) goes into the
    loop's step (compiler/fusion.py _absorb_output_reshapes), driven to its end as before."""
    rng = np.random.default_rng(24)
    p = lstm_parameters(rng)

    def condition(b, inputs):       # reads the carried state: walked
        return b.cast(b.lesser(b.reduceMax(inputs["h"]), b.constant("float32", 10)), "uint8")

    def outer(b, o, body):
        results = lstm_loop(b, o, body, outputs=("h_out", "c_out"))
        return {"h_out": results["h_out"], "c_rows": b.reshape(results["c_out"], [BATCH, 1, HIDDEN])}
    want = lstm_expected(p)
    built = build(lstm_body(p, condition=condition), outer, lstm_feeds(p))
    names = [step.name for step in built.plan.steps]
    assert "reshape" not in names and [n for n in names if "loop" in n][0].endswith("loop+reshape")
    check(built, lstm_feeds(p), {"h_out": want["h_out"], "c_rows": want["c_out"].reshape(BATCH, 1, HIDDEN)},
          fused=False, walks=STEPS)
