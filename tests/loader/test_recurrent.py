"""Recurrent TFLite operators (webnn_py/loader/tflite/ops_recurrent.py) against
LiteRT: their states are variable tensors, so ten consecutive compute() calls must
equal ten consecutive invocations of one interpreter."""
from __future__ import annotations

import numpy as np
import pytest

from .test_state import litert_stream, webnn_stream
from .tflite_writer import ModelWriter, options

RNG = np.random.default_rng(44)
F32 = np.float32
FRAMES = 10
TANH = 4


def rand(*shape, scale=0.5):
    return RNG.uniform(-scale, scale, shape).astype(F32)


def compare(model: bytes, frames: list[dict], tolerance=2e-5):
    reference = litert_stream(model, frames)
    ours = webnn_stream(model, frames)
    for step, (a, b) in enumerate(zip(ours, reference)):
        assert set(a) == set(b)
        for name in b:
            assert a[name].shape == b[name].shape, (name, a[name].shape, b[name].shape)
            np.testing.assert_allclose(a[name], b[name], rtol=tolerance, atol=tolerance,
                                       err_msg=f"frame {step}, {name}")
    # The state carries over: the last frame run alone gives another result.
    alone = webnn_stream(model, frames[-1:])[0]
    assert any(not np.allclose(alone[n], ours[-1][n]) for n in alone)


def sequence_frames(shape):
    return [{"x": rand(*shape, scale=1.0)} for _ in range(FRAMES)]


def lstm_inputs(g, n_in, n_cell, n_out, batch, cifg=False, peephole=False, projection=False, layer_norm=False,
                base_index=None):
    """Inputs 1-17 (weights), 18-19 (variable states) and 20-23 (layer norm) of an LSTM."""
    ids = []
    for gate in range(4):
        ids.append(-1 if cifg and gate == 0 else g.const(rand(n_cell, n_in)))
    for gate in range(4):
        ids.append(-1 if cifg and gate == 0 else g.const(rand(n_cell, n_out)))
    for gate in range(3):
        ids.append(g.const(rand(n_cell)) if peephole and not (cifg and gate == 0) else -1)
    for gate in range(4):
        ids.append(-1 if cifg and gate == 0 else g.const(rand(n_cell, scale=0.2)))
    ids.append(g.const(rand(n_out, n_cell)) if projection else -1)
    ids.append(g.const(rand(n_out, scale=0.1)) if projection else -1)
    ids.append(g.tensor([batch, n_out], F32, variable=True))
    ids.append(g.tensor([batch, n_cell], F32, variable=True))
    ln = [g.const(rand(n_cell, scale=1.0) + 1.0) if layer_norm and not (cifg and gate == 0) else -1
          for gate in range(4)]
    return ids, ln


@pytest.mark.parametrize("variant", ["plain", "cifg_peephole", "projection_clip", "layer_norm", "time_major"])
def test_unidirectional_sequence_lstm(variant):
    batch, steps, n_in, n_cell = 2, 3, 5, 4
    projection = variant == "projection_clip"
    n_out = 3 if projection else n_cell
    time_major = variant == "time_major"
    w = ModelWriter()
    g = w.subgraph()
    in_shape = [steps, batch, n_in] if time_major else [batch, steps, n_in]
    x = g.tensor(in_shape, F32, name="x")
    ids, ln = lstm_inputs(g, n_in, n_cell, n_out, batch, cifg=variant == "cifg_peephole",
                          peephole=variant == "cifg_peephole", projection=projection,
                          layer_norm=variant == "layer_norm")
    out_shape = [steps, batch, n_out] if time_major else [batch, steps, n_out]
    y = g.tensor(out_shape, F32, name="y")
    opts = options("UnidirectionalSequenceLSTMOptions", fusedActivationFunction=TANH,
                   cellClip=0.6 if projection else 0.0, projClip=0.4 if projection else 0.0, timeMajor=time_major)
    g.op("UNIDIRECTIONAL_SEQUENCE_LSTM", [x, *ids, *(ln if variant == "layer_norm" else [])], [y], opts)
    g.io([x], [y])
    compare(w.finish(), sequence_frames(in_shape))


def one_layer(code, in_shape, out_shape, other_inputs, opts) -> bytes:
    """A model of one layer: input x, then the inputs other_inputs(g) makes, output y."""
    w = ModelWriter()
    g = w.subgraph()
    x = g.tensor(in_shape, F32, name="x")
    others = other_inputs(g)
    y = g.tensor(out_shape, F32, name="y")
    g.op(code, [x, *others], [y], opts)
    g.io([x], [y])
    return w.finish()


def rnn_weights(g, n_in, units, batch, bias=None):
    """weights, recurrent weights, bias and the variable hidden state of an RNN."""
    return [g.const(rand(units, n_in)), g.const(rand(units, units)), g.const(rand(units) if bias is None else bias),
            g.tensor([batch, units], F32, variable=True)]


def test_lstm_one_step_full_kernel():
    batch, n_in, n_cell = 2, 4, 3
    model = one_layer("LSTM", [batch, n_in], [batch, n_cell],
                      lambda g: lstm_inputs(g, n_in, n_cell, n_cell, batch, peephole=True)[0],
                      options("LSTMOptions", fusedActivationFunction=TANH, kernelType=0))
    compare(model, sequence_frames([batch, n_in]))


@pytest.mark.parametrize("time_major", [False, True])
def test_unidirectional_sequence_rnn(time_major):
    batch, steps, n_in, units = 2, 4, 3, 5
    in_shape = [steps, batch, n_in] if time_major else [batch, steps, n_in]
    model = one_layer("UNIDIRECTIONAL_SEQUENCE_RNN", in_shape,
                      [steps, batch, units] if time_major else [batch, steps, units],
                      lambda g: rnn_weights(g, n_in, units, batch),
                      options("SequenceRNNOptions", timeMajor=time_major, fusedActivationFunction=TANH))
    compare(model, sequence_frames(in_shape))


def test_rnn_one_step_relu():
    batch, n_in, units = 3, 4, 2
    # A bias of 1 keeps the ReLU state positive, so that it matters.
    model = one_layer("RNN", [batch, n_in], [batch, units],
                      lambda g: rnn_weights(g, n_in, units, batch, bias=np.full(units, 1.0, F32)),
                      options("RNNOptions", fusedActivationFunction=1))
    compare(model, sequence_frames([batch, n_in]))


def bidirectional_layer(code, in_shape, out_shape, other_inputs, opts, merge) -> bytes:
    """A model of one bidirectional layer: input x, then the inputs other_inputs(g) makes;
    output y (both directions merged on the last axis) or fw and bw (each of out_shape)."""
    w = ModelWriter()
    g = w.subgraph()
    x = g.tensor(in_shape, F32, name="x")
    others = other_inputs(g)
    outs = [g.tensor([*out_shape[:-1], 2 * out_shape[-1]], F32, name="y")] if merge else \
        [g.tensor(out_shape, F32, name=n) for n in ("fw", "bw")]
    g.op(code, [x, *others], outs, opts)
    g.io([x], outs)
    return w.finish()


@pytest.mark.parametrize("merge", [False, True])
def test_bidirectional_sequence_rnn(merge):
    batch, steps, n_in, units = 2, 3, 4, 3
    model = bidirectional_layer(
        "BIDIRECTIONAL_SEQUENCE_RNN", [batch, steps, n_in], [batch, steps, units],
        lambda g: rnn_weights(g, n_in, units, batch) + rnn_weights(g, n_in, units, batch) + [-1, -1, -1],
        options("BidirectionalSequenceRNNOptions", timeMajor=False, fusedActivationFunction=TANH, mergeOutputs=merge),
        merge)
    compare(model, sequence_frames([batch, steps, n_in]))


def bidirectional_lstm_inputs(g, n_in, n_cell, batch):
    """Forward weights (1-17), backward weights (18-34), the four states, no auxiliary input."""
    fw, _ = lstm_inputs(g, n_in, n_cell, n_cell, batch)
    bw, _ = lstm_inputs(g, n_in, n_cell, n_cell, batch)
    return [*fw[:17], *bw[:17], *fw[17:], *bw[17:]] + [-1] * 9


@pytest.mark.parametrize("merge", [False, True])
def test_bidirectional_sequence_lstm(merge):
    batch, steps, n_in, n_cell = 2, 3, 4, 3
    model = bidirectional_layer(
        "BIDIRECTIONAL_SEQUENCE_LSTM", [steps, batch, n_in], [steps, batch, n_cell],
        lambda g: bidirectional_lstm_inputs(g, n_in, n_cell, batch),
        options("BidirectionalSequenceLSTMOptions", fusedActivationFunction=TANH, mergeOutputs=merge, timeMajor=True),
        merge)
    compare(model, sequence_frames([steps, batch, n_in]))


@pytest.mark.parametrize("rank,memory", [(1, 4), (2, 3), (1, 2)])
def test_svdf(rank, memory):
    batch, n_in, units = 2, 5, 3
    filters = units * rank
    model = one_layer("SVDF", [batch, n_in], [batch, units],
                      lambda g: [g.const(rand(filters, n_in)), g.const(rand(filters, memory)), g.const(rand(units)),
                                 g.tensor([batch, filters * memory], F32, variable=True)],
                      options("SVDFOptions", rank=rank, fusedActivationFunction=1 if rank == 2 else 0))
    compare(model, sequence_frames([batch, n_in]))


def test_overlong_sequences_are_refused_before_unrolling():
    """A hostile sequence length is refused at once (each step would be a few dozen builder calls)."""
    from webnn_py.base.errors import NotSupportedError
    from webnn_py.loader.tflite.ops_recurrent import MAX_UNROLLED_STEPS

    from .helpers import webnn_run
    steps = MAX_UNROLLED_STEPS + 1
    model = one_layer("UNIDIRECTIONAL_SEQUENCE_RNN", [1, steps, 1], [1, steps, 2], lambda g: rnn_weights(g, 1, 2, 1),
                      options("SequenceRNNOptions", fusedActivationFunction=TANH))
    with pytest.raises(NotSupportedError, match=f"{steps} steps"):
        webnn_run(model, {"x": np.zeros((1, steps, 1), F32)})
