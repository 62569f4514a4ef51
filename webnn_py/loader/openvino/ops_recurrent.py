"""LSTMSequence-5, GRUSequence-5, LSTMCell-4 and GRUCell-3 onto WebNN's lstm,
gru, lstmCell and gruCell; RNNCell-1 and RNNSequence-5 (which WebNN has no
operator for) as gemm + activation, unrolled over the sequence.

OpenVINO orders an LSTM's gates f, i, c, o; WebNN's "ifgo" layout is i, f, g
(= c), o, so the first two gate blocks of W, R and B are swapped (folded for
constant weights, a gather otherwise). GRU gates are z, r, h in both ("zrn").
With linear_before_reset a GRU's B holds four blocks [z, r, h of W + R
summed for z and r, h of W, h of R]: WebNN's bias is the first three, its
recurrentBias zeros and the last one (resetAfter). OpenVINO's sequences are
batch-major ([B, T, I], states [B, D, H], Y [B, D, T, H]); WebNN's are
time-major ([T, B, I], [D, B, H], [T, D, B, H]). Every sequence length must be
the full T (shorter ones stop a row early, which WebNN's operators cannot);
`clip` and activation alpha/beta are not supported.
"""
from __future__ import annotations

import numpy as np

_DIRECTIONS = {"forward": "forward", "reverse": "backward", "bidirectional": "both"}
_ACTIVATIONS = ("relu", "sigmoid", "tanh")


def _activations(t, default: list[str]) -> list[str]:
    text = t.layer.data.get("activations")
    names = [a.strip().lower() for a in text.split(",")] if text else list(default)
    if len(names) != len(default) or any(a not in _ACTIVATIONS for a in names):
        raise t.unsupported(f"activations {names} are not supported ({len(default)} of {', '.join(_ACTIVATIONS)})")
    if t.layer.data.get("activations_alpha") or t.layer.data.get("activations_beta"):
        raise t.unsupported("activations_alpha / activations_beta are not supported")
    clip = t.layer.data.get("clip", "0")
    try:
        clipped = float(clip) != 0
    except ValueError:
        raise t.malformed(f"the 'clip' attribute {clip!r} is not a number") from None
    if clipped:
        raise t.unsupported(f"clip {clip} is not supported (WebNN's recurrent operators do not clip)")
    return names


def _blocks(t, value, order: list[int], axis: int):
    """value with its gate blocks (equal parts along `axis`) put in `order`."""
    size = t.shape(value)[axis]
    if size % len(order):
        raise t.malformed(f"a weight's axis {axis} of size {size} is not {len(order)} gate blocks")
    step = size // len(order)
    index = np.concatenate([np.arange(g * step, (g + 1) * step) for g in order])
    if isinstance(value, np.ndarray):
        return t.operand(np.take(value, index, axis=axis))
    return t.b.gather(t.operand(value), t.operand(index.astype(np.int32)), {"axis": axis})


def _full_lengths(t, lengths, steps: int) -> None:
    values = t.ints(lengths, "sequence_lengths")
    if any(v != steps for v in values):
        raise t.unsupported(f"sequence_lengths {values} are not all the sequence's length {steps}")


def _time_major(t, x):
    return t.b.transpose(t.operand(x), {"permutation": [1, 0, 2]})


def _ifgo(t, value, axis: int):
    """An LSTM weight or bias with OpenVINO's f, i, c, o gate blocks along `axis` in WebNN's "ifgo" order."""
    return _blocks(t, value, [1, 0, 2, 3], axis)


def _gru_options(t, bias, hidden: int, axis: int) -> dict:
    """The options of WebNN's gru/gruCell shared by GRUSequence and GRUCell:
    bias (and recurrentBias with linear_before_reset), layout, activations."""
    reset_after = t.attr_flag("linear_before_reset")
    options = {"resetAfter": reset_after, "layout": "zrn", "activations": _activations(t, ["sigmoid", "tanh"])}
    if not reset_after:
        return options | {"bias": t.operand(bias)}
    b = t.operand(bias)
    if b.shape[axis] != 4 * hidden:
        raise t.malformed(f"with linear_before_reset, B has 4 gate blocks, not shape {list(b.shape)}")
    starts = [0] * len(b.shape)
    sizes = list(b.shape)
    sizes[axis] = 3 * hidden
    first = t.b.slice(b, starts, sizes)
    starts[axis], sizes[axis] = 3 * hidden, hidden
    last = t.b.slice(b, starts, sizes)
    zeros_shape = list(b.shape)
    zeros_shape[axis] = 2 * hidden
    zeros = t.operand(np.zeros(zeros_shape, np.dtype(b.dataType)))
    return options | {"bias": first, "recurrentBias": t.b.concat([zeros, last], axis)}


def _sequence_attributes(t, x, lengths):
    """(steps, hidden_size, WebNN direction) of a *Sequence layer, its lengths checked full."""
    steps = t.shape(x)[1]
    _full_lengths(t, lengths, steps)
    direction = _DIRECTIONS.get(t.layer.data.get("direction", "forward").lower())
    if direction is None:
        raise t.malformed(f"direction {t.layer.data.get('direction')!r} is not forward, reverse or bidirectional")
    return steps, t.attr_int("hidden_size"), direction


def lstm_sequence(t, inputs):
    t.arity(inputs, 7)
    x, h0, c0, lengths, w, r, bias = inputs
    steps, hidden, direction = _sequence_attributes(t, x, lengths)
    h, c, y = t.b.lstm(_time_major(t, x), _ifgo(t, w, 1), _ifgo(t, r, 1), steps,
                       hidden, {"bias": _ifgo(t, bias, 1),
                                "initialHiddenState": _time_major(t, h0), "initialCellState": _time_major(t, c0),
                                "returnSequence": True, "direction": direction, "layout": "ifgo",
                                "activations": _activations(t, ["sigmoid", "tanh", "tanh"])})
    return [t.b.transpose(y, {"permutation": [2, 1, 0, 3]}), _time_major(t, h), _time_major(t, c)]


def gru_sequence(t, inputs):
    t.arity(inputs, 6)
    x, h0, lengths, w, r, bias = inputs
    steps, hidden, direction = _sequence_attributes(t, x, lengths)
    options = _gru_options(t, bias, hidden, 1) | {"initialHiddenState": _time_major(t, h0),
                                                   "returnSequence": True, "direction": direction}
    h, y = t.b.gru(_time_major(t, x), t.operand(w), t.operand(r), steps, hidden, options)
    return [t.b.transpose(y, {"permutation": [2, 1, 0, 3]}), _time_major(t, h)]


def lstm_cell(t, inputs):
    """LSTMCell-4 (LSTMCell-1 without peepholes: the same six inputs)."""
    if len(inputs) == 7:
        raise t.unsupported("LSTMCell-1 with peephole weights is not supported")
    t.arity(inputs, 6)
    x, h0, c0, w, r, bias = inputs
    hidden = t.attr_int("hidden_size")
    h, c = t.b.lstmCell(t.operand(x), _ifgo(t, w, 0), _ifgo(t, r, 0),
                        t.operand(h0), t.operand(c0), hidden,
                        {"bias": _ifgo(t, bias, 0), "layout": "ifgo",
                         "activations": _activations(t, ["sigmoid", "tanh", "tanh"])})
    return [h, c]


def gru_cell(t, inputs):
    t.arity(inputs, 5)
    x, h0, w, r, bias = inputs
    hidden = t.attr_int("hidden_size")
    return [t.b.gruCell(t.operand(x), t.operand(w), t.operand(r), t.operand(h0), hidden,
                        _gru_options(t, bias, hidden, 0))]


def _rnn_step(t, x, h, w, r, bias, activation: str):
    """RNNCell-1: f(x W^T + h R^T + B)."""
    pre = t.b.add(t.b.add(t.b.gemm(x, w, {"bTranspose": True}), t.b.gemm(h, r, {"bTranspose": True})), bias)
    return getattr(t.b, activation)(pre)


def rnn_cell(t, inputs):
    """RNNCell-1 (WebNN has no plain RNN operator: gemm + activation)."""
    t.arity(inputs, 5)
    x, h0, w, r, bias = (t.operand(v) for v in inputs)
    (activation,) = _activations(t, ["tanh"])
    return [_rnn_step(t, x, h0, w, r, bias, activation)]


def rnn_sequence(t, inputs):
    """RNNSequence-5 unrolled over its static length: one RNNCell step per time
    step and direction (reverse walks the steps backwards); Y stacks the
    hidden states in time order."""
    t.arity(inputs, 6)
    x_value, h0, lengths, w, r, bias = inputs
    batch, _, size = t.shape(x_value)
    steps, hidden, direction = _sequence_attributes(t, x_value, lengths)
    (activation,) = _activations(t, ["tanh"])
    x, h0, w, r, bias = (t.operand(v) for v in (x_value, h0, w, r, bias))
    plan = {"forward": [("forward", 0)], "backward": [("reverse", 0)],
            "both": [("forward", 0), ("reverse", 1)]}[direction]
    sequences, finals = [], []
    for way, d in plan:
        def pick(value):
            """Direction d's slice of a [D, ...] weight or bias."""
            inner = list(value.shape[1:])
            return t.b.reshape(t.b.slice(value, [d] + [0] * len(inner), [1] + inner), inner)
        w_d, r_d, b_d = pick(w), pick(r), pick(bias)
        h = t.b.reshape(t.b.slice(h0, [0, d, 0], [batch, 1, hidden]), [batch, hidden])
        states = [None] * steps
        for step in (range(steps) if way == "forward" else range(steps - 1, -1, -1)):
            x_t = t.b.reshape(t.b.slice(x, [0, step, 0], [batch, 1, size]), [batch, size])
            h = _rnn_step(t, x_t, h, w_d, r_d, b_d, activation)
            states[step] = t.b.reshape(h, [batch, 1, 1, hidden])
        sequences.append(t.b.concat(states, 2) if steps > 1 else states[0])
        finals.append(t.b.reshape(h, [batch, 1, hidden]))
    y = t.b.concat(sequences, 1) if len(sequences) > 1 else sequences[0]
    ho = t.b.concat(finals, 1) if len(finals) > 1 else finals[0]
    return [y, ho]


TRANSLATORS = {"LSTMSequence": lstm_sequence, "GRUSequence": gru_sequence, "LSTMCell": lstm_cell,
               "GRUCell": gru_cell, "RNNCell": rnn_cell, "RNNSequence": rnn_sequence}
