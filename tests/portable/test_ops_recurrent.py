"""gru, gruCell, lstm, lstmCell (§8.9.25, §8.9.26, §8.9.33, §8.9.34): small hand-computed cases.

Portable: runs on host CPython and inside Pyodide. Expected values come from
the spec's formulas evaluated by hand on scalars (hiddenSize 1) with `math`.
"""
import math

import numpy as np

import webnn_py

from .expect import assert_close, raises
from .graph import compute


def f32(*values, shape=None):
    a = np.array(values, dtype=np.float32)
    return a.reshape(shape) if shape is not None else a


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


async def test_gru_cell_with_zero_weights_halves_the_state():
    # z = sigmoid(0) = 0.5 and n = tanh(0) = 0, so h' = 0.5 * h.
    inputs = {"x": f32(3, -1, shape=(1, 2)), "w": np.zeros((6, 2), np.float32),
              "r": np.zeros((6, 2), np.float32), "h": f32(1, -2, shape=(1, 2))}
    out = await compute(lambda b, o: b.gruCell(o["x"], o["w"], o["r"], o["h"], 2), inputs)
    assert out.tolist() == [[0.5, -1.0]]


def gru_scalar(x, h, w, r, b, rb, order="zrn", reset_after=True):
    """One hiddenSize-1 GRU step, by hand: w/r/b/rb are 3-tuples in `order`."""
    k = {g: order.index(g) for g in "zrn"}
    z = sigmoid(w[k["z"]] * x + b[k["z"]] + r[k["z"]] * h + rb[k["z"]])
    rr = sigmoid(w[k["r"]] * x + b[k["r"]] + r[k["r"]] * h + rb[k["r"]])
    if reset_after:
        n = math.tanh(w[k["n"]] * x + b[k["n"]] + rr * (r[k["n"]] * h + rb[k["n"]]))
    else:
        n = math.tanh(w[k["n"]] * x + b[k["n"]] + r[k["n"]] * (rr * h) + rb[k["n"]])
    return z * h + (1 - z) * n


W, R, B, RB = (0.5, -0.25, 0.75), (0.125, 0.5, -0.5), (0.1, -0.2, 0.3), (-0.3, 0.2, 0.4)


async def test_gru_cell_options_by_hand():
    for layout in ("zrn", "rzn"):
        for reset_after in (True, False):
            inputs = {"x": f32(0.5, shape=(1, 1)), "w": f32(*W, shape=(3, 1)), "r": f32(*R, shape=(3, 1)),
                      "h": f32(0.25, shape=(1, 1)), "b": f32(*B), "rb": f32(*RB)}
            out = await compute(lambda b, o: b.gruCell(o["x"], o["w"], o["r"], o["h"], 1, {
                "bias": o["b"], "recurrentBias": o["rb"], "layout": layout, "resetAfter": reset_after}), inputs)
            expected = gru_scalar(0.5, 0.25, W, R, B, RB, layout, reset_after)
            assert_close(out, np.array([[expected]], np.float32), atol=1e-6, what=f"gruCell {layout} {reset_after}")


async def test_gru_both_directions_with_sequence():
    xs = (1.0, -0.5)
    inputs = {"x": f32(*xs, shape=(2, 1, 1)), "w": f32(*W, *R, shape=(2, 3, 1)),
              "r": f32(*R, *W, shape=(2, 3, 1))}
    hidden, sequence = await compute(lambda b, o: b.gru(o["x"], o["w"], o["r"], 2, 1, {
        "direction": "both", "returnSequence": True}), inputs)
    zero = (0.0, 0.0, 0.0)
    forward = [gru_scalar(xs[0], 0.0, W, R, zero, zero)]
    forward.append(gru_scalar(xs[1], forward[0], W, R, zero, zero))
    # the backward direction reads the last step first and stores each state at its step's index
    backward_last = gru_scalar(xs[1], 0.0, R, W, zero, zero)
    backward_first = gru_scalar(xs[0], backward_last, R, W, zero, zero)
    assert hidden.shape == (2, 1, 1) and sequence.shape == (2, 2, 1, 1)
    assert_close(hidden.ravel(), f32(forward[1], backward_first), atol=1e-6)
    assert_close(sequence.ravel(), f32(forward[0], backward_first, forward[1], backward_last), atol=1e-6)


async def test_lstm_cell_with_zero_weights():
    # i = f = o = 0.5, g = tanh(0) = 0: c' = 0.5 c and h' = 0.5 tanh(c').
    inputs = {"x": f32(1, 2, shape=(1, 2)), "w": np.zeros((8, 2), np.float32), "r": np.zeros((8, 2), np.float32),
              "h": f32(5, 5, shape=(1, 2)), "c": f32(2, -4, shape=(1, 2))}
    h, c = await compute(lambda b, o: b.lstmCell(o["x"], o["w"], o["r"], o["h"], o["c"], 2), inputs)
    assert c.tolist() == [[1.0, -2.0]]
    assert_close(h, f32(0.5 * math.tanh(1), 0.5 * math.tanh(-2), shape=(1, 2)), atol=1e-6)


def lstm_scalar(x, h, c, w, r, b, p, order="iofg"):
    """One hiddenSize-1 LSTM step, by hand: w/r/b are 4-tuples in `order`, p = (pi, po, pf)."""
    k = {g: order.index(g) for g in "iofg"}

    def pre(g):
        return w[k[g]] * x + r[k[g]] * h + b[k[g]]
    i = sigmoid(pre("i") + p[0] * c)
    o = sigmoid(pre("o") + p[1] * c)
    f = sigmoid(pre("f") + p[2] * c)
    g = math.tanh(pre("g"))
    c_new = f * c + i * g
    return o * math.tanh(c_new), c_new


LW, LR, LB, LP = (0.5, -0.25, 0.75, 0.3), (0.125, 0.5, -0.5, 0.2), (0.1, -0.2, 0.3, -0.1), (0.2, -0.4, 0.6)


async def test_lstm_cell_peephole_and_layout_by_hand():
    for layout in ("iofg", "ifgo"):
        inputs = {"x": f32(0.5, shape=(1, 1)), "w": f32(*LW, shape=(4, 1)), "r": f32(*LR, shape=(4, 1)),
                  "h": f32(0.25, shape=(1, 1)), "c": f32(-0.75, shape=(1, 1)), "b": f32(*LB), "p": f32(*LP)}
        h, c = await compute(lambda b, o: b.lstmCell(o["x"], o["w"], o["r"], o["h"], o["c"], 1, {
            "bias": o["b"], "peepholeWeight": o["p"], "layout": layout}), inputs)
        eh, ec = lstm_scalar(0.5, 0.25, -0.75, LW, LR, LB, LP, layout)
        assert_close(h, f32(eh, shape=(1, 1)), atol=1e-6, what=f"lstmCell h {layout}")
        assert_close(c, f32(ec, shape=(1, 1)), atol=1e-6, what=f"lstmCell c {layout}")


async def test_lstm_backward_with_sequence():
    xs = (1.0, -0.5, 0.25)
    inputs = {"x": f32(*xs, shape=(3, 1, 1)), "w": f32(*LW, shape=(1, 4, 1)), "r": f32(*LR, shape=(1, 4, 1)),
              "rb": f32(*LB, shape=(1, 4)), "c0": f32(0.5, shape=(1, 1, 1))}
    h, c, seq = await compute(lambda b, o: b.lstm(o["x"], o["w"], o["r"], 3, 1, {
        "recurrentBias": o["rb"], "initialCellState": o["c0"], "direction": "backward",
        "returnSequence": True}), inputs)
    state, expected_seq = (0.0, 0.5), [None] * 3
    for t in (2, 1, 0):
        state = lstm_scalar(xs[t], *state, LW, LR, LB, (0, 0, 0))
        expected_seq[t] = state[0]
    assert_close(h, f32(state[0], shape=(1, 1, 1)), atol=1e-6)
    assert_close(c, f32(state[1], shape=(1, 1, 1)), atol=1e-6)
    assert_close(seq, f32(*expected_seq, shape=(3, 1, 1, 1)), atol=1e-6)


async def test_validation_errors():
    context = await webnn_py.ml.createContext()
    b = webnn_py.MLGraphBuilder(context)

    def t(name, *shape, dtype="float32"):
        return b.input(name, {"dataType": dtype, "shape": list(shape)})
    x, w, r = t("x", 3, 2, 4), t("w", 1, 6, 4), t("r", 1, 6, 2)
    with raises(TypeError, match=r"^gru: input's shape\[0\] 3 is not steps 2"):
        b.gru(x, w, r, 2, 2)
    with raises(TypeError, match=r"^\[g\] gru: activations has 1 entries; expected 2"):
        b.gru(x, w, r, 3, 2, {"activations": ["relu"], "label": "g"})
    with raises(TypeError, match=r"^gruCell: hiddenState has shape \[2, 3\]; expected \[2, 2\]"):
        b.gruCell(t("cx", 2, 4), t("cw", 6, 4), t("cr", 6, 2), t("ch", 2, 3), 2)
    with raises(TypeError, match="^lstm: steps is 0"):
        b.lstm(x, t("lw", 1, 8, 4), t("lr", 1, 8, 2), 0, 2)
    with raises(TypeError, match=r"^lstmCell: peepholeWeight has shape \[8\]; expected \[6\]"):
        b.lstmCell(t("lx", 2, 4), t("lw2", 8, 4), t("lr2", 8, 2), t("lh", 2, 2), t("lc", 2, 2), 2,
                   {"peepholeWeight": t("lp", 8)})
    with raises(TypeError, match="^lstmCell: input has data type int32"):
        b.lstmCell(t("ix", 2, 4, dtype="int32"), t("lw3", 8, 4), t("lr3", 8, 2), t("lh3", 2, 2), t("lc3", 2, 2), 2)
