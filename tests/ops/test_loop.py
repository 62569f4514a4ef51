"""loop (our extension; OpenVINO Loop-5 semantics, ../shared/spec/003_ea60059f0e025f60.txt).

Every expected value is computed by a plain Python loop in the test that
follows Loop-5's pseudo-code, written independently of webnn_py/runtime/loop.py;
the LSTM case is compared with builder.lstm (itself tested against torch).
"""
import asyncio
import logging

import numpy as np
import pytest

import webnn_py
from tests.portable.graph import descriptor

F32 = {"dataType": "float32", "shape": [2]}


# -- helpers -------------------------------------------------------------------------------------

async def _body(context, make):
    """Build a body graph: `make(builder)` returns its outputs by name."""
    builder = webnn_py.MLGraphBuilder(context)
    return await builder.build(make(builder))


def _true(b):
    """A body condition output that is always true and reads no body input."""
    return b.identity(b.constant("uint8", 1))


async def _run_async(make_body, make_outer, inputs, *, before=None):
    context = await webnn_py.ml.createContext()
    body = await _body(context, make_body)
    builder = webnn_py.MLGraphBuilder(context)
    operands = {name: builder.input(name, descriptor(a)) for name, a in inputs.items()}
    outs = make_outer(builder, operands, body)
    named = outs if isinstance(outs, dict) else {f"out{i}": op for i, op in enumerate(outs)}
    if before is not None:
        before(body)
    graph = await builder.build(named)
    in_tensors = {}
    for name, a in inputs.items():
        in_tensors[name] = await context.createTensor({**descriptor(a), "writable": True})
        context.writeTensor(in_tensors[name], np.ascontiguousarray(a))
    out_tensors = {}
    for name, op in named.items():
        out_tensors[name] = await context.createTensor({"dataType": op.dataType, "shape": op.shape,
                                                        "readable": True, "writable": True})
    context.dispatch(graph, in_tensors, out_tensors)
    result = {}
    for name, op in named.items():
        dtype = np.dtype({"float32": np.float32, "int32": np.int32, "int64": np.int64,
                          "uint8": np.uint8}[op.dataType])
        result[name] = np.frombuffer(await context.readTensor(out_tensors[name]), dtype).reshape(op.shape)
    context.destroy()
    return result if isinstance(outs, dict) else [result[f"out{i}"] for i in range(len(outs))]


def run(make_body, make_outer, inputs=None, **kw):
    return asyncio.run(_run_async(make_body, make_outer, inputs or {}, **kw))


def loop_error(make_body, call, match, inputs=None):
    """`call(builder, operands, body)` must raise TypeError matching `match`."""
    async def go():
        context = await webnn_py.ml.createContext()
        body = await _body(context, make_body)
        builder = webnn_py.MLGraphBuilder(context)
        operands = {name: builder.input(name, d) for name, d in (inputs or {}).items()}
        with pytest.raises(TypeError, match=match):
            call(builder, operands, body)
        context.destroy()
    asyncio.run(go())


def counter_body(b):
    """acc' = acc + x; cond' = acc' < limit (uint8)."""
    acc = b.input("acc", F32)
    x = b.input("x", F32)
    limit = b.input("limit", {"dataType": "float32", "shape": []})
    new = b.add(acc, x)
    cond = b.cast(b.lesser(b.reduceSum(new), limit), "uint8")
    return {"acc_out": new, "cond": cond}


def counter_reference(trip, cond, acc, x, limit, max_iterations=None):
    """Loop-5's pseudo-code, by hand: for (i = 0; (trip < 0 || i < trip) && cond; ++i)."""
    acc = acc.copy()
    i = 0
    while (trip < 0 or i < trip) and cond:
        acc = acc + x
        cond = acc.sum() < limit
        i += 1
    return acc, i


def counter_loop(b, o, body, trip, cond, **options):
    return b.loop(trip, cond, body, "cond",
                  [{"bodyInput": "acc", "value": o["acc"]}, {"bodyInput": "x", "value": o["x"]},
                   {"bodyInput": "limit", "value": o["limit"]}],
                  [{"bodyOutput": "acc_out"}],
                  {"backEdges": [{"from": "acc_out", "to": "acc"}], **options})


def counter_inputs(limit):
    return {"acc": np.array([1, 2], np.float32), "x": np.array([0.5, 1.5], np.float32),
            "limit": np.array(limit, np.float32)}


# -- the five combinations of Loop-5's pseudo-code ---------------------------------------------

def test_while_loop_runtime_trip_count_minus_one_and_runtime_condition():
    # input (-1, cond): the body's condition ends it.
    inputs = {**counter_inputs(20), "trip": np.array(-1, np.int64), "c": np.array(1, np.uint8)}
    out = run(counter_body, lambda b, o, body: counter_loop(b, o, body, o["trip"], o["c"]), inputs)
    expected, count = counter_reference(-1, True, inputs["acc"], inputs["x"], 20)
    assert count == 9        # sum(acc) goes 3, 5, ..., 21
    np.testing.assert_array_equal(out[0], expected)


def test_while_loop_with_false_initial_condition_runs_zero_times():
    inputs = {**counter_inputs(20), "trip": np.array(-1, np.int64), "c": np.array(0, np.uint8)}
    out = run(counter_body, lambda b, o, body: counter_loop(b, o, body, o["trip"], o["c"]), inputs)
    np.testing.assert_array_equal(out[0], inputs["acc"])      # the back edge's initial value


def test_do_while_runs_once_even_if_the_body_condition_is_false():
    # input (-1, true): the first iteration always runs.
    inputs = counter_inputs(0)
    out = run(counter_body, lambda b, o, body: counter_loop(b, o, body, b.constant("int32", -1),
                                                            b.constant("uint8", 1)), inputs)
    expected, count = counter_reference(-1, True, inputs["acc"], inputs["x"], 0)
    assert count == 1
    np.testing.assert_array_equal(out[0], expected)


def test_for_loop_with_a_constant_trip_count():
    # input (trip_count, true), the body's condition always true.
    def body(b):
        acc = b.input("acc", F32)
        return {"acc_out": b.add(acc, b.constant({"dataType": "float32", "shape": [2]},
                                                  np.array([1, -1], np.float32))), "cond": _true(b)}

    out = run(body, lambda b, o, bd: b.loop(b.constant("int32", 7), b.constant("uint8", 1), bd, "cond",
                                            [{"bodyInput": "acc", "value": o["acc"]}], [{"bodyOutput": "acc_out"}],
                                            {"backEdges": [{"from": "acc_out", "to": "acc"}]}),
              {"acc": np.array([0, 0], np.float32)})
    np.testing.assert_array_equal(out[0], [7, -7])


@pytest.mark.parametrize("limit", [3.0, 100.0])
def test_for_loop_with_condition(limit):
    # input (trip_count, cond): whichever ends first.
    inputs = {**counter_inputs(limit), "c": np.array(1, np.uint8)}
    out = run(counter_body, lambda b, o, body: counter_loop(b, o, body, b.constant("int64", 4), o["c"]), inputs)
    expected, count = counter_reference(4, True, inputs["acc"], inputs["x"], limit)
    assert count == (1 if limit == 3.0 else 4)
    np.testing.assert_array_equal(out[0], expected)


def _fail_handlers():
    return [h for h in logging.getLogger("webnn_py").handlers if type(h).__name__ == "_FailOnWebNNErrors"]


def test_infinite_loop_stops_at_max_iterations_and_leaves_outputs_unchanged():
    # input (-1, true) with a condition that is always true: stopped by maxIterations.
    seen = []

    class Capture(logging.Handler):
        def emit(self, record):
            seen.append(record)

    async def go():
        context = await webnn_py.ml.createContext()
        body = await _body(context, lambda b: {"acc_out": b.add(b.input("acc", F32), b.constant("float32", 1)),
                                               "cond": _true(b)})
        builder = webnn_py.MLGraphBuilder(context)
        acc = builder.input("acc", F32)
        out = builder.loop(builder.constant("int64", -1), builder.constant("uint8", 1), body, "cond",
                           [{"bodyInput": "acc", "value": acc}], [{"bodyOutput": "acc_out"}],
                           {"backEdges": [{"from": "acc_out", "to": "acc"}], "maxIterations": 50,
                            "label": "counter"})[0]
        graph = await builder.build({"out": out})
        t_in = await context.createTensor({**F32, "writable": True})
        t_out = await context.createTensor({**F32, "writable": True, "readable": True})
        context.writeTensor(t_in, np.zeros(2, np.float32))
        context.writeTensor(t_out, np.array([42, 43], np.float32))
        context.dispatch(graph, {"acc": t_in}, {"out": t_out})
        return np.frombuffer(await context.readTensor(t_out), np.float32)

    handler = Capture(logging.ERROR)
    logging.getLogger("webnn_py").addHandler(handler)
    try:
        result = asyncio.run(go())
    finally:
        logging.getLogger("webnn_py").removeHandler(handler)
    np.testing.assert_array_equal(result, [42, 43])
    assert len(seen) == 1 and "dispatch failed" in seen[0].getMessage()
    exc = seen[0].exc_info[1]
    assert exc.name == "OperationError" and "maxIterations (50)" in str(exc)
    assert str(exc).startswith("[counter] loop: "), str(exc)     # named like a build-time error
    for h in _fail_handlers():       # the failure was expected: do not let the suite's guard fail the test
        h.records.clear()


def test_a_loop_of_exactly_max_iterations_succeeds():
    def body(b):
        return {"acc_out": b.add(b.input("acc", F32), b.constant("float32", 1)), "cond": _true(b)}

    out = run(body, lambda b, o, bd: b.loop(b.constant("int32", 50), b.constant("uint8", 1), bd, "cond",
                                            [{"bodyInput": "acc", "value": o["acc"]}], [{"bodyOutput": "acc_out"}],
                                            {"backEdges": [{"from": "acc_out", "to": "acc"}], "maxIterations": 50}),
              {"acc": np.zeros(2, np.float32)})
    np.testing.assert_array_equal(out[0], [50, 50])


# -- trip count and condition forms ------------------------------------------------------------

@pytest.mark.parametrize("trip_type", [np.int32, np.int64])
@pytest.mark.parametrize("trip_shape", [(), (1,)])
@pytest.mark.parametrize("cond_shape", [(), (1,)])
def test_trip_count_and_condition_as_scalar_or_one_element_1d(trip_type, trip_shape, cond_shape):
    inputs = {**counter_inputs(100), "trip": np.full(trip_shape, 3, trip_type), "c": np.full(cond_shape, 1, np.uint8)}
    out = run(counter_body, lambda b, o, body: counter_loop(b, o, body, o["trip"], o["c"]), inputs)
    expected, count = counter_reference(3, True, inputs["acc"], inputs["x"], 100)
    assert count == 3
    np.testing.assert_array_equal(out[0], expected)


def test_condition_values_other_than_one_are_true():
    inputs = {**counter_inputs(100), "trip": np.array([2], np.int32), "c": np.array([255], np.uint8)}
    out = run(counter_body, lambda b, o, body: counter_loop(b, o, body, o["trip"], o["c"]), inputs)
    np.testing.assert_array_equal(out[0], counter_reference(2, True, inputs["acc"], inputs["x"], 100)[0])


def test_zero_trip_count_gives_initial_values_and_zeros():
    def body(b):
        acc = b.input("acc", F32)
        return {"acc_out": b.add(acc, b.constant("float32", 1)), "other": b.mul(acc, b.constant("float32", 3)),
                "cond": _true(b)}

    out = run(body, lambda b, o, bd: b.loop(o["trip"], b.constant("uint8", 1), bd, "cond",
                                            [{"bodyInput": "acc", "value": o["acc"]}],
                                            [{"bodyOutput": "acc_out"}, {"bodyOutput": "other"}],
                                            {"backEdges": [{"from": "acc_out", "to": "acc"}]}),
              {"acc": np.array([4, 5], np.float32), "trip": np.array(0, np.int32)})
    np.testing.assert_array_equal(out[0], [4, 5])     # back-edged output: the initial value
    np.testing.assert_array_equal(out[1], [0, 0])     # no initial value: zeros (documented choice)


# -- sliced inputs, concatenated outputs, current iteration, back edges ---------------------------

@pytest.mark.parametrize("in_axis", [1, -2])
@pytest.mark.parametrize("out_axis", [2, -1])
def test_sliced_input_and_concatenated_output(in_axis, out_axis):
    rng = np.random.default_rng(7)
    x = rng.uniform(-5, 5, size=(2, 3, 4)).astype(np.float32)
    sliced = (2, 1, 4)          # axis 1 kept with size 1

    def body(b):
        part = b.input("part", {"dataType": "float32", "shape": list(sliced)})
        i = b.input("i", {"dataType": "int32", "shape": []})
        return {"y": b.mul(part, b.cast(i, "float32")), "cond": _true(b)}

    out = run(body, lambda b, o, bd: b.loop(b.constant("int64", -1), b.constant("uint8", 1), bd, "cond",
                                            [{"bodyInput": "part", "value": o["x"], "axis": in_axis}],
                                            [{"bodyOutput": "y", "axis": out_axis}, {"bodyOutput": "y"}],
                                            {"currentIteration": "i"}),
              {"x": x})
    # By hand: iteration i sees x[:, i:i+1, :] and yields it times i; trip -1 and an
    # always-true condition stop after the 3 slices.
    parts = []
    for i in range(3):
        part = np.empty(sliced, np.float32)
        for a in range(2):
            for c in range(4):
                part[a, 0, c] = x[a, i, c] * i
        parts.append(part)
    expected = np.empty((2, 1, 12), np.float32)
    for i, part in enumerate(parts):
        expected[:, :, 4 * i:4 * i + 4] = part
    assert out[0].shape == (2, 1, 12)
    np.testing.assert_array_equal(out[0], expected)
    np.testing.assert_array_equal(out[1], parts[-1])


def test_trip_count_below_the_slice_count_and_concatenation_along_the_first_axis():
    x = np.arange(10, dtype=np.int32).reshape(5, 2)

    def body(b):
        part = b.input("part", {"dataType": "int32", "shape": [1, 2]})
        total = b.input("total", {"dataType": "int32", "shape": [1, 2]})
        new = b.add(total, part)
        return {"total_out": new, "running": b.identity(new), "cond": _true(b)}

    out = run(body, lambda b, o, bd: b.loop(b.constant("int32", 3), b.constant("uint8", 1), bd, "cond",
                                            [{"bodyInput": "part", "value": o["x"], "axis": 0},
                                             {"bodyInput": "total", "value": o["t"]}],
                                            [{"bodyOutput": "running", "axis": 0}, {"bodyOutput": "total_out"}],
                                            {"backEdges": [{"from": "total_out", "to": "total"}]}),
              {"x": x, "t": np.array([[100, 200]], np.int32)})
    running, total = [], [100, 200]
    for i in range(3):
        total = [total[0] + int(x[i, 0]), total[1] + int(x[i, 1])]
        running.append(total)
    assert out[0].tolist() == running
    assert out[1].tolist() == [running[-1]]


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_current_iteration_as_one_element_1d(dtype):
    name = "int32" if dtype == np.int32 else "int64"

    def body(b):
        i = b.input("i", {"dataType": name, "shape": [1]})
        s = b.input("s", {"dataType": name, "shape": [1]})
        new = b.add(s, b.mul(i, i))
        return {"s_out": new, "cond": b.cast(b.lesser(i, b.constant({"dataType": name, "shape": [1]},
                                                                    np.array([3], dtype))), "uint8")}

    out = run(body, lambda b, o, bd: b.loop(b.constant("int32", 10), b.constant("uint8", 1), bd, "cond",
                                            [{"bodyInput": "s", "value": o["s"]}], [{"bodyOutput": "s_out"}],
                                            {"currentIteration": "i", "backEdges": [{"from": "s_out", "to": "s"}]}),
              {"s": np.array([0], dtype)})
    s, i, cond = 0, 0, True
    while i < 10 and cond:
        s += i * i
        cond = i < 3
        i += 1
    assert out[0].tolist() == [s] and s == 0 + 1 + 4 + 9


def test_back_edges_update_simultaneously():
    # (a, b) <- (b, a + b): Fibonacci; a swap that copied one edge before reading the other would differ.
    desc = {"dataType": "int64", "shape": [1]}

    def body(b):
        x, y = b.input("a", desc), b.input("b", desc)
        return {"a_out": b.identity(y), "b_out": b.add(x, y), "cond": _true(b)}

    out = run(body, lambda b, o, bd: b.loop(b.constant("int64", 10), b.constant("uint8", 1), bd, "cond",
                                            [{"bodyInput": "a", "value": o["a"]}, {"bodyInput": "b", "value": o["b"]}],
                                            [{"bodyOutput": "a_out"}, {"bodyOutput": "b_out"}],
                                            {"backEdges": [{"from": "a_out", "to": "a"}, {"from": "b_out", "to": "b"}]}),
              {"a": np.array([0], np.int64), "b": np.array([1], np.int64)})
    a, b = 0, 1
    for _ in range(10):
        a, b = b, a + b
    assert out[0].tolist() == [a] and out[1].tolist() == [b] and a == 55


def test_do_while_concatenation_has_one_iteration_when_the_body_condition_is_constant_false():
    def body(b):
        return {"y": b.add(b.input("x", F32), b.constant("float32", 1)), "cond": b.identity(b.constant("uint8", 0))}

    out = run(body, lambda b, o, bd: b.loop(b.constant("int32", -1), b.constant("uint8", 1), bd, "cond",
                                            [{"bodyInput": "x", "value": o["x"]}], [{"bodyOutput": "y", "axis": 0}]),
              {"x": np.array([1, 2], np.float32)})
    assert out[0].tolist() == [2, 3]


def test_destroying_the_body_after_loop_keeps_the_outer_graph_working():
    def body(b):
        return {"y": b.mul(b.input("x", F32), b.constant("float32", 2)), "cond": _true(b)}

    out = run(body, lambda b, o, bd: b.loop(b.constant("int32", 3), b.constant("uint8", 1), bd, "cond",
                                            [{"bodyInput": "x", "value": o["x"]}], [{"bodyOutput": "y", "axis": 0}]),
              {"x": np.array([1, 2], np.float32)}, before=lambda bd: bd.destroy())
    assert out[0].tolist() == [2, 4, 2, 4, 2, 4]


def test_nested_loops():
    async def go():
        context = await webnn_py.ml.createContext()
        inner = await _body(context, lambda b: {"s_out": b.add(b.input("s", F32), b.constant("float32", 1)),
                                                "cond": _true(b)})
        mid = webnn_py.MLGraphBuilder(context)
        s = mid.input("s", F32)
        inner_out = mid.loop(mid.constant("int32", 3), mid.constant("uint8", 1), inner, "cond",
                             [{"bodyInput": "s", "value": s}], [{"bodyOutput": "s_out"}],
                             {"backEdges": [{"from": "s_out", "to": "s"}]})[0]
        outer_body = await mid.build({"s_out": inner_out, "cond": _true(mid)})
        builder = webnn_py.MLGraphBuilder(context)
        x = builder.input("x", F32)
        out = builder.loop(builder.constant("int32", 4), builder.constant("uint8", 1), outer_body, "cond",
                           [{"bodyInput": "s", "value": x}], [{"bodyOutput": "s_out"}],
                           {"backEdges": [{"from": "s_out", "to": "s"}]})[0]
        graph = await builder.build({"out": out})
        tx = await context.createTensor({**F32, "writable": True})
        to = await context.createTensor({**F32, "readable": True})
        context.writeTensor(tx, np.array([0, 10], np.float32))
        context.dispatch(graph, {"x": tx}, {"out": to})
        return np.frombuffer(await context.readTensor(to), np.float32)

    assert asyncio.run(go()).tolist() == [12, 22]


# -- LSTM as a loop body over lstmCell ---------------------------------------------------------------

def test_lstm_as_a_loop_over_lstm_cell_matches_builder_lstm():
    rng = np.random.default_rng(20261122)
    steps, batch, input_size, hidden = 5, 2, 3, 4
    x = rng.uniform(-1, 1, (steps, batch, input_size)).astype(np.float32)
    w = rng.uniform(-1, 1, (1, 4 * hidden, input_size)).astype(np.float32)
    r = rng.uniform(-1, 1, (1, 4 * hidden, hidden)).astype(np.float32)
    bias = rng.uniform(-1, 1, (1, 4 * hidden)).astype(np.float32)
    rbias = rng.uniform(-1, 1, (1, 4 * hidden)).astype(np.float32)
    h0 = rng.uniform(-1, 1, (1, batch, hidden)).astype(np.float32)
    c0 = rng.uniform(-1, 1, (1, batch, hidden)).astype(np.float32)

    def const(b, a):
        return b.constant(descriptor(a), np.ascontiguousarray(a))

    def body(b):
        xt = b.input("x", {"dataType": "float32", "shape": [1, batch, input_size]})
        h = b.input("h", {"dataType": "float32", "shape": [batch, hidden]})
        c = b.input("c", {"dataType": "float32", "shape": [batch, hidden]})
        h2, c2 = b.lstmCell(b.reshape(xt, [batch, input_size]), const(b, w[0]), const(b, r[0]), h, c, hidden,
                            {"bias": const(b, bias[0]), "recurrentBias": const(b, rbias[0])})
        return {"h_out": h2, "c_out": c2, "seq": b.reshape(h2, [1, 1, batch, hidden]), "cond": _true(b)}

    def outer(b, o, bd):
        looped = b.loop(b.constant("int32", steps), b.constant("uint8", 1), bd, "cond",
                        [{"bodyInput": "x", "value": o["x"], "axis": 0},
                         {"bodyInput": "h", "value": b.reshape(o["h0"], [batch, hidden])},
                         {"bodyInput": "c", "value": b.reshape(o["c0"], [batch, hidden])}],
                        [{"bodyOutput": "h_out"}, {"bodyOutput": "c_out"}, {"bodyOutput": "seq", "axis": 0}],
                        {"backEdges": [{"from": "h_out", "to": "h"}, {"from": "c_out", "to": "c"}]})
        ref = b.lstm(o["x"], const(b, w), const(b, r), steps, hidden,
                     {"bias": const(b, bias), "recurrentBias": const(b, rbias), "initialHiddenState": o["h0"],
                      "initialCellState": o["c0"], "returnSequence": True})
        return {"h": looped[0], "c": looped[1], "seq": looped[2], "ref_h": ref[0], "ref_c": ref[1], "ref_seq": ref[2]}

    out = run(body, outer, {"x": x, "h0": h0, "c0": c0})
    assert out["seq"].shape == out["ref_seq"].shape == (steps, 1, batch, hidden)
    np.testing.assert_allclose(out["h"], out["ref_h"][0], rtol=0, atol=1e-5)
    np.testing.assert_allclose(out["c"], out["ref_c"][0], rtol=0, atol=1e-5)
    np.testing.assert_allclose(out["seq"], out["ref_seq"], rtol=0, atol=1e-5)
    # The state really evolved (the comparison is not between two copies of h0).
    assert np.abs(out["h"] - h0[0]).max() > 1e-2


# -- TypeErrors -------------------------------------------------------------------------------------

def simple_body(b):
    x = b.input("x", F32)
    return {"y": b.add(x, b.constant("float32", 1)), "cond": _true(b),
            "wide": b.cast(x, "int32"), "flag2": b.identity(b.constant({"dataType": "uint8", "shape": [2]},
                                                                       np.array([1, 1], np.uint8)))}


def _call(trip=("int32", ()), cond=("uint8", ()), condition="cond", inputs=None, outputs=None, **options):
    def call(b, o, body):
        t = b.constant({"dataType": trip[0], "shape": list(trip[1])}, np.full(trip[1], 2, trip[0])) \
            if not isinstance(trip, str) else o[trip]
        c = b.constant({"dataType": cond[0], "shape": list(cond[1])}, np.full(cond[1], 1, cond[0])) \
            if not isinstance(cond, str) else o[cond]
        ins = inputs(b, o) if inputs else [{"bodyInput": "x", "value": o["x"]}]
        outs = outputs if outputs is not None else [{"bodyOutput": "y"}]
        return b.loop(t, c, body, condition, ins, outs, options)
    return call


X = {"x": F32}


@pytest.mark.parametrize("kwargs, match", [
    ({"trip": ("float32", ())}, "tripCount has data type float32"),
    ({"trip": ("uint32", ())}, "tripCount has data type uint32"),
    ({"trip": ("int32", (2,))}, r"tripCount must be a scalar or a 1-element 1-D tensor, not shape \[2\]"),
    ({"trip": ("int64", (1, 1))}, "tripCount has rank 2"),
    ({"cond": ("int32", ())}, "executionCondition has data type int32"),
    ({"cond": ("uint8", (3,))}, "executionCondition must be a scalar"),
    ({"condition": "nope"}, "conditionOutput 'nope' is not an output of the body"),
    ({"condition": "y"}, "condition output 'y' is float32"),
    ({"condition": "flag2"}, "condition output 'flag2' is uint8"),
    ({"inputs": lambda b, o: [{"bodyInput": "z", "value": o["x"]}]}, "the body has no such input"),
    ({"inputs": lambda b, o: [{"bodyInput": "x", "value": o["x"]}] * 2}, "bound more than once"),
    ({"inputs": lambda b, o: []}, "body inputs 'x' are not bound"),
    ({"inputs": lambda b, o: [{"bodyInput": "x", "value": b.cast(o["x"], "int32")}]},
     "the value is int32.*the body input is float32"),
    ({"inputs": lambda b, o: [{"bodyInput": "x", "value": b.reshape(o["x"], [1, 2])}]}, r"the body input is"),
    ({"inputs": lambda b, o: [{"bodyInput": "x", "value": o["x"], "axis": 0}]}, "once sliced"),
    ({"inputs": lambda b, o: [{"bodyInput": "x", "value": b.reshape(o["x"], [2, 1]), "axis": 2}]},
     "axis 2 is out of range for rank 2"),
    ({"inputs": lambda b, o: [{"bodyInput": "x", "value": b.reshape(o["x"], [2, 1]), "axis": -3}]},
     "axis -3 is out of range for rank 2"),
    ({"inputs": lambda b, o: [{"bodyInput": "x", "value": b.reduceSum(o["x"]), "axis": 0}]},
     "a scalar cannot be sliced"),
    ({"outputs": [{"bodyOutput": "nope"}]}, r"outputs\[0\] \(bodyOutput 'nope'\): the body has no such output"),
    ({"outputs": [{"bodyOutput": "y", "axis": 1}]}, "axis 1 is out of range for rank 1"),
    ({"currentIteration": "x"}, "currentIteration 'x' is also bound"),
    ({"currentIteration": "q"}, "currentIteration 'q' is not an input of the body"),
    ({"backEdges": [{"from": "nope", "to": "x"}]}, r"backEdges\[0\].*'nope' is not an output of the body"),
    ({"backEdges": [{"from": "y", "to": "nope"}]}, r"'nope' is not an input of the body"),
    ({"backEdges": [{"from": "wide", "to": "x"}]}, "the body output is int32.*the body input is float32"),
    ({"backEdges": [{"from": "y", "to": "x"}, {"from": "y", "to": "x"}]}, "target of another back edge"),
    ({"trip": ("int32", ()), "cond": "c", "outputs": [{"bodyOutput": "y", "axis": 0}]},
     "not known at build time \\(executionCondition is not a constant\\)"),
    ({"trip": "t", "outputs": [{"bodyOutput": "y", "axis": 0}]}, "tripCount is not a constant"),
    ({"maxIterations": 1, "outputs": [{"bodyOutput": "y", "axis": 0}]}, r"more than maxIterations \(1\)"),
])
def test_type_errors(kwargs, match):
    inputs = {**X, "c": {"dataType": "uint8", "shape": []}, "t": {"dataType": "int32", "shape": []}}
    loop_error(simple_body, _call(**kwargs), match, inputs)


def test_type_error_for_a_never_ending_loop_with_a_concatenated_output():
    loop_error(simple_body, lambda b, o, body: b.loop(b.constant("int64", -1), b.constant("uint8", 1), body, "cond",
                                                       [{"bodyInput": "x", "value": o["x"]}],
                                                       [{"bodyOutput": "y", "axis": -1}]),
               "the loop never ends", X)


def test_type_error_for_a_concatenation_over_zero_iterations():
    for trip, cond in ((0, 1), (5, 0)):
        loop_error(simple_body, lambda b, o, body: b.loop(b.constant("int32", trip), b.constant("uint8", cond), body,
                                                           "cond", [{"bodyInput": "x", "value": o["x"]}],
                                                           [{"bodyOutput": "y", "axis": 0}]),
                   "runs zero times", X)


def test_type_error_when_the_body_condition_depends_on_body_inputs():
    loop_error(counter_body, lambda b, o, body: b.loop(
        b.constant("int32", 3), b.constant("uint8", 1), body, "cond",
        [{"bodyInput": n, "value": o[n]} for n in ("acc", "x", "limit")], [{"bodyOutput": "acc_out", "axis": 0}]),
        "condition output 'cond' depends on body inputs",
        {"acc": F32, "x": F32, "limit": {"dataType": "float32", "shape": []}})


def test_type_error_for_a_sliced_back_edge_target_and_a_current_iteration_target():
    loop_error(simple_body, _call(inputs=lambda b, o: [{"bodyInput": "x", "value": b.reshape(o["x"], [2]),
                                                         "axis": 0}]), "once sliced", X)

    def body(b):
        i = b.input("i", {"dataType": "int32", "shape": []})
        return {"i_out": b.identity(i), "cond": _true(b), "f": b.cast(i, "float32")}

    loop_error(body, lambda b, o, bd: b.loop(b.constant("int32", 2), b.constant("uint8", 1), bd, "cond", [],
                                             [{"bodyOutput": "i_out"}],
                                             {"currentIteration": "i", "backEdges": [{"from": "i_out", "to": "i"}]}),
               "is the currentIteration input")

    def sliced_body(b):
        x = b.input("x", {"dataType": "float32", "shape": [1]})
        return {"y": b.identity(x), "cond": _true(b)}

    loop_error(sliced_body, lambda b, o, bd: b.loop(b.constant("int32", 2), b.constant("uint8", 1), bd, "cond",
                                                    [{"bodyInput": "x", "value": o["x"], "axis": 0}],
                                                    [{"bodyOutput": "y"}], {"backEdges": [{"from": "y", "to": "x"}]}),
               "needs its initial value from an MLLoopInput without axis", X)

    def float_iteration(b):
        i = b.input("i", {"dataType": "float32", "shape": []})
        return {"y": b.identity(i), "cond": _true(b)}

    loop_error(float_iteration, lambda b, o, bd: b.loop(b.constant("int32", 2), b.constant("uint8", 1), bd, "cond",
                                                        [], [{"bodyOutput": "y"}], {"currentIteration": "i"}),
               "currentIteration input 'i' is float32")


def test_type_error_for_a_body_of_another_context_or_destroyed():
    async def go():
        context = await webnn_py.ml.createContext()
        other = await webnn_py.ml.createContext()
        foreign = await _body(other, simple_body)
        destroyed = await _body(context, simple_body)
        destroyed.destroy()
        builder = webnn_py.MLGraphBuilder(context)
        x = builder.input("x", F32)
        for body, match in ((foreign, "not an MLGraph of this builder's context"), (destroyed, "has been destroyed")):
            with pytest.raises(TypeError, match=match):
                builder.loop(builder.constant("int32", 2), builder.constant("uint8", 1), body, "cond",
                             [{"bodyInput": "x", "value": x}], [{"bodyOutput": "y"}])
        with pytest.raises(TypeError):
            builder.loop(builder.constant("int32", 2), builder.constant("uint8", 1), x, "cond", [], [])
        other_builder = webnn_py.MLGraphBuilder(context)
        with pytest.raises(TypeError, match="another MLGraphBuilder"):
            builder.loop(other_builder.constant("int32", 2), builder.constant("uint8", 1), destroyed, "cond", [], [])
        context.destroy()
        other.destroy()

    asyncio.run(go())


def test_max_iterations_is_enforce_range():
    async def go():
        context = await webnn_py.ml.createContext()
        body = await _body(context, simple_body)
        builder = webnn_py.MLGraphBuilder(context)
        x = builder.input("x", F32)
        with pytest.raises((TypeError, OverflowError, ValueError)):
            builder.loop(builder.constant("int32", 2), builder.constant("uint8", 1), body, "cond",
                         [{"bodyInput": "x", "value": x}], [{"bodyOutput": "y"}], {"maxIterations": -1})
        context.destroy()

    asyncio.run(go())


def test_op_support_limits_reports_loop():
    async def go():
        context = await webnn_py.ml.createContext()
        limits = context.opSupportLimits()["loop"]
        context.destroy()
        return limits

    limits = asyncio.run(go())
    assert limits["tripCount"] == {"dataTypes": ["int32", "int64"], "rankRange": {"min": 0, "max": 1}}
    assert limits["executionCondition"] == {"dataTypes": ["uint8"], "rankRange": {"min": 0, "max": 1}}
