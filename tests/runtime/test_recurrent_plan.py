"""lstm / gru with constant weights in a compiled plan (runtime/compiler/specialise.py): the C
runners return views of their own working memory, which the next run overwrites, so the plan
must copy every output it hands out and nothing may see one run's values in another's. Checked
run after run against torch in float64 (tests/kernels/test_recurrent_kernels.py's references):
execute()'s results kept by the caller, dispatch() into tensors, a reshape of the sequence (the
zoo's ONNX graphs), and a fused stage working in place on a gru's only output."""
import numpy as np
import pytest

import webnn_py
from webnn_py.ops import recurrent
from tests.kernels.test_recurrent_kernels import torch_gru, torch_lstm

pytest.importorskip("torch")

STEPS, BATCH, INPUT, HIDDEN = 5, 2, 3, 7
RNG = np.random.default_rng(23)
F32 = "float32"


def rand(*shape, scale=1.0):
    return RNG.uniform(-scale, scale, shape).astype(np.float32)


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=2e-6 * STEPS, atol=1e-5 * STEPS)


async def _tensors(context, arrays: dict, readable: bool):
    return {name: await context.createTensor({"dataType": F32, "shape": list(a.shape), "writable": not readable,
                                              "readable": readable}) for name, a in arrays.items()}


async def _graph(kind, w, r, options, outputs_of):
    """A context and a graph of one `kind` ("lstm" or "gru") over inputs x, h0 (and c0 for
    lstm), with constant weights: `options` are the operator's options, arrays among them
    made constants; the outputs are `outputs_of(builder, *the operator's outputs)`."""
    context = await webnn_py.ml.createContext()
    builder = webnn_py.MLGraphBuilder(context)

    def constant(a):
        return builder.constant({"dataType": F32, "shape": list(a.shape)}, a)
    x = builder.input("x", {"dataType": F32, "shape": [STEPS, BATCH, INPUT]})
    options = {name: constant(v) if isinstance(v, np.ndarray) else v for name, v in options.items()}
    options["initialHiddenState"] = builder.input("h0", {"dataType": F32, "shape": [1, BATCH, HIDDEN]})
    if kind == "lstm":
        options["initialCellState"] = builder.input("c0", {"dataType": F32, "shape": [1, BATCH, HIDDEN]})
    outputs = getattr(builder, kind)(x, constant(w), constant(r), STEPS, HIDDEN, options)
    return context, await builder.build(outputs_of(builder, *outputs))


async def test_lstm_outputs_are_copies_run_after_run():
    w, r = rand(1, 4 * HIDDEN, INPUT, scale=0.5), rand(1, 4 * HIDDEN, HIDDEN, scale=0.5)
    b, rb = rand(1, 4 * HIDDEN), rand(1, 4 * HIDDEN)
    attrs = {"hidden_size": HIDDEN, "direction": "forward", "layout": "iofg", "activations": ("sigmoid", "tanh", "tanh")}
    context, graph = await _graph("lstm", w, r, {"bias": b, "recurrentBias": rb, "returnSequence": True},
                                  lambda builder, hidden, cell, sequence: {
                                      "hidden": hidden, "cell": cell, "sequence": sequence,
                                      "rows": builder.reshape(sequence, [STEPS, BATCH, HIDDEN])})
    assert graph._implementation.steps[0].kernel is not recurrent.lstm_kernel      # the specialised C runner

    def want(feeds):
        h, c, seq = torch_lstm(feeds["x"], w, r, b, rb, None, feeds["h0"], feeds["c0"], {**attrs, "return_sequence": True})
        return {"hidden": h, "cell": c, "sequence": seq, "rows": seq.reshape(STEPS, BATCH, HIDDEN)}
    await _recurrent_graph_runs(context, graph, lambda: {"x": rand(STEPS, BATCH, INPUT), "h0": rand(1, BATCH, HIDDEN),
                                                         "c0": rand(1, BATCH, HIDDEN)}, want)


async def test_gru_only_output_with_a_fused_stage_run_after_run():
    w, r, rb = rand(1, 3 * HIDDEN, INPUT, scale=0.5), rand(1, 3 * HIDDEN, HIDDEN, scale=0.5), rand(1, 3 * HIDDEN)
    attrs = {"hidden_size": HIDDEN, "direction": "forward", "layout": "zrn", "reset_after": True,
             "activations": ("sigmoid", "tanh"), "return_sequence": False}
    _, graph = await _graph("gru", w, r, {"recurrentBias": rb}, lambda builder, hidden: {
        "y": builder.mul(builder.relu(hidden), builder.constant(F32, 3.0))})
    plan = graph._implementation
    assert [step.name for step in plan.steps] == ["gru+relu+mul"]     # the stages work in place on h
    kept = []
    for _ in range(3):
        feeds = {"x": rand(STEPS, BATCH, INPUT), "h0": rand(1, BATCH, HIDDEN)}
        h = torch_gru(feeds["x"], w, r, None, rb, feeds["h0"], attrs)[0]
        y = plan.execute(feeds)["y"]
        _close(y, np.maximum(h, 0) * 3)
        kept.append((y.copy(), y))
    for copy, array in kept:
        np.testing.assert_array_equal(array, copy)


async def _recurrent_graph_runs(context, graph, feeds_of, want_of, runs=3):
    """`runs` dispatches and execute()s of `graph`, each against its reference; results kept by
    the caller do not change with later runs."""
    plan = graph._implementation
    inputs = await _tensors(context, feeds_of(), False)
    kept = []
    for _ in range(runs):
        feeds = feeds_of()
        want = want_of(feeds)
        outputs = await _tensors(context, want, True)
        results = plan.execute(feeds)
        for name, value in want.items():
            _close(results[name], value)
        kept.append(({name: a.copy() for name, a in results.items()}, results))
        for name, array in feeds.items():
            context.writeTensor(inputs[name], array)
        context.dispatch(graph, inputs, outputs)
        for name, value in want.items():
            _close(np.frombuffer(await context.readTensor(outputs[name]), np.float32).reshape(value.shape), value)
    for copies, results in kept:
        for name, array in results.items():
            np.testing.assert_array_equal(array, copies[name])


async def test_squeezed_lstm_sequence_is_the_step_s_own_output():
    """ONNX's LSTM Y [steps, dirs, batch, hidden] squeezed to [steps, batch, hidden] (ORT's WebNN
    EP and the zoo emit a reshape): the lstm step returns the sequence in that shape, no step of
    its own (compiler/fusion.py _absorb_output_reshapes)."""
    w, r = rand(1, 4 * HIDDEN, INPUT, scale=0.5), rand(1, 4 * HIDDEN, HIDDEN, scale=0.5)
    b, rb = rand(1, 4 * HIDDEN), rand(1, 4 * HIDDEN)
    attrs = {"hidden_size": HIDDEN, "direction": "forward", "layout": "iofg", "activations": ("sigmoid", "tanh", "tanh"),
             "return_sequence": True}
    context, graph = await _graph("lstm", w, r, {"bias": b, "recurrentBias": rb, "returnSequence": True},
                                  lambda builder, hidden, cell, sequence: {
                                      "hidden": hidden, "cell": cell,
                                      "rows": builder.reshape(sequence, [STEPS, BATCH, HIDDEN])})
    assert [step.name for step in graph._implementation.steps] == ["lstm+reshape"]

    def want(feeds):
        h, c, seq = torch_lstm(feeds["x"], w, r, b, rb, None, feeds["h0"], feeds["c0"], attrs)
        return {"hidden": h, "cell": c, "rows": seq.reshape(STEPS, BATCH, HIDDEN)}
    await _recurrent_graph_runs(context, graph, lambda: {"x": rand(STEPS, BATCH, INPUT), "h0": rand(1, BATCH, HIDDEN),
                                                         "c0": rand(1, BATCH, HIDDEN)}, want)


@pytest.mark.parametrize("permutation, absorbed", [((1, 0, 2, 3), True), ((0, 2, 1, 3), True), ((2, 1, 0, 3), False)])
async def test_gru_sequence_transposed(permutation, absorbed):
    """A transpose of the gru's sequence [steps, 1, batch, hidden] that moves only the size-1
    axis keeps the elements' order: the gru step returns it re-viewed; one that swaps steps and
    batch stays a transpose step. Both against torch."""
    w, r = rand(1, 3 * HIDDEN, INPUT, scale=0.5), rand(1, 3 * HIDDEN, HIDDEN, scale=0.5)
    b, rb = rand(1, 3 * HIDDEN), rand(1, 3 * HIDDEN)
    attrs = {"hidden_size": HIDDEN, "direction": "forward", "layout": "zrn", "reset_after": True,
             "activations": ("sigmoid", "tanh"), "return_sequence": True}
    context, graph = await _graph("gru", w, r, {"bias": b, "recurrentBias": rb, "returnSequence": True},
                                  lambda builder, hidden, sequence: {
                                      "hidden": hidden,
                                      "moved": builder.transpose(sequence, {"permutation": list(permutation)})})
    names = [step.name for step in graph._implementation.steps]
    assert names == (["gru+transpose"] if absorbed else ["gru", "transpose"])

    def want(feeds):
        h, seq = torch_gru(feeds["x"], w, r, b, rb, feeds["h0"], attrs)
        return {"hidden": h, "moved": np.ascontiguousarray(seq.transpose(permutation))}
    await _recurrent_graph_runs(context, graph, lambda: {"x": rand(STEPS, BATCH, INPUT), "h0": rand(1, BATCH, HIDDEN)},
                                want)
