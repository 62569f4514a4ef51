"""Recurrent layers: UNIDIRECTIONAL_SEQUENCE_LSTM, UNIDIRECTIONAL_SEQUENCE_RNN,
BIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_RNN, their one-step forms
LSTM (the full kernel) and RNN, and SVDF.

The sequence length is static, so each layer is unrolled into per-step gemm and
element-wise builder calls. That expresses every variant TFLite's kernels have
(CIFG, peepholes, layer normalization, projection, cell and projection clipping),
which WebNN's lstm() does not (it has no CIFG, projection or layer normalization).
Per step, as LiteRT's float kernels compute it (lstm_eval.cc):

    gate_g = W_g x + R_g h (+ P_g c)               g in input, forget, cell, output
    gate_g = LN(gate_g) * L_g + b_g   with layer normalization, else gate_g + b_g
    i = sigmoid(gate_i)  (CIFG: 1 - f),  f = sigmoid(gate_f),  g = act(gate_c)
    c = clip(f c + i g, cell_clip)
    o = sigmoid(gate_o, peephole on the new c),  h = o act(c)
    h = clip(Proj h + proj_bias, proj_clip)        with a projection

The states are variable tensors (state.py): the layer reads them as inputs and
leaves its final h and c in them, so they carry over to the next compute().
"""
from __future__ import annotations

from . import options as opt
from . import state

# LiteRT's layer normalization epsilon in LSTM cells (kLayerNormEpsilon).
LAYER_NORM_EPSILON = 1e-8
# Time steps one layer may unroll (each is a few dozen builder calls): a bound on
# what a hostile file can make load() do.
MAX_UNROLLED_STEPS = 4096

# LSTM input numbers (lstm_shared.h); a bidirectional layer's backward weights
# follow the forward ones at +17.
_IN_W, _REC_W, _PEEPHOLE, _BIAS = (1, 2, 3, 4), (5, 6, 7, 8), (9, 10, 11), (12, 13, 14, 15)
_PROJ_W, _PROJ_B, _OUT_STATE, _CELL_STATE, _LAYER_NORM = 16, 17, 18, 19, (20, 21, 22, 23)


def _optional(ctx, k: int):
    return ctx.input(k) if ctx.has_input(k) else None


def _steps(ctx, x, time_major: bool):
    """The per-step [batch, features] slices of a 3-D sequence."""
    b = ctx.b
    if len(x.shape) != 3:
        raise ctx.fail(f"its input must be 3-D, it is {list(x.shape)}")
    time_axis = 0 if time_major else 1
    steps = x.shape[time_axis]
    if steps > MAX_UNROLLED_STEPS:
        raise ctx.fail(f"its sequence has {steps} steps; at most {MAX_UNROLLED_STEPS} are unrolled")
    batch, features = x.shape[1 - time_axis], x.shape[2]
    if steps == 1:
        return [b.reshape(x, [batch, features])]
    return [b.reshape(part, [batch, features]) for part in b.split(x, steps, {"axis": time_axis})]


def _sequence(ctx, outputs: list, time_major: bool):
    """Stack per-step [batch, units] results along the time axis."""
    b = ctx.b
    axis = 0 if time_major else 1
    batch, units = outputs[0].shape
    shaped = [b.reshape(o, [1, batch, units] if time_major else [batch, 1, units]) for o in outputs]
    return shaped[0] if len(shaped) == 1 else b.concat(shaped, axis)


def _matmul(ctx, x, weights):
    """x [batch, in] times weights [out, in] transposed."""
    return ctx.b.gemm(x, weights, {"bTranspose": True})


def _clip(ctx, v, limit: float):
    return ctx.b.clamp(v, {"minValue": -limit, "maxValue": limit}) if limit > 0 else v


def _layer_norm(ctx, v, coefficients):
    """(v - mean) / sqrt(variance + epsilon) over the units, times the coefficients."""
    b = ctx.b
    normalized = b.layerNormalization(v, {"axes": [1], "epsilon": LAYER_NORM_EPSILON})
    return b.mul(normalized, coefficients)


class _LstmWeights:
    """One direction's LSTM tensors, read from inputs starting at `base` (0 forward,
    17 a bidirectional layer's backward direction), and its state inputs."""

    def __init__(self, ctx, base: int, out_state: int, cell_state: int, layer_norm=(None,) * 4):
        self.input = [_optional(ctx, base + k) for k in _IN_W]
        self.recurrent = [_optional(ctx, base + k) for k in _REC_W]
        self.peephole = [_optional(ctx, base + k) for k in _PEEPHOLE]      # input, forget, output gates
        self.bias = [_optional(ctx, base + k) for k in _BIAS]
        self.projection = _optional(ctx, base + _PROJ_W)
        self.projection_bias = _optional(ctx, base + _PROJ_B)
        self.layer_norm = [None if k is None else _optional(ctx, k) for k in layer_norm]
        self.out_state, self.cell_state = out_state, cell_state
        self.cifg = self.input[0] is None
        for what, values in (("input", self.input[1:]), ("recurrent", self.recurrent[1:]), ("bias", self.bias[1:])):
            if any(v is None for v in values):
                raise ctx.fail(f"its forget, cell and output {what} weights are required")


def _lstm(ctx, steps: list, w: _LstmWeights, activation: int, cell_clip: float, proj_clip: float) -> list:
    """Unrolled LSTM over `steps`; returns the per-step h and leaves the final h, c in
    the state tensors."""
    b = ctx.b
    h, c = ctx.input(w.out_state), ctx.input(w.cell_state)
    outputs = []
    for x in steps:
        def gate(g: int, cell):
            v = b.add(_matmul(ctx, x, w.input[g]), _matmul(ctx, h, w.recurrent[g]))
            peephole = w.peephole[{0: 0, 1: 1, 3: 2}[g]] if g != 2 else None
            if peephole is not None and cell is not None:
                v = b.add(v, b.mul(cell, peephole))
            if w.layer_norm[g] is not None:
                v = _layer_norm(ctx, v, w.layer_norm[g])
            return v if w.bias[g] is None else b.add(v, w.bias[g])

        forget = b.sigmoid(gate(1, c))
        if w.cifg:
            in_gate = b.sub(ctx.scalar(1.0, forget), forget)
        else:
            in_gate = b.sigmoid(gate(0, c))
        cell_input = ctx.activation(gate(2, None), activation)
        c = _clip(ctx, b.add(b.mul(forget, c), b.mul(in_gate, cell_input)), cell_clip)
        out_gate = b.sigmoid(gate(3, c))
        h = b.mul(out_gate, ctx.activation(c, activation))
        if w.projection is not None:
            h = _matmul(ctx, h, w.projection)
            if w.projection_bias is not None:
                h = b.add(h, w.projection_bias)
            h = _clip(ctx, h, proj_clip)
        outputs.append(h)
    _keep(ctx, w.out_state, h)
    _keep(ctx, w.cell_state, c)
    return outputs


def _rnn(ctx, steps: list, weights: int, recurrent: int, bias: int, hidden: int, activation: int) -> list:
    """h = act(x W^T + h R^T + b) per step; the final h stays in the hidden state."""
    b = ctx.b
    w, r, bias_v = ctx.input(weights), ctx.input(recurrent), ctx.input(bias)
    h = ctx.input(hidden)
    outputs = []
    for x in steps:
        h = ctx.activation(b.add(b.add(_matmul(ctx, x, w), _matmul(ctx, h, r)), bias_v), activation)
        outputs.append(h)
    _keep(ctx, hidden, h)
    return outputs


def _keep(ctx, k: int, value) -> None:
    """The state input k takes the final value (when it is a variable tensor, as
    converters write it; a constant state is an initial value only)."""
    index = ctx.input_index(k)
    if ctx.tensor(index).is_variable:
        key, var = ctx.variable_tensor(index)
        state.write(ctx, key, var, value)


def _reversed(steps: list) -> list:
    return steps[::-1]


# -- the operators ---------------------------------------------------------------------------------

def unidirectional_sequence_lstm(ctx):
    """UnidirectionalSequenceLSTMOptions: fused_activation 0, cell_clip 1, proj_clip 2,
    time_major 3, asymmetric_quantize_inputs 4, diagonal_recurrent_tensors 5."""
    if opt.read(ctx, 5, "bool", False):
        raise ctx.fail("diagonal recurrent tensors are not supported")
    time_major = bool(opt.read(ctx, 3, "bool", False))
    w = _LstmWeights(ctx, 0, _OUT_STATE, _CELL_STATE, _LAYER_NORM)
    steps = _steps(ctx, ctx.input(0), time_major)
    outputs = _lstm(ctx, steps, w, opt.read(ctx, 0, "i8"), opt.read(ctx, 1, "f32", 0.0), opt.read(ctx, 2, "f32", 0.0))
    ctx.set_output(0, _sequence(ctx, outputs, time_major))


def lstm(ctx):
    """LSTMOptions: fused_activation 0, cell_clip 1, proj_clip 2, kernel_type 3
    (FULL 0; BASIC 1 is the four-input fused form). One step: input [batch, in]."""
    if opt.read(ctx, 3, "i8") != 0:
        raise ctx.fail("the BASIC LSTM kernel is not supported (only FULL)")
    if len(ctx.op.outputs) != 1:
        raise ctx.fail(f"it has {len(ctx.op.outputs)} outputs; only the one-output form is supported")
    w = _LstmWeights(ctx, 0, _OUT_STATE, _CELL_STATE, _LAYER_NORM)
    x = ctx.input(0)
    if len(x.shape) != 2:
        raise ctx.fail(f"its input must be 2-D, it is {list(x.shape)}")
    outputs = _lstm(ctx, [x], w, opt.read(ctx, 0, "i8"), opt.read(ctx, 1, "f32", 0.0), opt.read(ctx, 2, "f32", 0.0))
    ctx.set_output(0, outputs[0])


def bidirectional_sequence_lstm(ctx):
    """Inputs: 0 the sequence, 1-17 forward and 18-34 backward weights (the LSTM
    order), 35-38 the forward and backward output and cell states, 39-47 the
    auxiliary input and its weights (unsupported). BidirectionalSequenceLSTMOptions:
    fused_activation 0, cell_clip 1, proj_clip 2, merge_outputs 3, time_major 4 (default true)."""
    if ctx.has_input(39):
        raise ctx.fail("an auxiliary input is not supported")
    time_major = bool(opt.read(ctx, 4, "bool", True))
    merge = bool(opt.read(ctx, 3, "bool", False))
    args = (opt.read(ctx, 0, "i8"), opt.read(ctx, 1, "f32", 0.0), opt.read(ctx, 2, "f32", 0.0))
    steps = _steps(ctx, ctx.input(0), time_major)
    forward = _lstm(ctx, steps, _LstmWeights(ctx, 0, 35, 36), *args)
    backward = _reversed(_lstm(ctx, _reversed(steps), _LstmWeights(ctx, 17, 37, 38), *args))
    _bidirectional_outputs(ctx, forward, backward, merge, time_major)


def _bidirectional_outputs(ctx, forward: list, backward: list, merge: bool, time_major: bool) -> None:
    fw, bw = _sequence(ctx, forward, time_major), _sequence(ctx, backward, time_major)
    if merge:
        ctx.set_output(0, ctx.b.concat([fw, bw], 2))
    else:
        ctx.set_output(0, fw)
        ctx.set_output(1, bw)


def unidirectional_sequence_rnn(ctx):
    """SequenceRNNOptions: time_major 0, fused_activation 1. Inputs: input, weights,
    recurrent weights, bias, hidden state."""
    time_major = bool(opt.read(ctx, 0, "bool", False))
    steps = _steps(ctx, ctx.input(0), time_major)
    ctx.set_output(0, _sequence(ctx, _rnn(ctx, steps, 1, 2, 3, 4, opt.read(ctx, 1, "i8")), time_major))


def rnn(ctx):
    """RNNOptions: fused_activation 0. One step: input [batch, in]."""
    x = ctx.input(0)
    if len(x.shape) != 2:
        raise ctx.fail(f"its input must be 2-D, it is {list(x.shape)}")
    ctx.set_output(0, _rnn(ctx, [x], 1, 2, 3, 4, opt.read(ctx, 0, "i8"))[0])


def bidirectional_sequence_rnn(ctx):
    """Inputs: input, forward weights/recurrent/bias/hidden (1-4), backward (5-8),
    auxiliary input and weights (9-11, unsupported). BidirectionalSequenceRNNOptions:
    time_major 0, fused_activation 1, merge_outputs 2."""
    if ctx.has_input(9):
        raise ctx.fail("an auxiliary input is not supported")
    time_major = bool(opt.read(ctx, 0, "bool", False))
    activation = opt.read(ctx, 1, "i8")
    steps = _steps(ctx, ctx.input(0), time_major)
    forward = _rnn(ctx, steps, 1, 2, 3, 4, activation)
    backward = _reversed(_rnn(ctx, _reversed(steps), 5, 6, 7, 8, activation))
    _bidirectional_outputs(ctx, forward, backward, bool(opt.read(ctx, 2, "bool", False)), time_major)


def svdf(ctx):
    """SVDF (a rank-reduced time convolution, as keyword spotters use it). Inputs:
    input [batch, in], weights_feature [filters, in], weights_time [filters, memory],
    bias [units] (optional), activation_state [batch, filters * memory] (a variable
    tensor: each filter's last `memory` features). SVDFOptions: rank 0,
    fused_activation 1. Per call, as LiteRT's kernel (svdf.cc):
        state = state shifted left by one per filter, the new feature x W_f^T appended
        out[u] = act(sum over r < rank of (state . W_t)[u rank + r] + bias[u])"""
    b = ctx.b
    x, features, time = ctx.input(0), ctx.input(1), ctx.input(2)
    rank = opt.read(ctx, 0, "i32")
    if len(x.shape) != 2 or len(time.shape) != 2 or len(features.shape) != 2:
        raise ctx.fail(f"input {list(x.shape)}, weights_feature {list(features.shape)} and weights_time "
                       f"{list(time.shape)} must be 2-D")
    batch = x.shape[0]
    filters, memory = time.shape
    if rank < 1 or filters % rank or features.shape[0] != filters:
        raise ctx.fail(f"rank {rank} does not divide the {filters} filters, or the weights disagree on them")
    units = filters // rank
    state_before = ctx.input(4)
    if list(state_before.shape) != [batch, filters * memory]:
        raise ctx.fail(f"its state is {list(state_before.shape)}, it must be {[batch, filters * memory]}")
    history = b.reshape(state_before, [batch, filters, memory])
    feature = b.reshape(_matmul(ctx, x, features), [batch, filters, 1])
    if memory > 1:
        history = b.concat([b.slice(history, [0, 0, 1], [batch, filters, memory - 1]), feature], 2)
    else:
        history = feature
    per_filter = b.reduceSum(b.mul(history, b.reshape(time, [1, filters, memory])),
                             {"axes": [2], "keepDimensions": False})
    out = b.reduceSum(b.reshape(per_filter, [batch, units, rank]), {"axes": [2], "keepDimensions": False})
    if ctx.has_input(3):
        out = b.add(out, ctx.input(3))
    _keep(ctx, 4, b.reshape(history, [batch, filters * memory]))
    ctx.set_output(0, ctx.activation(out, opt.read(ctx, 1, "i8")))


TRANSLATORS = {
    "SVDF": svdf,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": unidirectional_sequence_lstm,
    "LSTM": lstm,
    "BIDIRECTIONAL_SEQUENCE_LSTM": bidirectional_sequence_lstm,
    "UNIDIRECTIONAL_SEQUENCE_RNN": unidirectional_sequence_rnn,
    "RNN": rnn,
    "BIDIRECTIONAL_SEQUENCE_RNN": bidirectional_sequence_rnn,
}
