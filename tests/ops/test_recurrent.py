"""gru (§8.9.25), gruCell (§8.9.26), lstm (§8.9.33), lstmCell (§8.9.34).

Two independent references:
  * torch.nn.GRU / GRUCell / LSTM / LSTMCell, with our packed weights permuted
    into torch's gate order (GRU r,z,n with reset-after; LSTM i,f,g,o), for
    what torch models (default activations, no peepholes, resetAfter=true);
  * a float64 reference written here from the spec's formulas with torch tensor
    ops, for every option torch lacks (layouts, resetAfter=false, peepholes,
    other activations, backward direction).
float16 results are compared with the float64 reference of the same (float16)
inputs rounded to float16, under an ATOL budget.
"""
import itertools

import numpy as np
import pytest

from tests.portable.expect import assert_close
from webnn_py.base.descriptor import OperandDescriptor
from webnn_py.ops import recurrent
from webnn_py.ops.registry import BuildContext

from .conftest import FLOAT_TYPES, run, torch

F64 = torch.float64
ACT = {"relu": torch.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh}


def atol(dtype, steps=1):
    # WPT-like budgets: float32 1e-5 per accumulated step; float16 ~2 ULP near 1 per step.
    return (1e-5 if np.dtype(dtype) == np.float32 else 2e-3) * steps


def rand(rng, shape, dtype, scale=1.0):
    return (rng.uniform(-scale, scale, size=shape)).astype(dtype)


def t64(a):
    return None if a is None else torch.from_numpy(np.asarray(a, dtype=np.float64))


# -- float64 reference from the spec's formulas -------------------------------------------

def part(tensor, order, gate, hidden):
    k = order.index(gate)
    return tensor[..., k * hidden:(k + 1) * hidden]


def ref_gru_cell(x, w, r, h, hidden, bias=None, recurrent_bias=None, layout="zrn", reset_after=True,
                 activations=("sigmoid", "tanh")):
    """§8.9.26 decomposition, one time step; all tensors float64."""
    b = bias if bias is not None else torch.zeros(3 * hidden, dtype=F64)
    rb = recurrent_bias if recurrent_bias is not None else torch.zeros(3 * hidden, dtype=F64)
    f, g = ACT[activations[0]], ACT[activations[1]]

    def gate_in(name):
        return x @ part(w.T, layout, name, hidden) + part(b, layout, name, hidden)

    def gate_rec(name, state):
        return state @ part(r.T, layout, name, hidden) + part(rb, layout, name, hidden)

    z = f(gate_in("z") + gate_rec("z", h))
    rr = f(gate_in("r") + gate_rec("r", h))
    if reset_after:
        n = g(gate_in("n") + rr * gate_rec("n", h))
    else:
        n = g(gate_in("n") + gate_rec("n", rr * h))
    return z * h + (1 - z) * n


def ref_lstm_cell(x, w, r, h, c, hidden, bias=None, recurrent_bias=None, peephole=None, layout="iofg",
                  activations=("sigmoid", "tanh", "tanh")):
    """§8.9.34 decomposition, one time step; all tensors float64. Returns (h, c)."""
    zeros = torch.zeros(4 * hidden, dtype=F64)
    b = bias if bias is not None else zeros
    rb = recurrent_bias if recurrent_bias is not None else zeros
    p = peephole if peephole is not None else torch.zeros(3 * hidden, dtype=F64)
    f_act, g_act, h_act = (ACT[a] for a in activations)

    def pre(name):
        return (part(b, layout, name, hidden) + part(rb, layout, name, hidden)
                + x @ part(w.T, layout, name, hidden) + h @ part(r.T, layout, name, hidden))

    i = f_act(c * part(p, "iof", "i", hidden) + pre("i"))
    f = f_act(c * part(p, "iof", "f", hidden) + pre("f"))
    g = g_act(pre("g"))
    o = f_act(c * part(p, "iof", "o", hidden) + pre("o"))
    ct = f * c + i * g
    return o * h_act(ct), ct


def ref_network(cell, x, weights, states, steps, direction):
    """The spec's gru/lstm decomposition loop: per direction, per time step (backward
    reads steps - 1 - t) and stores each output at the time index it came from.
    `weights(d)` gives the direction's cell kwargs; `states` the initial states by the cell's argument names."""
    num_directions = 2 if direction == "both" else 1
    finals, sequence = [], [[None] * num_directions for _ in range(steps)]
    for d in range(num_directions):
        state = tuple(s[d] for s in states.values())
        for step in range(steps):
            t = steps - step - 1 if d == 1 or direction == "backward" else step
            out = cell(x[t], **dict(zip(states, state)), **weights(d))
            state = out if isinstance(out, tuple) else (out,)
            sequence[t][d] = state[0]
        finals.append(state)
    final = [torch.stack([f[k] for f in finals]) for k in range(len(finals[0]))]
    seq = torch.stack([torch.stack(row) for row in sequence])
    return final, seq


def operand_dict(builder_inputs, names):
    return {n: builder_inputs[n] for n in names if n in builder_inputs}


# -- gru -----------------------------------------------------------------------------------

STEPS, BATCH, INPUT, HIDDEN = 3, 2, 4, 3


def gru_arrays(rng, dtype, num_directions, *, bias=True, recurrent_bias=True, initial=True):
    arrays = {"input": rand(rng, (STEPS, BATCH, INPUT), dtype),
              "weight": rand(rng, (num_directions, 3 * HIDDEN, INPUT), dtype, 0.6),
              "recurrentWeight": rand(rng, (num_directions, 3 * HIDDEN, HIDDEN), dtype, 0.6)}
    if bias:
        arrays["bias"] = rand(rng, (num_directions, 3 * HIDDEN), dtype, 0.5)
    if recurrent_bias:
        arrays["recurrentBias"] = rand(rng, (num_directions, 3 * HIDDEN), dtype, 0.5)
    if initial:
        arrays["initialHiddenState"] = rand(rng, (num_directions, BATCH, HIDDEN), dtype)
    return arrays


def run_gru(arrays, options):
    def build(builder, x):
        opts = {**options, **operand_dict(x, recurrent.GRU_OPTIONAL)}
        return builder.gru(x["input"], x["weight"], x["recurrentWeight"], STEPS, HIDDEN, opts)
    return run(build, arrays)


def ref_gru(arrays, options):
    direction = options.get("direction", "forward")
    nd = 2 if direction == "both" else 1
    a = {k: t64(v) for k, v in arrays.items()}
    h0 = a.get("initialHiddenState", torch.zeros(nd, BATCH, HIDDEN, dtype=F64))

    def weights(d):
        return dict(w=a["weight"][d], r=a["recurrentWeight"][d], hidden=HIDDEN,
                    bias=a["bias"][d] if "bias" in a else None,
                    recurrent_bias=a["recurrentBias"][d] if "recurrentBias" in a else None,
                    layout=options.get("layout", "zrn"), reset_after=options.get("resetAfter", True),
                    activations=options.get("activations", ("sigmoid", "tanh")))
    (final,), seq = ref_network(ref_gru_cell, a["input"], weights, {"h": h0}, STEPS, direction)
    return [final.numpy(), seq.numpy()]


def check(got, expected, dtype, steps, what):
    assert got.dtype == np.dtype(dtype)
    assert_close(got, expected.astype(dtype), atol=atol(dtype, steps), what=what)


GRU_OPTION_GRID = [
    dict(layout=layout, resetAfter=reset_after, direction=direction, returnSequence=True)
    for layout, reset_after, direction in itertools.product(("zrn", "rzn"), (True, False),
                                                             ("forward", "backward", "both"))
]


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("options", GRU_OPTION_GRID, ids=lambda o: "-".join(str(v) for v in o.values()))
def test_gru_options_against_spec_formulas(options, dtype, rng):
    nd = 2 if options["direction"] == "both" else 1
    arrays = gru_arrays(rng, dtype, nd)
    hidden, sequence = run_gru(arrays, options)
    expected_hidden, expected_sequence = ref_gru(arrays, options)
    assert hidden.shape == (nd, BATCH, HIDDEN) and sequence.shape == (STEPS, nd, BATCH, HIDDEN)
    check(hidden, expected_hidden, dtype, STEPS, "gru hidden")
    check(sequence, expected_sequence, dtype, STEPS, "gru sequence")


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("activations", [["relu", "tanh"], ["tanh", "relu"], ["sigmoid", "sigmoid"],
                                         ["relu", "relu"]])
def test_gru_activations(activations, dtype, rng):
    arrays = gru_arrays(rng, dtype, 2)
    options = {"activations": activations, "direction": "both", "returnSequence": True, "layout": "rzn"}
    got = run_gru(arrays, options)
    for g, e, what in zip(got, ref_gru(arrays, options), ("hidden", "sequence")):
        check(g, e, dtype, STEPS, f"gru {activations} {what}")


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("present", [dict(bias=False, recurrent_bias=False, initial=False),
                                     dict(bias=True, recurrent_bias=False, initial=False),
                                     dict(bias=False, recurrent_bias=True, initial=True)],
                         ids=["none", "bias", "recurrentBias+initial"])
def test_gru_optional_operands_absent(present, dtype, rng):
    arrays = gru_arrays(rng, dtype, 1, **present)
    for reset_after in (True, False):
        got = run_gru(arrays, {"resetAfter": reset_after})
        assert len(got) == 1, "returnSequence defaults to false: one output"
        check(got[0], ref_gru(arrays, {"resetAfter": reset_after})[0], dtype, STEPS, "gru")


def to_torch_gru_order(a, layout, hidden):
    """Our packed gates (zrn or rzn) along dimension 0 → torch's r, z, n order."""
    order = recurrent.GRU_GATES[layout]
    return np.concatenate([a[order.index(g) * hidden:(order.index(g) + 1) * hidden] for g in "rzn"], axis=0)


def to_torch_lstm_order(a, layout, hidden):
    order = recurrent.LSTM_GATES[layout]
    return np.concatenate([a[order.index(g) * hidden:(order.index(g) + 1) * hidden] for g in "ifgo"], axis=0)


def load_torch_rnn(module, arrays, convert, layout, nd, gates):
    with torch.no_grad():
        for d in range(nd):
            suffix = "_reverse" if d else ""
            zeros = np.zeros(gates * HIDDEN, np.float32)
            for name, key in (("weight_ih_l0", "weight"), ("weight_hh_l0", "recurrentWeight"),
                              ("bias_ih_l0", "bias"), ("bias_hh_l0", "recurrentBias")):
                value = arrays[key][d] if key in arrays else zeros
                getattr(module, name + suffix).copy_(torch.from_numpy(
                    convert(value.astype(np.float64), layout, HIDDEN)))


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", ["zrn", "rzn"])
@pytest.mark.parametrize("direction", ["forward", "both"])
def test_gru_against_torch(direction, layout, dtype, rng):
    nd = 2 if direction == "both" else 1
    arrays = gru_arrays(rng, dtype, nd)
    got_hidden, got_sequence = run_gru(arrays, {"direction": direction, "layout": layout, "returnSequence": True})
    module = torch.nn.GRU(INPUT, HIDDEN, bidirectional=nd == 2, dtype=F64)
    load_torch_rnn(module, arrays, to_torch_gru_order, layout, nd, 3)
    with torch.no_grad():
        out, h_n = module(t64(arrays["input"]), t64(arrays["initialHiddenState"]))
    check(got_hidden, h_n.numpy(), dtype, STEPS, "gru h_n vs torch")
    # torch's output is [steps, batch, numDirections * hidden]; ours [steps, numDirections, batch, hidden]
    expected_sequence = out.numpy().reshape(STEPS, BATCH, nd, HIDDEN).transpose(0, 2, 1, 3)
    check(got_sequence, expected_sequence, dtype, STEPS, "gru sequence vs torch")


# -- gruCell ----------------------------------------------------------------------------------

def gru_cell_arrays(rng, dtype, bias=True, recurrent_bias=True):
    arrays = {"input": rand(rng, (BATCH, INPUT), dtype), "weight": rand(rng, (3 * HIDDEN, INPUT), dtype, 0.6),
              "recurrentWeight": rand(rng, (3 * HIDDEN, HIDDEN), dtype, 0.6),
              "hiddenState": rand(rng, (BATCH, HIDDEN), dtype)}
    if bias:
        arrays["bias"] = rand(rng, (3 * HIDDEN,), dtype, 0.5)
    if recurrent_bias:
        arrays["recurrentBias"] = rand(rng, (3 * HIDDEN,), dtype, 0.5)
    return arrays


def run_gru_cell(arrays, options):
    def build(builder, x):
        opts = {**options, **operand_dict(x, ("bias", "recurrentBias"))}
        return builder.gruCell(x["input"], x["weight"], x["recurrentWeight"], x["hiddenState"], HIDDEN, opts)
    return run(build, arrays)


def ref_gru_cell_arrays(arrays, options):
    a = {k: t64(v) for k, v in arrays.items()}
    return ref_gru_cell(a["input"], a["weight"], a["recurrentWeight"], a["hiddenState"], HIDDEN,
                        a.get("bias"), a.get("recurrentBias"), options.get("layout", "zrn"),
                        options.get("resetAfter", True), options.get("activations", ("sigmoid", "tanh"))).numpy()


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("options", [
    {}, {"layout": "rzn"}, {"resetAfter": False}, {"layout": "rzn", "resetAfter": False},
    {"activations": ["relu", "tanh"]}, {"activations": ["tanh", "sigmoid"], "resetAfter": False},
    {"activations": ["relu", "relu"], "layout": "rzn"},
], ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()) or "defaults")
def test_gru_cell_options_against_spec_formulas(options, dtype, rng):
    arrays = gru_cell_arrays(rng, dtype)
    got = run_gru_cell(arrays, options)
    assert got.shape == (BATCH, HIDDEN)
    check(got, ref_gru_cell_arrays(arrays, options), dtype, 1, f"gruCell {options}")


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("bias,recurrent_bias", [(False, False), (True, False), (False, True)])
def test_gru_cell_optional_biases(bias, recurrent_bias, dtype, rng):
    arrays = gru_cell_arrays(rng, dtype, bias, recurrent_bias)
    for options in ({}, {"resetAfter": False}):
        check(run_gru_cell(arrays, options), ref_gru_cell_arrays(arrays, options), dtype, 1, "gruCell")


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", ["zrn", "rzn"])
def test_gru_cell_against_torch(layout, dtype, rng):
    arrays = gru_cell_arrays(rng, dtype)
    got = run_gru_cell(arrays, {"layout": layout})
    module = torch.nn.GRUCell(INPUT, HIDDEN, dtype=F64)
    with torch.no_grad():
        for name, key in (("weight_ih", "weight"), ("weight_hh", "recurrentWeight"), ("bias_ih", "bias"),
                          ("bias_hh", "recurrentBias")):
            getattr(module, name).copy_(torch.from_numpy(
                to_torch_gru_order(arrays[key].astype(np.float64), layout, HIDDEN)))
        expected = module(t64(arrays["input"]), t64(arrays["hiddenState"])).numpy()
    check(got, expected, dtype, 1, "gruCell vs torch")


# -- lstm ----------------------------------------------------------------------------------

def lstm_arrays(rng, dtype, nd, *, bias=True, recurrent_bias=True, peephole=True, hidden0=True, cell0=True):
    arrays = {"input": rand(rng, (STEPS, BATCH, INPUT), dtype),
              "weight": rand(rng, (nd, 4 * HIDDEN, INPUT), dtype, 0.6),
              "recurrentWeight": rand(rng, (nd, 4 * HIDDEN, HIDDEN), dtype, 0.6)}
    if bias:
        arrays["bias"] = rand(rng, (nd, 4 * HIDDEN), dtype, 0.5)
    if recurrent_bias:
        arrays["recurrentBias"] = rand(rng, (nd, 4 * HIDDEN), dtype, 0.5)
    if peephole:
        arrays["peepholeWeight"] = rand(rng, (nd, 3 * HIDDEN), dtype, 0.5)
    if hidden0:
        arrays["initialHiddenState"] = rand(rng, (nd, BATCH, HIDDEN), dtype)
    if cell0:
        arrays["initialCellState"] = rand(rng, (nd, BATCH, HIDDEN), dtype)
    return arrays


def run_lstm(arrays, options):
    def build(builder, x):
        opts = {**options, **operand_dict(x, recurrent.LSTM_OPTIONAL)}
        return builder.lstm(x["input"], x["weight"], x["recurrentWeight"], STEPS, HIDDEN, opts)
    return run(build, arrays)


def ref_lstm(arrays, options):
    direction = options.get("direction", "forward")
    nd = 2 if direction == "both" else 1
    a = {k: t64(v) for k, v in arrays.items()}
    zeros = torch.zeros(nd, BATCH, HIDDEN, dtype=F64)
    h0, c0 = a.get("initialHiddenState", zeros), a.get("initialCellState", zeros)

    def weights(d):
        return dict(w=a["weight"][d], r=a["recurrentWeight"][d], hidden=HIDDEN,
                    bias=a["bias"][d] if "bias" in a else None,
                    recurrent_bias=a["recurrentBias"][d] if "recurrentBias" in a else None,
                    peephole=a["peepholeWeight"][d] if "peepholeWeight" in a else None,
                    layout=options.get("layout", "iofg"),
                    activations=options.get("activations", ("sigmoid", "tanh", "tanh")))
    (h, c), seq = ref_network(ref_lstm_cell, a["input"], weights, {"h": h0, "c": c0}, STEPS, direction)
    return [h.numpy(), c.numpy(), seq.numpy()]


LSTM_OPTION_GRID = [dict(layout=layout, direction=direction, returnSequence=True)
                    for layout, direction in itertools.product(("iofg", "ifgo"), ("forward", "backward", "both"))]


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("options", LSTM_OPTION_GRID, ids=lambda o: "-".join(str(v) for v in o.values()))
def test_lstm_options_against_spec_formulas(options, dtype, rng):
    nd = 2 if options["direction"] == "both" else 1
    arrays = lstm_arrays(rng, dtype, nd)
    got = run_lstm(arrays, options)
    assert [g.shape for g in got] == [(nd, BATCH, HIDDEN)] * 2 + [(STEPS, nd, BATCH, HIDDEN)]
    for g, e, what in zip(got, ref_lstm(arrays, options), ("hidden", "cell", "sequence")):
        check(g, e, dtype, STEPS, f"lstm {what}")


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("activations", [["relu", "tanh", "tanh"], ["sigmoid", "relu", "sigmoid"],
                                         ["tanh", "sigmoid", "relu"], ["relu", "relu", "relu"]])
def test_lstm_activations(activations, dtype, rng):
    arrays = lstm_arrays(rng, dtype, 2)
    options = {"activations": activations, "direction": "both", "returnSequence": True, "layout": "ifgo"}
    for g, e, what in zip(run_lstm(arrays, options), ref_lstm(arrays, options), ("hidden", "cell", "sequence")):
        check(g, e, dtype, STEPS, f"lstm {activations} {what}")


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("present", [
    dict(bias=False, recurrent_bias=False, peephole=False, hidden0=False, cell0=False),
    dict(bias=True, recurrent_bias=False, peephole=False, hidden0=True, cell0=False),
    dict(bias=False, recurrent_bias=True, peephole=True, hidden0=False, cell0=True),
], ids=["none", "bias+hidden0", "recurrentBias+peephole+cell0"])
def test_lstm_optional_operands_absent(present, dtype, rng):
    arrays = lstm_arrays(rng, dtype, 1, **present)
    got = run_lstm(arrays, {})
    assert len(got) == 2, "returnSequence defaults to false: hidden and cell outputs"
    for g, e, what in zip(got, ref_lstm(arrays, {}), ("hidden", "cell")):
        check(g, e, dtype, STEPS, f"lstm {what}")


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", ["iofg", "ifgo"])
@pytest.mark.parametrize("direction", ["forward", "both"])
def test_lstm_against_torch(direction, layout, dtype, rng):
    nd = 2 if direction == "both" else 1
    arrays = lstm_arrays(rng, dtype, nd, peephole=False)
    got_h, got_c, got_seq = run_lstm(arrays, {"direction": direction, "layout": layout, "returnSequence": True})
    module = torch.nn.LSTM(INPUT, HIDDEN, bidirectional=nd == 2, dtype=F64)
    load_torch_rnn(module, arrays, to_torch_lstm_order, layout, nd, 4)
    with torch.no_grad():
        out, (h_n, c_n) = module(t64(arrays["input"]),
                                 (t64(arrays["initialHiddenState"]), t64(arrays["initialCellState"])))
    check(got_h, h_n.numpy(), dtype, STEPS, "lstm h_n vs torch")
    check(got_c, c_n.numpy(), dtype, STEPS, "lstm c_n vs torch")
    check(got_seq, out.numpy().reshape(STEPS, BATCH, nd, HIDDEN).transpose(0, 2, 1, 3), dtype, STEPS,
          "lstm sequence vs torch")


# -- lstmCell -------------------------------------------------------------------------------

def lstm_cell_arrays(rng, dtype, bias=True, recurrent_bias=True, peephole=True):
    arrays = {"input": rand(rng, (BATCH, INPUT), dtype), "weight": rand(rng, (4 * HIDDEN, INPUT), dtype, 0.6),
              "recurrentWeight": rand(rng, (4 * HIDDEN, HIDDEN), dtype, 0.6),
              "hiddenState": rand(rng, (BATCH, HIDDEN), dtype), "cellState": rand(rng, (BATCH, HIDDEN), dtype)}
    if bias:
        arrays["bias"] = rand(rng, (4 * HIDDEN,), dtype, 0.5)
    if recurrent_bias:
        arrays["recurrentBias"] = rand(rng, (4 * HIDDEN,), dtype, 0.5)
    if peephole:
        arrays["peepholeWeight"] = rand(rng, (3 * HIDDEN,), dtype, 0.5)
    return arrays


def run_lstm_cell(arrays, options):
    def build(builder, x):
        opts = {**options, **operand_dict(x, ("bias", "recurrentBias", "peepholeWeight"))}
        return builder.lstmCell(x["input"], x["weight"], x["recurrentWeight"], x["hiddenState"], x["cellState"],
                                HIDDEN, opts)
    return run(build, arrays)


def ref_lstm_cell_arrays(arrays, options):
    a = {k: t64(v) for k, v in arrays.items()}
    h, c = ref_lstm_cell(a["input"], a["weight"], a["recurrentWeight"], a["hiddenState"], a["cellState"], HIDDEN,
                         a.get("bias"), a.get("recurrentBias"), a.get("peepholeWeight"),
                         options.get("layout", "iofg"), options.get("activations", ("sigmoid", "tanh", "tanh")))
    return [h.numpy(), c.numpy()]


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("options", [
    {}, {"layout": "ifgo"}, {"activations": ["relu", "tanh", "sigmoid"]},
    {"activations": ["tanh", "relu", "relu"], "layout": "ifgo"},
], ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()) or "defaults")
def test_lstm_cell_options_against_spec_formulas(options, dtype, rng):
    arrays = lstm_cell_arrays(rng, dtype)
    got = run_lstm_cell(arrays, options)
    assert [g.shape for g in got] == [(BATCH, HIDDEN)] * 2
    for g, e, what in zip(got, ref_lstm_cell_arrays(arrays, options), ("hidden", "cell")):
        check(g, e, dtype, 1, f"lstmCell {options} {what}")


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("present", [(False, False, False), (True, False, True), (False, True, False)],
                         ids=["none", "bias+peephole", "recurrentBias"])
def test_lstm_cell_optional_operands(present, dtype, rng):
    arrays = lstm_cell_arrays(rng, dtype, *present)
    for g, e in zip(run_lstm_cell(arrays, {}), ref_lstm_cell_arrays(arrays, {})):
        check(g, e, dtype, 1, "lstmCell")


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", ["iofg", "ifgo"])
def test_lstm_cell_against_torch(layout, dtype, rng):
    arrays = lstm_cell_arrays(rng, dtype, peephole=False)
    got_h, got_c = run_lstm_cell(arrays, {"layout": layout})
    module = torch.nn.LSTMCell(INPUT, HIDDEN, dtype=F64)
    with torch.no_grad():
        for name, key in (("weight_ih", "weight"), ("weight_hh", "recurrentWeight"), ("bias_ih", "bias"),
                          ("bias_hh", "recurrentBias")):
            getattr(module, name).copy_(torch.from_numpy(
                to_torch_lstm_order(arrays[key].astype(np.float64), layout, HIDDEN)))
        h, c = module(t64(arrays["input"]), (t64(arrays["hiddenState"]), t64(arrays["cellState"])))
    check(got_h, h.numpy(), dtype, 1, "lstmCell h vs torch")
    check(got_c, c.numpy(), dtype, 1, "lstmCell c vs torch")


def test_lstm_peephole_reads_the_incoming_cell_state(rng):
    """The spec's decomposition feeds the output gate's peephole the incoming cell
    state (not the new one): with only the output gate's peephole set, a one-step
    lstm must match the formula with c_{t-1}."""
    arrays = lstm_cell_arrays(rng, np.float32)
    arrays["peepholeWeight"] = np.array([0] * HIDDEN + [2.0] * HIDDEN + [0] * HIDDEN, np.float32)
    h, c = run_lstm_cell(arrays, {})
    a = {k: t64(v) for k, v in arrays.items()}
    pre = (a["bias"] + a["recurrentBias"] + a["input"] @ a["weight"].T + a["hiddenState"] @ a["recurrentWeight"].T)
    i, o, f, g = (pre[:, k * HIDDEN:(k + 1) * HIDDEN] for k in range(4))
    ct = torch.sigmoid(f) * a["cellState"] + torch.sigmoid(i) * torch.tanh(g)
    ht = torch.sigmoid(o + 2.0 * a["cellState"]) * torch.tanh(ct)
    assert_close(h, ht.numpy().astype(np.float32), atol=1e-5)
    assert_close(c, ct.numpy().astype(np.float32), atol=1e-5)


# -- outputs and limits -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda d: np.dtype(d).name)
def test_output_operands(dtype):
    import asyncio

    import webnn_py
    name = np.dtype(dtype).name

    async def go():
        context = await webnn_py.ml.createContext()
        b = webnn_py.MLGraphBuilder(context)

        def t(*shape):
            return b.input(f"i{next(_INPUT_NAMES)}", {"dataType": name, "shape": list(shape)})
        x, w, r = t(3, 2, 4), t(2, 6, 4), t(2, 6, 2)
        outs = b.gru(x, w, r, 3, 2, {"direction": "both"})
        assert [(o.dataType, o.shape) for o in outs] == [(name, [2, 2, 2])]
        outs = b.gru(x, w, r, 3, 2, {"direction": "both", "returnSequence": True})
        assert [(o.dataType, o.shape) for o in outs] == [(name, [2, 2, 2]), (name, [3, 2, 2, 2])]
        cell = b.gruCell(t(2, 4), t(6, 4), t(6, 2), t(2, 2), 2)
        assert (cell.dataType, cell.shape) == (name, [2, 2])
        lw, lr = t(1, 8, 4), t(1, 8, 2)
        outs = b.lstm(x, lw, lr, 3, 2)
        assert [(o.dataType, o.shape) for o in outs] == [(name, [1, 2, 2])] * 2
        outs = b.lstm(x, lw, lr, 3, 2, {"returnSequence": True, "direction": "backward"})
        assert [(o.dataType, o.shape) for o in outs] == [(name, [1, 2, 2])] * 2 + [(name, [3, 1, 2, 2])]
        outs = b.lstmCell(t(2, 4), t(8, 4), t(8, 2), t(2, 2), t(2, 2), 2)
        assert [(o.dataType, o.shape) for o in outs] == [(name, [2, 2])] * 2
        limits = context.opSupportLimits()
        return limits
    limits = asyncio.run(go())
    expected = {
        "gru": dict(input=3, weight=3, recurrentWeight=3, bias=2, recurrentBias=2, initialHiddenState=3,
                    output0=3, output1=4),
        "gruCell": dict(input=2, weight=2, recurrentWeight=2, hiddenState=2, bias=1, recurrentBias=1, output=2),
        "lstm": dict(input=3, weight=3, recurrentWeight=3, bias=2, recurrentBias=2, peepholeWeight=2,
                     initialHiddenState=3, initialCellState=3, output0=3, output1=3, output2=4),
        "lstmCell": dict(input=2, weight=2, recurrentWeight=2, hiddenState=2, cellState=2, bias=1,
                         recurrentBias=1, peepholeWeight=1, output0=2, output1=2),
    }
    for op, ranks in expected.items():
        assert set(limits[op]) == set(ranks), op
        for operand, rank in ranks.items():
            assert limits[op][operand]["dataTypes"] == ["float32", "float16"]
            assert limits[op][operand]["rankRange"] == {"min": rank, "max": rank}


# -- validation: every TypeError of the four algorithms -------------------------------------

_INPUT_NAMES = itertools.count()   # input names must be unique within a builder


def call(op, builder, args, options):
    """Builds op(...) with operands described as shape tuples, optionally led by a data type."""
    counter = _INPUT_NAMES

    def operand(spec):
        if not isinstance(spec, tuple):
            return spec
        dtype, shape = (spec[0], spec[1:]) if isinstance(spec[0], str) else ("float32", spec)
        return builder.input(f"x{next(counter)}", {"dataType": dtype, "shape": list(shape)})
    return getattr(builder, op)(*(operand(a) for a in args), {k: operand(v) for k, v in options.items()})


# Valid base calls: steps 3, batch 2, inputSize 4, hiddenSize 2.
BASE = {
    "gru": [(3, 2, 4), (1, 6, 4), (1, 6, 2), 3, 2],
    "gruCell": [(2, 4), (6, 4), (6, 2), (2, 2), 2],
    "lstm": [(3, 2, 4), (1, 8, 4), (1, 8, 2), 3, 2],
    "lstmCell": [(2, 4), (8, 4), (8, 2), (2, 2), (2, 2), 2],
}


def with_arg(op, index, value):
    args = list(BASE[op])
    args[index] = value
    return args


ERRORS = [
    # gru, steps 3-15
    ("gru", with_arg("gru", 0, ("int32", 3, 2, 4)), {}, "input has data type int32"),
    ("gru", with_arg("gru", 1, ("float16", 1, 6, 4)), {}, "weight's data type float16 differs from input's"),
    ("gru", with_arg("gru", 2, ("float16", 1, 6, 2)), {}, "recurrentWeight's data type float16"),
    ("gru", with_arg("gru", 0, (3, 8)), {}, "input has rank 2"),
    ("gru", with_arg("gru", 1, (6, 4)), {}, "weight has rank 2"),
    ("gru", with_arg("gru", 2, (1, 1, 6, 2)), {}, "recurrentWeight has rank 4"),
    ("gru", with_arg("gru", 3, 2), {}, r"input's shape\[0\] 3 is not steps 2"),
    ("gru", with_arg("gru", 3, 0), {}, r"input's shape\[0\] 3 is not steps 0"),
    ("gru", with_arg("gru", 1, (1, 6, 3)), {}, r"weight has shape \[1, 6, 3\]; expected \[1, 6, 4\]"),
    ("gru", BASE["gru"], {"direction": "both"}, r"weight has shape \[1, 6, 4\]; expected \[2, 6, 4\]"),
    ("gru", with_arg("gru", 4, 3), {}, r"weight has shape \[1, 6, 4\]; expected \[1, 9, 4\]"),
    ("gru", with_arg("gru", 2, (1, 6, 3)), {}, r"recurrentWeight has shape \[1, 6, 3\]; expected \[1, 6, 2\]"),
    ("gru", BASE["gru"], {"bias": ("float16", 1, 6)}, "bias's data type float16 differs"),
    ("gru", BASE["gru"], {"bias": (6,)}, r"bias has shape \[6\]; expected \[1, 6\]"),
    ("gru", BASE["gru"], {"recurrentBias": ("float16", 1, 6)}, "recurrentBias's data type float16"),
    ("gru", BASE["gru"], {"recurrentBias": (1, 4)}, r"recurrentBias has shape \[1, 4\]; expected \[1, 6\]"),
    ("gru", BASE["gru"], {"initialHiddenState": ("float16", 1, 2, 2)}, "initialHiddenState's data type"),
    ("gru", BASE["gru"], {"initialHiddenState": (1, 3, 2)},
     r"initialHiddenState has shape \[1, 3, 2\]; expected \[1, 2, 2\]"),
    ("gru", BASE["gru"], {"activations": ["sigmoid"]}, "activations has 1 entries; expected 2"),
    ("gru", BASE["gru"], {"activations": ["sigmoid", "tanh", "relu"]}, "activations has 3 entries; expected 2"),
    # gruCell, steps 3-13
    ("gruCell", with_arg("gruCell", 0, ("float16", 2, 4)), {}, "weight's data type float32 differs"),
    ("gruCell", with_arg("gruCell", 0, ("uint8", 2, 4)), {}, "input has data type uint8"),
    ("gruCell", with_arg("gruCell", 2, ("float16", 6, 2)), {}, "recurrentWeight's data type float16"),
    ("gruCell", with_arg("gruCell", 3, ("float16", 2, 2)), {}, "hiddenState's data type float16"),
    ("gruCell", with_arg("gruCell", 0, (1, 2, 4)), {}, "input has rank 3"),
    ("gruCell", with_arg("gruCell", 1, (1, 6, 4)), {}, "weight has rank 3"),
    ("gruCell", with_arg("gruCell", 2, (12,)), {}, "recurrentWeight has rank 1"),
    ("gruCell", with_arg("gruCell", 3, (4,)), {}, "hiddenState has rank 1"),
    ("gruCell", with_arg("gruCell", 1, (6, 5)), {}, r"weight has shape \[6, 5\]; expected \[6, 4\]"),
    ("gruCell", with_arg("gruCell", 2, (6, 3)), {}, r"recurrentWeight has shape \[6, 3\]; expected \[6, 2\]"),
    ("gruCell", with_arg("gruCell", 3, (3, 2)), {}, r"hiddenState has shape \[3, 2\]; expected \[2, 2\]"),
    ("gruCell", BASE["gruCell"], {"bias": ("float16", 6)}, "bias's data type float16"),
    ("gruCell", BASE["gruCell"], {"bias": (1, 6)}, r"bias has shape \[1, 6\]; expected \[6\]"),
    ("gruCell", BASE["gruCell"], {"recurrentBias": ("float16", 6)}, "recurrentBias's data type float16"),
    ("gruCell", BASE["gruCell"], {"recurrentBias": (8,)}, r"recurrentBias has shape \[8\]; expected \[6\]"),
    ("gruCell", BASE["gruCell"], {"activations": []}, "activations has 0 entries; expected 2"),
    # lstm, steps 4-18
    ("lstm", with_arg("lstm", 0, ("int64", 3, 2, 4)), {}, "input has data type int64"),
    ("lstm", with_arg("lstm", 1, ("float16", 1, 8, 4)), {}, "weight's data type float16"),
    ("lstm", with_arg("lstm", 2, ("float16", 1, 8, 2)), {}, "recurrentWeight's data type float16"),
    ("lstm", with_arg("lstm", 0, (2, 4)), {}, "input has rank 2"),
    ("lstm", with_arg("lstm", 1, (8, 4)), {}, "weight has rank 2"),
    ("lstm", with_arg("lstm", 2, (8, 2)), {}, "recurrentWeight has rank 2"),
    ("lstm", with_arg("lstm", 3, 0), {}, "steps is 0"),
    ("lstm", with_arg("lstm", 3, 4), {}, r"input's shape\[0\] 3 is not steps 4"),
    ("lstm", with_arg("lstm", 1, (1, 6, 4)), {}, r"weight has shape \[1, 6, 4\]; expected \[1, 8, 4\]"),
    ("lstm", BASE["lstm"], {"direction": "both"}, r"weight has shape \[1, 8, 4\]; expected \[2, 8, 4\]"),
    ("lstm", with_arg("lstm", 2, (1, 8, 4)), {}, r"recurrentWeight has shape \[1, 8, 4\]; expected \[1, 8, 2\]"),
    ("lstm", BASE["lstm"], {"bias": ("float16", 1, 8)}, "bias's data type float16"),
    ("lstm", BASE["lstm"], {"bias": (2, 8)}, r"bias has shape \[2, 8\]; expected \[1, 8\]"),
    ("lstm", BASE["lstm"], {"recurrentBias": ("float16", 1, 8)}, "recurrentBias's data type float16"),
    ("lstm", BASE["lstm"], {"recurrentBias": (1, 6)}, r"recurrentBias has shape \[1, 6\]; expected \[1, 8\]"),
    ("lstm", BASE["lstm"], {"peepholeWeight": ("float16", 1, 6)}, "peepholeWeight's data type float16"),
    ("lstm", BASE["lstm"], {"peepholeWeight": (1, 8)}, r"peepholeWeight has shape \[1, 8\]; expected \[1, 6\]"),
    ("lstm", BASE["lstm"], {"initialHiddenState": ("float16", 1, 2, 2)}, "initialHiddenState's data type"),
    ("lstm", BASE["lstm"], {"initialHiddenState": (2, 2)},
     r"initialHiddenState has shape \[2, 2\]; expected \[1, 2, 2\]"),
    ("lstm", BASE["lstm"], {"initialCellState": ("float16", 1, 2, 2)}, "initialCellState's data type"),
    ("lstm", BASE["lstm"], {"initialCellState": (1, 2, 3)},
     r"initialCellState has shape \[1, 2, 3\]; expected \[1, 2, 2\]"),
    ("lstm", BASE["lstm"], {"activations": ["sigmoid", "tanh"]}, "activations has 2 entries; expected 3"),
    # lstmCell, steps 3-15
    ("lstmCell", with_arg("lstmCell", 0, ("int8", 2, 4)), {}, "input has data type int8"),
    ("lstmCell", with_arg("lstmCell", 1, ("float16", 8, 4)), {}, "weight's data type float16"),
    ("lstmCell", with_arg("lstmCell", 2, ("float16", 8, 2)), {}, "recurrentWeight's data type float16"),
    ("lstmCell", with_arg("lstmCell", 3, ("float16", 2, 2)), {}, "hiddenState's data type float16"),
    ("lstmCell", with_arg("lstmCell", 4, ("float16", 2, 2)), {}, "cellState's data type float16"),
    ("lstmCell", with_arg("lstmCell", 0, (1, 2, 4)), {}, "input has rank 3"),
    ("lstmCell", with_arg("lstmCell", 1, (32,)), {}, "weight has rank 1"),
    ("lstmCell", with_arg("lstmCell", 2, (1, 8, 2)), {}, "recurrentWeight has rank 3"),
    ("lstmCell", with_arg("lstmCell", 3, (1, 2, 2)), {}, "hiddenState has rank 3"),
    ("lstmCell", with_arg("lstmCell", 4, (4,)), {}, "cellState has rank 1"),
    ("lstmCell", with_arg("lstmCell", 1, (8, 3)), {}, r"weight has shape \[8, 3\]; expected \[8, 4\]"),
    ("lstmCell", with_arg("lstmCell", 5, 3), {}, r"weight has shape \[8, 4\]; expected \[12, 4\]"),
    ("lstmCell", with_arg("lstmCell", 2, (6, 2)), {}, r"recurrentWeight has shape \[6, 2\]; expected \[8, 2\]"),
    ("lstmCell", with_arg("lstmCell", 3, (1, 2)), {}, r"hiddenState has shape \[1, 2\]; expected \[2, 2\]"),
    ("lstmCell", with_arg("lstmCell", 4, (2, 1)), {}, r"cellState has shape \[2, 1\]; expected \[2, 2\]"),
    ("lstmCell", BASE["lstmCell"], {"bias": ("float16", 8)}, "bias's data type float16"),
    ("lstmCell", BASE["lstmCell"], {"bias": (6,)}, r"bias has shape \[6\]; expected \[8\]"),
    ("lstmCell", BASE["lstmCell"], {"recurrentBias": ("float16", 8)}, "recurrentBias's data type float16"),
    ("lstmCell", BASE["lstmCell"], {"recurrentBias": (1, 8)}, r"recurrentBias has shape \[1, 8\]; expected \[8\]"),
    ("lstmCell", BASE["lstmCell"], {"peepholeWeight": ("float16", 6)}, "peepholeWeight's data type float16"),
    ("lstmCell", BASE["lstmCell"], {"peepholeWeight": (8,)}, r"peepholeWeight has shape \[8\]; expected \[6\]"),
    ("lstmCell", BASE["lstmCell"], {"activations": ["relu"] * 4}, "activations has 4 entries; expected 3"),
]


@pytest.fixture
def builder():
    import asyncio

    import webnn_py
    context = asyncio.run(webnn_py.ml.createContext())
    return webnn_py.MLGraphBuilder(context)


@pytest.mark.parametrize("op,args,options,message", ERRORS,
                         ids=[f"{e[0]}-{i}-{e[3][:40]}" for i, e in enumerate(ERRORS)])
def test_validation_errors(op, args, options, message, builder):
    with pytest.raises(TypeError, match=f"^{op}: .*{message}"):
        call(op, builder, args, options)
    # The label, when given, leads the message.
    with pytest.raises(TypeError, match=rf"^\[my {op}\] {op}: .*{message}"):
        call(op, builder, args, {**options, "label": f"my {op}"})


@pytest.mark.parametrize("op", list(BASE))
def test_valid_base_calls_build(op, builder):
    call(op, builder, BASE[op], {})


@pytest.mark.parametrize("op", list(BASE))
def test_operand_of_another_builder(op, builder):
    import asyncio

    import webnn_py
    other = webnn_py.MLGraphBuilder(asyncio.run(webnn_py.ml.createContext()))
    foreign = other.input("foreign", {"dataType": "float32", "shape": [2 * 3 * 4]})
    for index, value in enumerate(BASE[op]):
        if isinstance(value, tuple):
            with pytest.raises(TypeError, match="another MLGraphBuilder"):
                call(op, builder, with_arg(op, index, foreign), {})
    with pytest.raises(TypeError, match="another MLGraphBuilder"):
        call(op, builder, BASE[op], {"bias": foreign})


@pytest.mark.parametrize("op", list(BASE))
def test_bad_enum_values(op, builder):
    for options in ({"layout": "nope"}, {"activations": ["sigmoid", "gelu", "tanh"][:3 if "lstm" in op else 2]}):
        with pytest.raises(TypeError):
            call(op, builder, BASE[op], options)


class _DescriptorContext(BuildContext):
    """A BuildContext whose operands are plain descriptors: reaches checks that no
    real operand can, because the shapes they need exceed this implementation's
    maximum tensor byte length."""

    def descriptor(self, operand):
        return operand

    def emit(self, inputs, outputs, attributes=None, kind=None):
        return list(outputs)


@pytest.mark.parametrize("op,gates", [("gru", 3), ("gruCell", 3), ("lstm", 4), ("lstmCell", 4)])
def test_combined_bias_dimension_must_be_valid(op, gates):
    # gates * hiddenSize is a valid dimension, 2 * gates * hiddenSize is not (> 2^31 - 1).
    hidden = (2**31 - 1) // gates
    assert hidden * 2 * gates > 2**31 - 1

    def d(*shape):
        return OperandDescriptor("float32", shape)
    if op == "gru":
        args = [d(1, 1, 1), d(1, gates * hidden, 1), d(1, gates * hidden, hidden), 1, hidden]
    elif op == "lstm":
        args = [d(1, 1, 1), d(1, gates * hidden, 1), d(1, gates * hidden, hidden), 1, hidden]
    elif op == "gruCell":
        args = [d(1, 1), d(gates * hidden, 1), d(gates * hidden, hidden), d(1, hidden), hidden]
    else:
        args = [d(1, 1), d(gates * hidden, 1), d(gates * hidden, hidden), d(1, hidden), d(1, hidden), hidden]
    build = {"gru": recurrent.build_gru, "gruCell": recurrent.build_gru_cell, "lstm": recurrent.build_lstm,
             "lstmCell": recurrent.build_lstm_cell}[op]
    with pytest.raises(TypeError, match=rf"^{op}: hiddenSize \* {2 * gates} = \d+ is not a valid dimension"):
        build(_DescriptorContext(op), *args, {})
    # one less hidden unit passes the step
    small = hidden // 2
    args = [OperandDescriptor("float32", tuple(gates * small if s == gates * hidden else small if s == hidden else s
                                               for s in a.shape)) if isinstance(a, OperandDescriptor)
            else (small if a == hidden else a) for a in args]
    build(_DescriptorContext(op), *args, {})
