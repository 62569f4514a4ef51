"""OpenVINO IR Loops whose body is one LSTMCell or GRUCell (an RNN exported as a Loop):
through MLModelLoader vs OpenVINO's CPU plugin, and the loop runs as one lstm/gru
sequence (webnn_py/runtime/compiler/recurrent_loop.py): the body's plan is never walked.
"""
from __future__ import annotations

import numpy as np
import pytest

from .helpers import compare
from .test_loop import build_loop

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")
F32 = np.float32
BATCH, STEPS, INPUT, HIDDEN = 2, 7, 5, 6


@pytest.fixture
def walks(monkeypatch):
    """How many times a loop ran the per-iteration walk (runtime/loop.py LoopBody.run_loop)."""
    from webnn_py.runtime.loop import LoopBody
    calls = []
    run_loop = LoopBody.run_loop

    def counted(self, *args):
        calls.append(self)
        return run_loop(self, *args)
    monkeypatch.setattr(LoopBody, "run_loop", counted)
    return calls


def _weights(rng, gates, bias_blocks=None):
    def u(*shape):
        return rng.uniform(-0.6, 0.6, shape).astype(F32)
    return u(gates * HIDDEN, INPUT), u(gates * HIDDEN, HIDDEN), u((bias_blocks or gates) * HIDDEN)


def recurrent_loop_model(rng, cell: str, *, linear_before_reset=False, trip=STEPS, batch_major=True,
                         invariant_weights=False, scale_y=None):
    """Y (the hidden states, concatenated), H and C (last values) of a Loop over X's time
    axis whose body squeezes the slice, steps the cell with its states carried by back
    edges, and unsqueezes the new hidden state for the concatenation; the condition a
    constant true. `invariant_weights` passes W from the outer graph as an invariant input;
    `scale_y` multiplies Y's parts (an extra operation in the body)."""
    axis = 1 if batch_major else 0
    x_shape = [BATCH, STEPS, INPUT] if batch_major else [STEPS, BATCH, INPUT]
    x = ops.parameter(x_shape, F32, name="X")
    h0 = ops.parameter([BATCH, HIDDEN], F32, name="H0")
    part = list(x_shape)
    part[axis] = 1
    xi = ops.parameter(part, F32, name="xi")
    hi = ops.parameter([BATCH, HIDDEN], F32, name="hi")
    x_t = ops.squeeze(xi, ops.constant(np.int64(axis)))
    gates = 4 if cell == "lstm" else 3
    w, r, b = _weights(rng, gates, 4 if linear_before_reset else None)
    wi = ops.parameter(list(w.shape), F32, name="wi") if invariant_weights else ops.constant(w)
    params, merged = [xi, hi], []
    if cell == "lstm":
        c0 = ops.parameter([BATCH, HIDDEN], F32, name="C0")
        ci = ops.parameter([BATCH, HIDDEN], F32, name="ci")
        step = ops.lstm_cell(x_t, hi, ci, wi, ops.constant(r), ops.constant(b), HIDDEN)
        h_new, c_new = step.output(0), step.output(1)
        params.append(ci)
    else:
        h_new = ops.gru_cell(x_t, hi, wi, ops.constant(r), ops.constant(b), HIDDEN,
                             linear_before_reset=linear_before_reset).output(0)
    if invariant_weights:
        params.append(wi)
    r_h = ops.result(h_new)
    y_t = h_new if scale_y is None else ops.multiply(h_new, ops.constant(F32(scale_y)))
    r_y = ops.result(ops.unsqueeze(y_t, ops.constant(np.int64(axis))))
    r_cond = ops.result(ops.constant(True))
    results = [r_h, r_y, r_cond]
    merged = [(hi, h0, r_h)]
    last = [r_h]
    if cell == "lstm":
        r_c = ops.result(c_new)
        results.append(r_c)
        merged.append((ci, c0, r_c))
        last.append(r_c)
    body = ov.Model(results, params, "body")
    outs = build_loop(ops.constant(np.int64(trip)), ops.constant(True), body,
                      sliced=[(xi, x.output(0), 0, 1, 1, -1, axis)], merged=merged,
                      invariant=[(wi, ops.constant(w))] if invariant_weights else (),
                      last=last, concat=[(r_y, axis)], condition_result=r_cond)
    inputs = [x, h0] + ([c0] if cell == "lstm" else [])
    model = ov.Model([ops.result(o) for o in outs], inputs, "m")
    feeds = {"X": rng.uniform(-1, 1, x_shape).astype(F32), "H0": rng.uniform(-1, 1, (BATCH, HIDDEN)).astype(F32)}
    if cell == "lstm":
        feeds["C0"] = rng.uniform(-1, 1, (BATCH, HIDDEN)).astype(F32)
    return model, feeds


CASES = [("lstm", {"batch_major": True}), ("lstm", {"batch_major": False}),
         ("lstm", {"invariant_weights": True}), ("lstm", {"batch_major": False, "invariant_weights": True}),
         ("gru", {}), ("gru", {"linear_before_reset": True}), ("gru", {"invariant_weights": True}),
         ("gru", {"linear_before_reset": True, "invariant_weights": True})]


@pytest.mark.parametrize("cell,options", CASES, ids=[f"{c}-{'-'.join(o) or 'plain'}" for c, o in CASES])
def test_cell_loop_matches_openvino_as_one_sequence(tmp_path, walks, cell, options):
    model, feeds = recurrent_loop_model(np.random.default_rng(len(options)), cell, **options)
    compare(model, tmp_path, feeds)
    assert walks == []


def test_trip_count_below_the_sequence_length(tmp_path, walks):
    model, feeds = recurrent_loop_model(np.random.default_rng(3), "lstm", trip=4)
    got = compare(model, tmp_path, feeds)
    assert any(v.shape == (BATCH, 4, HIDDEN) for v in got.values())
    assert walks == []


def test_a_body_with_another_operation_is_walked(tmp_path, walks):
    model, feeds = recurrent_loop_model(np.random.default_rng(4), "gru", scale_y=2.0)
    compare(model, tmp_path, feeds)
    assert len(walks) == 1
