"""TFLite WHILE, translated onto builder.loop (webnn_py/loader/tflite/ops_control.py),
on models written with LiteRT's own schema classes and compared with the LiteRT
interpreter: integers exactly, floats within 1e-5 (relative_error, the loader
tests' measure). Plus the comparison/logical/select operators a loop condition
uses, and the error paths (bad subgraph indices, recursion, shape-changing loop
variables, runaway loops, hostile nesting)."""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import numpy as np
import pytest

from webnn_py.base.errors import DataError, NotSupportedError
from webnn_py.loader.tflite.importer import MAX_NESTING, OPERATOR_BUDGET_FACTOR, OPERATOR_BUDGET_MIN
from webnn_py.loader.tflite.schema import parse

from .helpers import litert_run, relative_error, webnn_run
from .tflite_writer import ModelWriter, options

RNG = np.random.default_rng(77)
I32, I64, F32, BOOL = np.int32, np.int64, np.float32, np.bool_


def while_model(variables, cond, body, signature=False):
    """A model whose main graph is one WHILE.

    `variables`: (name, shape, dtype, initial) per loop variable; initial None
    makes it a model input named `name`, else a constant. `cond(g, ins)` returns
    the cond subgraph's boolean output tensor, `body(g, ins)` the body's output
    tensors (both get their subgraph writer and input tensor indices). The
    WHILE's outputs are the model outputs `out_<name>`."""
    w = ModelWriter()
    main = w.subgraph("main")
    c = w.subgraph("cond")
    b = w.subgraph("body")
    ins, model_inputs = [], []
    for name, shape, dtype, initial in variables:
        if initial is None:
            ins.append(main.tensor(shape, dtype, name=name))
            model_inputs.append(ins[-1])
        else:
            ins.append(main.const(np.asarray(initial, dtype).reshape(shape), name=name))
    outs = [main.tensor(shape, dtype, name=f"out_{name}") for name, shape, dtype, _ in variables]
    main.op("WHILE", ins, outs, options("WhileOptions", condSubgraphIndex=c.index, bodySubgraphIndex=b.index))
    main.io(model_inputs, outs)
    for g, make in ((c, cond), (b, body)):
        g_ins = [g.tensor(shape, dtype, name=f"{name}_in") for name, shape, dtype, _ in variables]
        result = make(g, g_ins)
        g.io(g_ins, [result] if isinstance(result, int) else result)
    if signature:
        w.signature("serving_default", 0, {n: i for n, i in zip([v[0] for v in variables], ins) if i in model_inputs},
                    {f"out_{v[0]}": o for v, o in zip(variables, outs)})
    return w.finish()


def compare(model: bytes, inputs: dict):
    """Our outputs against LiteRT's: integer (and boolean) outputs exactly, floats within 1e-5."""
    reference = litert_run(model, inputs)
    ours = webnn_run(model, inputs)
    assert set(ours) == set(reference)
    for name, expected in reference.items():
        got = ours[name]
        assert got.shape == expected.shape, (name, got.shape, expected.shape)
        if expected.dtype == np.bool_:
            assert got.dtype == np.uint8 and set(np.unique(got)) <= {0, 1}, (name, got)
            np.testing.assert_array_equal(got.astype(bool), expected, err_msg=name)
        elif np.issubdtype(expected.dtype, np.integer):
            assert got.dtype == expected.dtype, (name, got.dtype, expected.dtype)
            np.testing.assert_array_equal(got, expected, err_msg=name)
        else:
            error = relative_error(got, expected)
            assert error <= 1e-5, f"output {name}: relative error {error:.3g}"
    return ours, reference


def binary(g, code, a, b, shape, dtype, opts=None):
    out = g.tensor(shape, dtype)
    g.op(code, [a, b], [out], opts)
    return out


def unary(g, code, a, shape, dtype, opts=None):
    out = g.tensor(shape, dtype)
    g.op(code, [a], [out], opts)
    return out


# -- loops against LiteRT ------------------------------------------------------------------------

def counter_model():
    """i < n: i += 1; n passes through the body unchanged (the body's output is its input tensor)."""
    return while_model(
        [("i", [], I32, None), ("n", [], I32, None)],
        cond=lambda g, v: binary(g, "LESS", v[0], v[1], [], BOOL),
        body=lambda g, v: [binary(g, "ADD", v[0], g.const(np.array(1, I32)), [], I32), v[1]])


@pytest.mark.parametrize("start,n", [(0, 7), (3, 4), (-5, 20)])
def test_counter_loop(start, n):
    ours, reference = compare(counter_model(), {"i": np.array(start, I32), "n": np.array(n, I32)})
    assert int(reference["out_i"]) == n             # the reference itself ran the loop
    assert int(ours["out_n"]) == n


def test_zero_iterations_give_the_initial_values():
    ours, reference = compare(counter_model(), {"i": np.array(10, I32), "n": np.array(3, I32)})
    assert int(reference["out_i"]) == 10 and int(ours["out_i"]) == 10


def accumulate_model(a, b, limit):
    """x = x * a + b while sum(x) < limit, x a float32 [2, 3] tensor."""
    def cond(g, v):
        total = g.tensor([], F32)
        g.op("SUM", [v[0], g.const(np.array([0, 1], I32))], [total], options("ReducerOptions", keepDims=False))
        return binary(g, "LESS", total, g.const(np.array(limit, F32)), [], BOOL)

    def body(g, v):
        scaled = binary(g, "MUL", v[0], g.const(np.asarray(a, F32)), [2, 3], F32)
        return [binary(g, "ADD", scaled, g.const(np.asarray(b, F32)), [2, 3], F32)]

    return while_model([("x", [2, 3], F32, None)], cond, body)


@pytest.mark.parametrize("limit", [50.0, 1000.0, -1.0])
def test_accumulating_float_tensor(limit):
    a = RNG.uniform(1.05, 1.3, (2, 3)).astype(F32)
    b = RNG.uniform(0.1, 0.5, (3,)).astype(F32)          # broadcast against x
    x = RNG.uniform(0.0, 1.0, (2, 3)).astype(F32)
    ours, reference = compare(accumulate_model(a, b, limit), {"x": x})
    if limit < 0:
        np.testing.assert_array_equal(ours["out_x"], x)   # zero iterations: x unchanged
    else:
        assert reference["out_x"].sum() >= limit > x.sum()


def test_subgraph_tensors_declared_without_shapes():
    """TF's converter writes cond/body tensors as unranked (tensor<*xf32>, shape []
    in the file); LiteRT resizes them to the values the WHILE passes in, and so do we."""
    w = ModelWriter()
    main, c, b = w.subgraph("main"), w.subgraph("cond"), w.subgraph("body")
    x = main.tensor([2, 3], F32, name="x")
    out = main.tensor([2, 3], F32, name="out_x")
    main.op("WHILE", [x], [out], options("WhileOptions", condSubgraphIndex=c.index, bodySubgraphIndex=b.index))
    main.io([x], [out])
    v = c.tensor([], F32)
    total = c.tensor([], F32)
    c.op("SUM", [v, c.const(np.array([0, 1], I32))], [total], options("ReducerOptions", keepDims=False))
    c.io([v], [binary(c, "LESS", total, c.const(np.array(30, F32)), [], BOOL)])
    v = b.tensor([], F32)
    b.io([v], [binary(b, "ADD", binary(b, "MUL", v, b.const(np.array(1.5, F32)), [], F32),
                      b.const(np.array([1, 2, 3], F32)), [], F32)])
    ours, reference = compare(w.finish(), {"x": RNG.uniform(0, 1, (2, 3)).astype(F32)})
    assert reference["out_x"].sum() >= 30


def mixed_types_model():
    """i (int32) counts to n; acc (int64) += i; x (float32 [4]) = x * 0.5 + float(i);
    flag (bool, a constant initially true) toggles each iteration; n is a loop
    variable that stays constant."""
    def cond(g, v):
        return binary(g, "LESS", v[0], v[4], [], BOOL)

    def body(g, v):
        i, acc, x, flag, n = v
        i_next = binary(g, "ADD", i, g.const(np.array(1, I32)), [], I32)
        i64 = unary(g, "CAST", i, [], I64)
        acc_next = binary(g, "ADD", acc, i64, [], I64)
        fi = unary(g, "CAST", i, [], F32)
        half = binary(g, "MUL", x, g.const(np.array([0.5], F32)), [4], F32)
        x_next = binary(g, "ADD", half, fi, [4], F32)
        flag_next = unary(g, "LOGICAL_NOT", flag, [], BOOL)
        return [i_next, acc_next, x_next, flag_next, n]

    return while_model([("i", [], I32, None), ("acc", [], I64, None), ("x", [4], F32, None),
                        ("flag", [], BOOL, True), ("n", [], I32, None)], cond, body)


@pytest.mark.parametrize("n", [0, 1, 6])
def test_several_variables_of_different_types(n):
    x = RNG.uniform(-2, 2, (4,)).astype(F32)
    ours, reference = compare(mixed_types_model(), {"i": np.array(0, I32), "acc": np.array(2**40, I64), "x": x,
                                                    "n": np.array(n, I32)})
    assert int(ours["out_acc"]) == 2**40 + n * (n - 1) // 2       # int64 beyond int32's range
    assert bool(reference["out_flag"]) == (n % 2 == 0)


def rnn_model(steps: int, w, bias, c):
    """An RNN-like body: h = tanh(FULLY_CONNECTED(h) + x * c), t += 1;
    cond: t < steps and max(h) < 0.9 (LESS, REDUCE_MAX, LOGICAL_AND)."""
    def cond(g, v):
        t, h, _x = v
        more = binary(g, "LESS", t, g.const(np.array(steps, I32)), [], BOOL)
        peak = g.tensor([], F32)
        g.op("REDUCE_MAX", [h, g.const(np.array([0, 1], I32))], [peak], options("ReducerOptions", keepDims=False))
        small = binary(g, "LESS", peak, g.const(np.array(0.9, F32)), [], BOOL)
        return binary(g, "LOGICAL_AND", more, small, [], BOOL)

    def body(g, v):
        t, h, x = v
        fc = g.tensor([1, 4], F32)
        g.op("FULLY_CONNECTED", [h, g.const(w), g.const(bias)], [fc],
             options("FullyConnectedOptions", fusedActivationFunction=0, keepNumDims=False))
        drive = binary(g, "MUL", x, g.const(np.asarray(c, F32)), [1, 4], F32)
        pre = binary(g, "ADD", fc, drive, [1, 4], F32)
        h_next = unary(g, "TANH", pre, [1, 4], F32)
        return [binary(g, "ADD", t, g.const(np.array(1, I32)), [], I32), h_next, x]

    return while_model([("t", [], I32, 0), ("h", [1, 4], F32, None), ("x", [1, 4], F32, None)], cond, body)


@pytest.mark.parametrize("steps", [5, 40])
def test_body_with_fully_connected_tanh_and_a_compound_condition(steps):
    w = RNG.uniform(-0.6, 0.6, (4, 4)).astype(F32)
    bias = RNG.uniform(-0.1, 0.1, (4,)).astype(F32)
    h = RNG.uniform(-0.5, 0.5, (1, 4)).astype(F32)
    x = RNG.uniform(-0.5, 0.5, (1, 4)).astype(F32)
    ours, reference = compare(rnn_model(steps, w, bias, 0.7), {"h": h, "x": x})
    assert 0 < int(reference["out_t"]) <= steps


def test_variable_the_body_never_reads():
    """y's next value depends only on i, so y is no input of the body graph: after
    zero iterations it must still be its initial value, after some i * 3."""
    model = while_model(
        [("i", [], I32, None), ("n", [], I32, None), ("y", [2], F32, None)],
        cond=lambda g, v: binary(g, "LESS", v[0], v[1], [], BOOL),
        body=lambda g, v: [binary(g, "ADD", v[0], g.const(np.array(1, I32)), [], I32), v[1],
                           binary(g, "MUL", unary(g, "CAST", v[0], [], F32), g.const(np.array([3, -3], F32)),
                                  [2], F32)])
    y = np.array([7.5, -1.25], F32)
    for n in (0, 4):
        ours, _ = compare(model, {"i": np.array(0, I32), "n": np.array(n, I32), "y": y})
        np.testing.assert_array_equal(ours["out_y"], y if n == 0 else np.array([9, -9], F32))


def test_nested_while():
    """acc += sum(range(i)) for i in range(n), with the inner sum a WHILE in the outer body."""
    w = ModelWriter()
    main, oc, ob, ic, ib = (w.subgraph(n) for n in ("main", "outer_cond", "outer_body", "inner_cond", "inner_body"))
    scalar = lambda g, name: g.tensor([], I32, name=name)  # noqa: E731
    # main: (i, n, acc) -> WHILE(outer)
    i0, n0, acc0 = scalar(main, "i"), scalar(main, "n"), scalar(main, "acc")
    outs = [scalar(main, f"out_{k}") for k in ("i", "n", "acc")]
    main.op("WHILE", [i0, n0, acc0], outs, options("WhileOptions", condSubgraphIndex=oc.index,
                                                   bodySubgraphIndex=ob.index))
    main.io([i0, n0, acc0], outs)
    # outer cond: i < n
    v = [scalar(oc, k) for k in "ina"]
    oc.io(v, [binary(oc, "LESS", v[0], v[1], [], BOOL)])
    # outer body: (j, acc) = WHILE(inner)(0, acc) with bound i; i += 1
    v = [scalar(ob, k) for k in "ina"]
    j0 = ob.const(np.array(0, I32))
    inner_outs = [scalar(ob, k) for k in ("j_out", "i_out", "acc_out")]
    ob.op("WHILE", [j0, v[0], v[2]], inner_outs, options("WhileOptions", condSubgraphIndex=ic.index,
                                                        bodySubgraphIndex=ib.index))
    ob.io(v, [binary(ob, "ADD", v[0], ob.const(np.array(1, I32)), [], I32), v[1], inner_outs[2]])
    # inner cond: j < i; inner body: acc += j, j += 1
    v = [scalar(ic, k) for k in "jia"]
    ic.io(v, [binary(ic, "LESS", v[0], v[1], [], BOOL)])
    v = [scalar(ib, k) for k in "jia"]
    ib.io(v, [binary(ib, "ADD", v[0], ib.const(np.array(1, I32)), [], I32), v[1],
              binary(ib, "ADD", v[2], v[0], [], I32)])
    model = w.finish()
    for n in (0, 1, 6):
        ours, _ = compare(model, {"i": np.array(0, I32), "n": np.array(n, I32), "acc": np.array(100, I32)})
        assert int(ours["out_acc"]) == 100 + sum(sum(range(i)) for i in range(n))


def test_with_a_signature():
    """The signature's subgraph is the main graph; cond and body are only reached through WHILE."""
    model = while_model(
        [("i", [], I32, None), ("n", [], I32, None)],
        cond=lambda g, v: binary(g, "LESS", v[0], v[1], [], BOOL),
        body=lambda g, v: [binary(g, "ADD", v[0], g.const(np.array(2, I32)), [], I32), v[1]], signature=True)
    ours = webnn_run(model, {"i": np.array(1, I32), "n": np.array(8, I32)}, signature="serving_default")
    assert int(ours["out_i"]) == 9 and int(ours["out_n"]) == 8


def test_subgraphs_no_while_calls_are_not_translated():
    """A subgraph nothing calls (here with an operator we do not translate) is ignored:
    only the main graph and what its WHILEs call are translated."""
    w = ModelWriter()
    main = w.subgraph("main")
    c, b = counting_subgraphs(w, limit=5)
    unused = w.subgraph("unused")
    u = unused.tensor([2], F32)
    parts = [unused.tensor([], F32), unused.tensor([], F32)]
    unused.op("UNPACK", [u], parts, options("UnpackOptions", num=2, axis=0))
    unused.io([u], parts)
    simple_while(w, main, c.index, b.index)
    model = w.finish()
    assert int(litert_run(model, {})["out0"]) == 5
    assert int(webnn_run(model, {})["out0"]) == 5


# -- IF (the other control-flow operator) --------------------------------------------------------

def if_model(then_body, else_body, shape=(2, 3)):
    """y = then(x) if sum(x) > 0 else else(x); each branch gets (x, its subgraph writer)."""
    w = ModelWriter()
    main, t, e = w.subgraph("main"), w.subgraph("then"), w.subgraph("else")
    x = main.tensor(list(shape), F32, name="x")
    total = main.tensor([], F32)
    main.op("SUM", [x, main.const(np.arange(len(shape), dtype=I32))], [total], options("ReducerOptions", keepDims=False))
    flag = binary(main, "GREATER", total, main.const(np.array(0, F32)), [], BOOL)
    y = main.tensor(list(shape), F32, name="y")
    main.op("IF", [flag, x], [y], options("IfOptions", thenSubgraphIndex=t.index, elseSubgraphIndex=e.index))
    main.io([x], [y])
    for g, make in ((t, then_body), (e, else_body)):
        v = g.tensor(list(shape), F32)
        g.io([v], [make(g, v)])
    return w


@pytest.mark.parametrize("sign", [1, -1])
def test_if_takes_the_right_branch(sign):
    w = if_model(lambda g, v: binary(g, "MUL", v, g.const(np.array(2, F32)), [2, 3], F32),
                 lambda g, v: unary(g, "TANH", binary(g, "SUB", v, g.const(np.array(1, F32)), [2, 3], F32), [2, 3], F32))
    x = (sign * RNG.uniform(0.1, 1, (2, 3))).astype(F32)
    ours, _ = compare(w.finish(), {"x": x})
    expected = x * 2 if sign > 0 else np.tanh(x - 1)
    np.testing.assert_allclose(ours["y"], expected, rtol=1e-6, atol=1e-6)


def test_if_does_not_run_the_branch_not_taken():
    """The else branch is a WHILE that never ends; with sum(x) > 0 it is not taken,
    so LiteRT returns at once, and so must we (maxIterations would stop it with an
    OperationError if it ran)."""
    w = ModelWriter()
    main, t, e = w.subgraph("main"), w.subgraph("then"), w.subgraph("else")
    x = main.tensor([2], F32, name="x")
    total = main.tensor([], F32)
    main.op("SUM", [x, main.const(np.array([0], I32))], [total], options("ReducerOptions", keepDims=False))
    flag = binary(main, "GREATER", total, main.const(np.array(0, F32)), [], BOOL)
    y = main.tensor([2], F32, name="y")
    main.op("IF", [flag, x], [y], options("IfOptions", thenSubgraphIndex=t.index, elseSubgraphIndex=e.index))
    main.io([x], [y])
    v = t.tensor([2], F32)
    t.io([v], [binary(t, "ADD", v, t.const(np.array([10, 20], F32)), [2], F32)])
    forever = w.subgraph("forever")
    v = forever.tensor([2], F32)
    forever.io([v], [binary(forever, "GREATER_EQUAL", forever.const(np.array(1, F32)), forever.const(np.array(0, F32)),
                            [], BOOL)])
    step = w.subgraph("step")
    v = step.tensor([2], F32)
    step.io([v], [binary(step, "ADD", v, step.const(np.array([1, 1], F32)), [2], F32)])
    v = e.tensor([2], F32)
    out = e.tensor([2], F32)
    e.op("WHILE", [v], [out], options("WhileOptions", condSubgraphIndex=forever.index, bodySubgraphIndex=step.index))
    e.io([v], [out])
    model = w.finish()
    x0 = np.array([1.5, -0.5], F32)
    ours, _ = compare(model, {"x": x0})
    np.testing.assert_array_equal(ours["y"], x0 + np.array([10, 20], F32))


def test_if_inside_a_while_body():
    """while i < n: acc = acc + i if i < k else acc - 1; i += 1 (IF on loop variables)."""
    w = ModelWriter()
    main, c, b, t, e = (w.subgraph(n) for n in ("main", "cond", "body", "then", "else"))
    names = ("i", "n", "k", "acc")
    ins = [main.tensor([], I32, name=n) for n in names]
    outs = [main.tensor([], I32, name=f"out_{n}") for n in names]
    main.op("WHILE", ins, outs, options("WhileOptions", condSubgraphIndex=c.index, bodySubgraphIndex=b.index))
    main.io(ins, outs)
    v = [c.tensor([], I32) for _ in names]
    c.io(v, [binary(c, "LESS", v[0], v[1], [], BOOL)])
    v = [b.tensor([], I32) for _ in names]
    below = binary(b, "LESS", v[0], v[2], [], BOOL)
    acc = b.tensor([], I32)
    b.op("IF", [below, v[3], v[0]], [acc], options("IfOptions", thenSubgraphIndex=t.index, elseSubgraphIndex=e.index))
    b.io(v, [binary(b, "ADD", v[0], b.const(np.array(1, I32)), [], I32), v[1], v[2], acc])
    v = [t.tensor([], I32), t.tensor([], I32)]
    t.io(v, [binary(t, "ADD", v[0], v[1], [], I32)])
    v = [e.tensor([], I32), e.tensor([], I32)]
    e.io(v, [binary(e, "SUB", v[0], e.const(np.array(1, I32)), [], I32)])
    model = w.finish()
    for n, k in ((0, 3), (8, 3), (5, 10)):
        feeds = {"i": np.array(0, I32), "n": np.array(n, I32), "k": np.array(k, I32), "acc": np.array(0, I32)}
        ours, _ = compare(model, feeds)
        assert int(ours["out_acc"]) == sum(i if i < k else -1 for i in range(n))


def test_if_branches_of_different_shapes():
    w = ModelWriter()
    main, t, e = w.subgraph("main"), w.subgraph("then"), w.subgraph("else")
    flag = main.const(np.array(True))
    x = main.const(np.array([1, 2], F32))
    y = main.tensor([2], F32, name="y")
    main.op("IF", [flag, x], [y], options("IfOptions", thenSubgraphIndex=t.index, elseSubgraphIndex=e.index))
    main.io([], [y])
    v = t.tensor([2], F32)
    t.io([v], [binary(t, "ADD", v, v, [2], F32)])
    v = e.tensor([2], F32)
    e.io([v], [_concat(e, v)])
    load_error(w.finish(), NotSupportedError, r"operator 0 \(IF\): output 0 \(tensor 'y'\) is float32 \[2\] from "
                                              r"the then branch and float32 \[4\] from the else branch")


def test_if_bad_branch_index():
    w = if_model(lambda g, v: v, lambda g, v: v)
    w.model.subgraphs[0].operators[-1].builtinOptions.elseSubgraphIndex = 9
    load_error(w.finish(), DataError, r"operator \d+ \(IF\): its else subgraph index 9 is out of range")


# -- the operators of loop conditions, one at a time, against LiteRT -----------------------------

@pytest.mark.parametrize("code", ["LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL", "EQUAL", "NOT_EQUAL"])
@pytest.mark.parametrize("dtype", [F32, I32])
def test_comparisons(code, dtype):
    w = ModelWriter()
    g = w.subgraph()
    a, b = g.tensor([2, 3], dtype, name="a"), g.tensor([3], dtype, name="b")
    y = g.tensor([2, 3], BOOL, name="y")
    g.op(code, [a, b], [y])
    g.io([a, b], [y])
    va = np.array([[1, 2, 3], [3, 2, 1]], dtype)
    vb = np.array([2, 2, 2], dtype)
    compare(w.finish(), {"a": va, "b": vb})


def bool_model(code, n_inputs, extra_consts=(), shape=(2, 2)):
    """LOGICAL_* / SELECT on constant boolean inputs made from float inputs by comparisons."""
    w = ModelWriter()
    g = w.subgraph()
    xs = [g.tensor(list(shape), F32, name=f"x{k}") for k in range(n_inputs)]
    flags = [binary(g, "GREATER", x, g.const(np.zeros([1], F32)), list(shape), BOOL) for x in xs]
    return w, g, xs, flags


@pytest.mark.parametrize("code", ["LOGICAL_AND", "LOGICAL_OR", "LOGICAL_NOT"])
def test_logical(code):
    w, g, xs, flags = bool_model(code, 2)
    y = g.tensor([2, 2], BOOL, name="y")
    g.op(code, flags if code != "LOGICAL_NOT" else flags[:1], [y])
    g.io(xs, [y])
    compare(w.finish(), {"x0": np.array([[1, -1], [1, -1]], F32), "x1": np.array([[1, 1], [-1, -1]], F32)})


@pytest.mark.parametrize("code,cond_shape", [("SELECT", [2, 3]), ("SELECT", [2]), ("SELECT_V2", [3])])
def test_select(code, cond_shape):
    w = ModelWriter()
    g = w.subgraph()
    c = g.tensor(cond_shape, F32, name="c")
    a, b = g.tensor([2, 3], F32, name="a"), g.tensor([2, 3], F32, name="b")
    flag = binary(g, "GREATER", c, g.const(np.zeros([1], F32)), cond_shape, BOOL)
    y = g.tensor([2, 3], F32, name="y")
    g.op(code, [flag, a, b], [y])
    g.io([c, a, b], [y])
    compare(w.finish(), {"c": RNG.uniform(-1, 1, cond_shape).astype(F32), "a": RNG.uniform(-1, 1, (2, 3)).astype(F32),
                         "b": RNG.uniform(-1, 1, (2, 3)).astype(F32)})


@pytest.mark.parametrize("dtype", [F32, I32])
def test_cast_to_bool_and_back(dtype):
    w = ModelWriter()
    g = w.subgraph()
    x = g.tensor([5], dtype, name="x")
    flag = unary(g, "CAST", x, [5], BOOL)
    y = g.tensor([5], F32, name="y")
    g.op("CAST", [flag], [y])
    g.io([x], [y, flag])
    compare(w.finish(), {"x": np.array([0, 2, -3, 0, 0.5 if dtype == F32 else 1], dtype)})


# -- errors --------------------------------------------------------------------------------------

def load_error(model: bytes, kind, match: str):
    with pytest.raises(kind, match=match) as info:
        webnn_run(model, {})
    return info.value


def simple_while(w, main, cond_index, body_index, variables=1):
    ins = [main.const(np.array(0, I32)) for _ in range(variables)]
    outs = [main.tensor([], I32, name=f"out{k}") for k in range(variables)]
    main.op("WHILE", ins, outs, options("WhileOptions", condSubgraphIndex=cond_index, bodySubgraphIndex=body_index))
    main.io([], outs)
    return outs


def counting_subgraphs(w, limit=3):
    """cond: i < limit; body: i + 1 (one int32 variable)."""
    c = w.subgraph("cond")
    i = c.tensor([], I32)
    c.io([i], [binary(c, "LESS", i, c.const(np.array(limit, I32)), [], BOOL)])
    b = w.subgraph("body")
    i = b.tensor([], I32)
    b.io([i], [binary(b, "ADD", i, b.const(np.array(1, I32)), [], I32)])
    return c, b


@pytest.mark.parametrize("cond_index,body_index,role", [(7, 2, "cond"), (1, 9, "body"), (-1, 2, "cond")])
def test_bad_subgraph_index(cond_index, body_index, role):
    w = ModelWriter()
    main = w.subgraph("main")
    counting_subgraphs(w)
    simple_while(w, main, cond_index, body_index)
    load_error(w.finish(), DataError, rf"operator 0 \(WHILE\): its {role} subgraph index -?\d+ is out of range")


def test_self_recursive_while():
    """The body's own operator is a WHILE whose body is that same subgraph."""
    w = ModelWriter()
    main = w.subgraph("main")
    c, _ = counting_subgraphs(w)
    b = w.subgraph("recursive_body")
    i = b.tensor([], I32)
    out = b.tensor([], I32)
    b.op("WHILE", [i], [out], options("WhileOptions", condSubgraphIndex=c.index, bodySubgraphIndex=b.index))
    b.io([i], [out])
    simple_while(w, main, c.index, b.index)
    error = load_error(w.finish(), DataError, "recursively")
    assert f"subgraph {b.index} operator 0 (WHILE)" in str(error) and f"0 -> {b.index} -> {b.index}" in str(error)


def test_while_calling_the_main_graph():
    w = ModelWriter()
    main = w.subgraph("main")
    c, _ = counting_subgraphs(w)
    simple_while(w, main, c.index, 0)
    load_error(w.finish(), DataError, r"its body subgraph 0 .*recursively \(0 -> 0\)")


def test_mutually_recursive_cond():
    """cond calls a WHILE whose cond is the first cond: a cycle through cond subgraphs."""
    w = ModelWriter()
    main = w.subgraph("main")
    c = w.subgraph("cond")
    _, b = counting_subgraphs(w)
    i = c.tensor([], I32)
    j = c.tensor([], I32)
    c.op("WHILE", [i], [j], options("WhileOptions", condSubgraphIndex=c.index, bodySubgraphIndex=b.index))
    c.io([i], [binary(c, "LESS", j, c.const(np.array(3, I32)), [], BOOL)])
    simple_while(w, main, c.index, b.index)
    load_error(w.finish(), DataError, "recursively")


def test_shape_changing_variable():
    """x = concat(x, x): LiteRT runs it with dynamic tensors; WebNN cannot type it."""
    model = while_model(
        [("i", [], I32, None), ("x", [2], F32, None)],
        cond=lambda g, v: binary(g, "LESS", v[0], g.const(np.array(2, I32)), [], BOOL),
        body=lambda g, v: [binary(g, "ADD", v[0], g.const(np.array(1, I32)), [], I32),
                           _concat(g, v[1])])
    reference = litert_run(model, {"i": np.array(0, I32), "x": np.array([1, 2], F32)})
    assert reference["out_x"].shape == (8,)           # LiteRT grows x: [2] -> [4] -> [8]
    with pytest.raises(NotSupportedError, match=r"operator 0 \(WHILE\): loop variable 1 \(tensor 'out_x'\) is "
                                                r"float32 \[2\] before an iteration and float32 \[4\] after it"):
        webnn_run(model, {"i": np.array(0, I32), "x": np.array([1, 2], F32)})


def _concat(g, x):
    out = g.tensor([4], F32)
    g.op("CONCATENATION", [x, x], [out], options("ConcatenationOptions", axis=0))
    return out


def test_cond_output_must_be_boolean():
    w = ModelWriter()
    main = w.subgraph("main")
    _, b = counting_subgraphs(w)
    c = w.subgraph("int_cond")
    i = c.tensor([], I32)
    c.io([i], [binary(c, "SUB", c.const(np.array(3, I32)), i, [], I32)])
    simple_while(w, main, c.index, b.index)
    load_error(w.finish(), DataError, r"its cond subgraph 3's output .* is INT32, not BOOL")


def test_body_output_count_must_match():
    w = ModelWriter()
    main = w.subgraph("main")
    c, b = counting_subgraphs(w)
    simple_while(w, main, c.index, b.index, variables=2)    # the subgraphs take one variable
    load_error(w.finish(), DataError, r"its body subgraph 2 has 1 outputs, it must have 2")


def test_body_input_type_must_match():
    w = ModelWriter()
    main = w.subgraph("main")
    c, b = counting_subgraphs(w)
    x = main.const(np.array(0, F32))
    out = main.tensor([], F32, name="out")
    main.op("WHILE", [x], [out], options("WhileOptions", condSubgraphIndex=c.index, bodySubgraphIndex=b.index))
    main.io([], [out])
    load_error(w.finish(), DataError, r"its cond subgraph 1's input .* is INT32, the value passed to it is float32")


def test_missing_while_options():
    w = ModelWriter()
    main = w.subgraph("main")
    counting_subgraphs(w)
    x = main.const(np.array(0, I32))
    out = main.tensor([], I32, name="out")
    main.op("WHILE", [x], [out])
    main.io([], [out])
    load_error(w.finish(), DataError, "it has no WhileOptions")


def counted_whiles(monkeypatch) -> list:
    """The WHILE operators the importer translates from now on (their indices): a
    structural bound on its work, where a clock would depend on the machine's load."""
    from webnn_py.loader.tflite import builtins
    calls, original = [], builtins.TRANSLATORS["WHILE"]

    def counted(ctx):
        calls.append(ctx.op.index)
        return original(ctx)
    monkeypatch.setitem(builtins.TRANSLATORS, "WHILE", counted)
    return calls


def test_nesting_depth_is_bounded(monkeypatch):
    """30 subgraphs, each a WHILE around the next: refused at 16 levels, quickly."""
    w = ModelWriter()
    main = w.subgraph("main")
    c, _ = counting_subgraphs(w)
    levels = [w.subgraph(f"level{k}") for k in range(30)]
    simple_while(w, main, c.index, levels[0].index)
    for k, g in enumerate(levels):
        i = g.tensor([], I32)
        out = g.tensor([], I32)
        target = levels[k + 1].index if k + 1 < len(levels) else c.index
        g.op("WHILE", [i], [out], options("WhileOptions", condSubgraphIndex=c.index, bodySubgraphIndex=target))
        g.io([i], [out])
    calls = counted_whiles(monkeypatch)
    load_error(w.finish(), NotSupportedError, "subgraphs nest more than 16 deep")
    assert len(calls) <= MAX_NESTING + 1          # one WHILE per level, not 30


def expanding_model() -> bytes:
    """Each level's body holds four WHILEs around the next level: 4**12 expansions."""
    w = ModelWriter()
    main = w.subgraph("main")
    c, leaf = counting_subgraphs(w)
    levels = [w.subgraph(f"level{k}") for k in range(12)]
    simple_while(w, main, c.index, levels[0].index)
    for k, g in enumerate(levels):
        i = g.tensor([], I32)
        x = i
        for _ in range(4):
            y = g.tensor([], I32)
            target = levels[k + 1].index if k + 1 < len(levels) else leaf.index
            g.op("WHILE", [x], [y], options("WhileOptions", condSubgraphIndex=c.index, bodySubgraphIndex=target))
            x = y
        g.io([i], [x])
    return w.finish()


def test_exponential_expansion_is_bounded(monkeypatch):
    """expanding_model(): cut off by the operator budget (linear in the file)
    instead of hanging."""
    model = expanding_model()
    total = sum(len(g.operators) for g in parse(model).subgraphs)
    calls = counted_whiles(monkeypatch)
    load_error(model, NotSupportedError, "expand to too many operators")
    # Cut off by the budget (linear in the file), not after the 4**12 expansions.
    assert len(calls) <= max(OPERATOR_BUDGET_MIN, OPERATOR_BUDGET_FACTOR * total)


# -- a runaway loop ------------------------------------------------------------------------------

def runaway_model():
    """i >= 0: i += 1 -- never false (until int32 overflows, ~2**31 iterations away)."""
    return while_model(
        [("i", [], I32, None)],
        cond=lambda g, v: binary(g, "GREATER_EQUAL", v[0], g.const(np.array(0, I32)), [], BOOL),
        body=lambda g, v: [binary(g, "ADD", v[0], g.const(np.array(1, I32)), [], I32)])


def counted_iterations(monkeypatch, cap: int) -> list:
    """How many times each loop body runs from now on (one count per LoopBody): a
    structural bound on a loop's work, where a clock would depend on the machine's
    load. A body that runs more than `cap` times stops the loop with a RuntimeError
    of the test's own, so a missing limit fails the test instead of hanging it."""
    from webnn_py.runtime.loop import LoopBody
    counts: dict[int, int] = {}
    original = LoopBody.run_loop

    def counted(self, inputs, attributes, outputs):
        plan = self.plan
        execute_iter = plan.execute_iter

        def iteration(feeds, profile=None):
            counts[id(self)] = counts.get(id(self), 0) + 1
            if counts[id(self)] > cap:
                raise RuntimeError(f"the loop body ran more than {cap} times")
            return execute_iter(feeds, profile)
        plan.execute_iter = iteration
        try:
            return (yield from original(self, inputs, attributes, outputs))
        finally:
            del plan.execute_iter
    monkeypatch.setattr(LoopBody, "run_loop", counted)
    return counts


def test_runaway_loop_rejects_compute_with_operation_error(monkeypatch):
    """load(model, {maxIterations: 50}): the loop stops after 50 iterations and
    compute() rejects with OperationError instead of hanging: the body runs
    exactly 50 times (int32 overflow would end it after ~2**31)."""
    from webnn_py import ml
    from webnn_py.loader import MLModelLoader

    async def go():
        context = await ml.createContext()
        model = await MLModelLoader(context).load(runaway_model(), {"maxIterations": 50})
        with pytest.raises(Exception) as info:
            await model.compute({"data": np.array([0], I32), "dimensions": []})
        return info.value

    iterations = counted_iterations(monkeypatch, cap=1000)
    error = asyncio.run(go())
    assert list(iterations.values()) == [50]
    assert getattr(error, "name", None) == "OperationError", repr(error)
    assert "maxIterations (50)" in str(error)
    assert "WHILE" in str(error), str(error)        # the model's operator is named
    for handler in logging.getLogger("webnn_py").handlers:
        # The run's failure is also logged (as every dispatch failure is); it was
        # expected here, so clear it from the suite's guard (tests/conftest.py).
        if type(handler).__name__ == "_FailOnWebNNErrors":
            handler.records.clear()


def test_loop_within_max_iterations_completes():
    """The same limit does not stop a loop that ends in time: counting from 0 to 50
    is 50 iterations, exactly the limit."""
    from webnn_py import ml
    from webnn_py.loader import MLModelLoader

    async def go():
        context = await ml.createContext()
        model = await MLModelLoader(context).load(counter_model(), {"maxIterations": 50})
        return await model.compute({"i": {"data": np.array([0], I32), "dimensions": []},
                                    "n": {"data": np.array([50], I32), "dimensions": []}})

    result = asyncio.run(go())
    assert result["out_i"]["data"].tolist() == [50]


# -- the operator code table ---------------------------------------------------------------------

def test_builtin_operator_codes_match_litert_schema():
    """Every code the importer names (schema.BUILTIN_NAMES) means the same operator
    in LiteRT's generated schema (LOGICAL_NOT..RANGE were once off by one)."""
    from ai_edge_litert import schema_py_generated as schema

    from webnn_py.loader.tflite.schema import BUILTIN_NAMES
    reference = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    wrong = {code: (name, reference.get(code)) for code, name in BUILTIN_NAMES.items() if reference.get(code) != name}
    assert not wrong


def test_reduce_min_in_a_loop_condition():
    """REDUCE_MIN (code 89): loop while min(x) < 1, x = x + 0.25."""
    def cond(g, v):
        low = g.tensor([], F32)
        g.op("REDUCE_MIN", [v[0], g.const(np.array([0], I32))], [low], options("ReducerOptions", keepDims=False))
        return binary(g, "LESS", low, g.const(np.array(1.0, F32)), [], BOOL)

    model = while_model([("x", [3], F32, None)], cond,
                        lambda g, v: [binary(g, "ADD", v[0], g.const(np.array([0.25], F32)), [3], F32)])
    ours, _ = compare(model, {"x": np.array([0.1, 2.0, -0.4], F32)})
    assert ours["out_x"].min() >= 1.0


# -- in headless Chromium, Firefox and WebKit ----------------------------------------------------

def test_while_model_in_the_browser(browser, tmp_path):
    """The accumulating loop through navigator.ml's MLModelLoader (webnn_py on
    Pyodide, where translate() awaits the body graph's build on the WebLoop)
    matches LiteRT on the host."""
    from webnn_py.serve import PolyfillServer

    a = np.full((2, 3), 1.1, F32)
    b = np.array([0.5, 0.25, 0.125], F32)
    model = accumulate_model(a, b, 40.0)
    x = np.arange(6, dtype=F32).reshape(2, 3) / 10
    (tmp_path / "while.tflite").write_bytes(model)
    (tmp_path / "x.bin").write_bytes(x.tobytes())
    reference = litert_run(model, {"x": x})["out_x"]
    pages = Path(__file__).parent / "pages"
    with PolyfillServer(root=pages, mounts={"/models/": tmp_path, "/data/": tmp_path}) as server, \
            browser.new_page() as tab:
        tab.goto(f"{server.url}/loader.html")
        tab.wait_for("window.loaderRun !== undefined")
        result = tab.evaluate('window.loaderRun([{"model": "while.tflite", "input": "x.bin"}])')
        assert not tab.errors, tab.errors
    got = result["while.tflite"]["values"]["out_x"]
    assert got["type"] == "Float32Array" and got["dimensions"] == [2, 3]
    ours = np.asarray(got["data"], F32).reshape(2, 3)
    assert reference.sum() >= 40.0 > x.sum()
    assert relative_error(ours, reference) <= 1e-5


# -- corrupted WHILE models ----------------------------------------------------------------------

@pytest.mark.parametrize("value", [0, 1, 2, 0x7FFFFFFF, 0xFFFFFFFF])
def test_hostile_words_in_a_while_model(value, monkeypatch):
    """Every aligned 32-bit word of a WHILE model (subgraph indices, offsets,
    lengths) replaced by a hostile value: only DataError/NotSupportedError, each
    load within tests/loader/test_fuzz.py's structural bounds (values read,
    operators translated)."""
    import struct

    from .test_fuzz import Meter, assert_clean
    meter = Meter(monkeypatch)
    data = mixed_types_model()
    for position in range(0, len(data) - 3, 4):
        corrupted = bytearray(data)
        struct.pack_into("<I", corrupted, position, value)
        assert_clean(meter, bytes(corrupted), f"u32 {value:#x} at byte {position}")


def test_byte_flips_in_a_while_model(monkeypatch):
    from .test_fuzz import Meter, assert_clean
    meter = Meter(monkeypatch)
    data = counter_model()
    rng = np.random.default_rng(5)
    for position in range(len(data)):
        corrupted = bytearray(data)
        corrupted[position] ^= int(rng.integers(1, 256))
        assert_clean(meter, bytes(corrupted), f"byte {position} flipped")


def test_reshapes_in_a_body_with_unranked_tensors():
    """RESHAPE (-1 inferred), EXPAND_DIMS and SQUEEZE whose outputs are declared
    without a shape, as in converted loop bodies: the shapes follow from their
    parameters (x [2, 3] -> [3, 2] -> [1, 3, 2] -> [3, 2] -> [2, 3], plus 1)."""
    w = ModelWriter()
    main, c, b = w.subgraph("main"), w.subgraph("cond"), w.subgraph("body")
    i, x = main.tensor([], I32, name="i"), main.tensor([2, 3], F32, name="x")
    outs = [main.tensor([], I32, name="out_i"), main.tensor([2, 3], F32, name="out_x")]
    main.op("WHILE", [i, x], outs, options("WhileOptions", condSubgraphIndex=c.index, bodySubgraphIndex=b.index))
    main.io([i, x], outs)
    v = [c.tensor([], I32), c.tensor([], F32)]
    c.io(v, [binary(c, "LESS", v[0], c.const(np.array(3, I32)), [], BOOL)])
    v = [b.tensor([], I32), b.tensor([], F32)]
    r1 = b.tensor([], F32)
    b.op("RESHAPE", [v[1], b.const(np.array([-1, 2], I32))], [r1])
    r2 = b.tensor([], F32)
    b.op("EXPAND_DIMS", [r1, b.const(np.array(0, I32))], [r2])
    r3 = b.tensor([], F32)
    b.op("SQUEEZE", [r2], [r3], options("SqueezeOptions", squeezeDims=[0]))
    r4 = b.tensor([], F32)
    b.op("RESHAPE", [r3], [r4], options("ReshapeOptions", newShape=[2, 3]))
    x_next = binary(b, "ADD", r4, b.const(np.array(1, F32)), [], F32)
    b.io(v, [binary(b, "ADD", v[0], b.const(np.array(1, I32)), [], I32), x_next])
    x0 = RNG.uniform(-1, 1, (2, 3)).astype(F32)
    ours, _ = compare(w.finish(), {"i": np.array(0, I32), "x": x0})
    np.testing.assert_allclose(ours["out_x"], x0 + 3, rtol=0, atol=1e-6)
