"""The StableHLO operators of the TFLite schema (webnn_py/loader/tflite/ops_stablehlo.py).
LiteRT has kernels for AND (and ADD, MULTIPLY, MAXIMUM, MINIMUM: test_ops_breadth.py)
only, so the others are compared with numpy, following the StableHLO specification."""
from __future__ import annotations

import numpy as np
import pytest

from webnn_py.base.errors import NotSupportedError

from .helpers import litert_run, webnn_run
from .tflite_writer import ModelWriter, options

RNG = np.random.default_rng(209)
F32, I32, BOOL = np.float32, np.int32, np.bool_


def rand(*shape, low=-2.0, high=2.0):
    return RNG.uniform(low, high, shape).astype(F32)


def model(code, inputs, out_shape, out_dtype=F32, opts=None, consts=()):
    """One operator on runtime inputs x0, x1, … (then constants); output y."""
    w = ModelWriter()
    g = w.subgraph()
    ins = [g.tensor(v.shape, v.dtype, name=f"x{i}") for i, v in enumerate(inputs)]
    y = g.tensor(out_shape, out_dtype, name="y")
    g.op(code, ins + [g.const(c) for c in consts], [y], opts)
    g.io(ins, [y])
    return w.finish(), {f"x{i}": v for i, v in enumerate(inputs)}


def ours(model_and_inputs):
    data, inputs = model_and_inputs
    return webnn_run(data, inputs)["y"]


UNARY = {
    "STABLEHLO_ABS": np.abs, "STABLEHLO_NEGATE": np.negative, "STABLEHLO_EXPONENTIAL": np.exp,
    "STABLEHLO_LOG": np.log, "STABLEHLO_LOGISTIC": lambda x: 1 / (1 + np.exp(-x)), "STABLEHLO_TANH": np.tanh,
    "STABLEHLO_COSINE": np.cos, "STABLEHLO_FLOOR": np.floor, "STABLEHLO_RSQRT": lambda x: 1 / np.sqrt(x),
    "STABLEHLO_CBRT": np.cbrt,
}


@pytest.mark.parametrize("code", sorted(UNARY))
def test_unary(code):
    x = rand(3, 7, low=0.1 if code in ("STABLEHLO_LOG", "STABLEHLO_RSQRT") else -3.0, high=3.0)
    expected = UNARY[code](x.astype(np.float64))
    np.testing.assert_allclose(ours(model(code, [x], x.shape)), expected, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [F32, I32])
def test_divide_and_remainder_truncate(dtype):
    a = (rand(40, low=-20, high=20)).astype(dtype)
    b = np.where(RNG.random(40) < 0.5, -1, 1).astype(dtype) * RNG.integers(1, 7, 40).astype(dtype)
    quotient = ours(model("STABLEHLO_DIVIDE", [a, b], [40], dtype))
    remainder = ours(model("STABLEHLO_REMAINDER", [a, b], [40], dtype))
    if dtype == I32:
        np.testing.assert_array_equal(quotient, np.fix(a / b).astype(I32))
        np.testing.assert_array_equal(remainder, np.fmod(a, b))
    else:
        np.testing.assert_allclose(quotient, a / b, rtol=1e-6)
        np.testing.assert_allclose(remainder, np.fmod(a, b), rtol=1e-5, atol=1e-5)


def test_subtract_power_clamp_select():
    a, b = rand(4, 5), rand(4, 5)
    np.testing.assert_array_equal(ours(model("STABLEHLO_SUBTRACT", [a, b], [4, 5])), a - b)
    base = rand(4, 5, low=0.2, high=3)
    np.testing.assert_allclose(ours(model("STABLEHLO_POWER", [base, b], [4, 5])), base.astype(np.float64) ** b,
                               rtol=2e-6)
    low, high = np.array(-0.5, F32), np.array(0.75, F32)
    np.testing.assert_array_equal(ours(model("STABLEHLO_CLAMP", [low, a, high], [4, 5])), np.clip(a, low, high))


def _bool_model(code, out_shape):
    """GREATER(x0, 0) and GREATER(x1, 0) -> the operator -> CAST to int32 (booleans in, booleans out)."""
    w = ModelWriter()
    g = w.subgraph()
    xs = [g.tensor([3, 4], F32, name=f"x{i}") for i in range(2)]
    flags = []
    for x in xs:
        f = g.tensor([3, 4], BOOL)
        g.op("GREATER", [x, g.const(np.array(0.0, F32))], [f])
        flags.append(f)
    result, y = g.tensor(out_shape, BOOL), g.tensor(out_shape, I32, name="y")
    g.op(code, flags, [result])
    g.op("CAST", [result], [y])
    g.io(xs, [y])
    return w.finish()


def test_and_on_booleans_matches_litert_and_or_numpy():
    a, b = rand(3, 4), rand(3, 4)
    data = _bool_model("STABLEHLO_AND", [3, 4])
    reference = litert_run(data, {"x0": a, "x1": b})["y"]
    got = webnn_run(data, {"x0": a, "x1": b})["y"]
    np.testing.assert_array_equal(got, reference)
    np.testing.assert_array_equal(got, ((a > 0) & (b > 0)).astype(I32))
    got = webnn_run(_bool_model("STABLEHLO_OR", [3, 4]), {"x0": a, "x1": b})["y"]
    np.testing.assert_array_equal(got, ((a > 0) | (b > 0)).astype(I32))


def test_and_on_integers_is_bitwise_and_refused():
    a = np.array([6, 3], I32)
    with pytest.raises(NotSupportedError, match="STABLEHLO_AND.*bitwise"):
        ours(model("STABLEHLO_AND", [a, a], [2], I32))


def test_select():
    """select(x0 > 0, x0, x1)."""
    w = ModelWriter()
    g = w.subgraph()
    a, b = g.tensor([3, 4], F32, name="x0"), g.tensor([3, 4], F32, name="x1")
    flag = g.tensor([3, 4], BOOL)
    g.op("GREATER", [a, g.const(np.array(0.0, F32))], [flag])
    y = g.tensor([3, 4], F32, name="y")
    g.op("STABLEHLO_SELECT", [flag, a, b], [y])
    g.io([a, b], [y])
    x0, x1 = rand(3, 4), rand(3, 4)
    np.testing.assert_array_equal(webnn_run(w.finish(), {"x0": x0, "x1": x1})["y"], np.where(x0 > 0, x0, x1))


@pytest.mark.parametrize("direction,reference", [(0, np.equal), (1, np.not_equal), (2, np.greater_equal),
                                                 (3, np.greater), (4, np.less_equal), (5, np.less)])
def test_compare(direction, reference):
    a = RNG.integers(-3, 3, (4, 6)).astype(I32)
    b = RNG.integers(-3, 3, (4, 6)).astype(I32)
    w = ModelWriter()
    g = w.subgraph()
    xa, xb = g.tensor(a.shape, I32, name="x0"), g.tensor(b.shape, I32, name="x1")
    flag, y = g.tensor(a.shape, BOOL), g.tensor(a.shape, I32, name="y")
    g.op("STABLEHLO_COMPARE", [xa, xb], [flag], options("StablehloCompareOptions", comparisonDirection=direction))
    g.op("CAST", [flag], [y])
    g.io([xa, xb], [y])
    np.testing.assert_array_equal(webnn_run(w.finish(), {"x0": a, "x1": b})["y"], reference(a, b).astype(I32))


def test_convert_reshape_transpose_concatenate_slice():
    x = rand(2, 3, 4, low=-5, high=5)
    np.testing.assert_array_equal(ours(model("STABLEHLO_CONVERT", [x], x.shape, I32)), np.trunc(x).astype(I32))
    np.testing.assert_array_equal(ours(model("STABLEHLO_RESHAPE", [x], [4, 6])), x.reshape(4, 6))
    np.testing.assert_array_equal(
        ours(model("STABLEHLO_TRANSPOSE", [x], [4, 2, 3], opts=options("StablehloTransposeOptions",
                                                                      permutation=[2, 0, 1]))),
        x.transpose(2, 0, 1))
    y = rand(2, 1, 4)
    np.testing.assert_array_equal(
        ours(model("STABLEHLO_CONCATENATE", [x, y], [2, 4, 4], opts=options("StablehloConcatenateOptions",
                                                                           dimension=1))),
        np.concatenate([x, y], 1))
    np.testing.assert_array_equal(
        ours(model("STABLEHLO_SLICE", [x], [1, 2, 2], opts=options("StablehloSliceOptions", startIndices=[1, 0, 1],
                                                                  limitIndices=[2, 3, 4], strides=[1, 2, 2]))),
        x[1:2, 0:3:2, 1:4:2])


@pytest.mark.parametrize("dims,out", [([1], [3, 4]), ([0, 2], [4, 5, 6]), ([2, 0], [6, 5, 4])])
def test_broadcast_in_dim(dims, out):
    x = rand(*[out[d] for d in dims])
    expected_shape = [1] * len(out)
    order = np.argsort(dims)
    for i in order:
        expected_shape[dims[i]] = x.shape[i]
    expected = np.broadcast_to(x.transpose(order).reshape(expected_shape), out)
    got = ours(model("STABLEHLO_BROADCAST_IN_DIM", [x], out,
                     opts=options("StablehloBroadcastInDimOptions", broadcastDimensions=dims)))
    np.testing.assert_array_equal(got, expected)


def test_iota():
    x = rand(3, 4)
    w = ModelWriter()
    g = w.subgraph()
    xi = g.tensor([3, 4], F32, name="x0")
    ramp, y = g.tensor([3, 4], F32), g.tensor([3, 4], F32, name="y")
    g.op("STABLEHLO_IOTA", [], [ramp], options("StablehloIotaOptions", iotaDimension=1))
    g.op("ADD", [xi, ramp], [y], options("AddOptions"))
    g.io([xi], [y])
    np.testing.assert_array_equal(webnn_run(w.finish(), {"x0": x})["y"], x + np.arange(4, dtype=F32))


@pytest.mark.parametrize("start", [[1, 2], [-4, 9], [0, 0]])
def test_dynamic_slice_and_update_clamp_their_starts(start):
    x, update = rand(5, 6), rand(2, 3)
    starts = [np.array(s, I32) for s in start]
    clamped = [min(max(s, 0), d - u) for s, d, u in zip(start, x.shape, update.shape)]
    window = tuple(slice(c, c + u) for c, u in zip(clamped, update.shape))
    got = ours(model("STABLEHLO_DYNAMIC_SLICE", [x, *starts], [2, 3],
                     opts=options("StablehloDynamicSliceOptions", sliceSizes=[2, 3])))
    np.testing.assert_array_equal(got, x[window])
    expected = x.copy()
    expected[window] = update
    np.testing.assert_array_equal(ours(model("STABLEHLO_DYNAMIC_UPDATE_SLICE", [x, update, *starts], [5, 6])),
                                  expected)


def _gather_model(operand, indices, out_shape, **numbers):
    w = ModelWriter()
    g = w.subgraph()
    x = g.tensor(operand.shape, F32, name="x0")
    i = g.tensor(indices.shape, I32, name="x1")
    y = g.tensor(out_shape, F32, name="y")
    g.op("STABLEHLO_GATHER", [x, i], [y], options("StablehloGatherOptions", **numbers))
    g.io([x, i], [y])
    return w.finish(), {"x0": operand, "x1": indices}


@pytest.mark.parametrize("case", ["rows", "windows_clamped", "vector_dim_first", "scalar_indices"])
def test_gather_matches_litert(case):
    """StableHLO gather as litert-torch leaves it in a model: rows of a table, windows
    whose starts need clamping, the index vector on the first axis, scalar indices."""
    if case == "rows":
        operand, indices = rand(5, 4), np.array([[3], [0], [4]], I32)
        args = ([3, 4], dict(offsetDims=[1], collapsedSliceDims=[0], startIndexMap=[0], indexVectorDim=1,
                             sliceSizes=[1, 4]))
    elif case == "windows_clamped":
        operand, indices = rand(4, 5, 6), np.array([[1, 2], [3, 9], [-2, 0]], I32)
        args = ([3, 3, 2], dict(offsetDims=[1, 2], collapsedSliceDims=[0], startIndexMap=[0, 2], indexVectorDim=1,
                                sliceSizes=[1, 3, 2]))
    elif case == "vector_dim_first":
        operand, indices = rand(6, 7), np.array([[1, 4, 2], [0, 3, 5]], I32)       # [K=2, batch=3]
        args = ([2, 3, 3], dict(offsetDims=[0, 2], collapsedSliceDims=[], startIndexMap=[0, 1], indexVectorDim=0,
                                sliceSizes=[2, 3]))
    else:
        operand, indices = rand(5, 3), np.array([4, 1], I32)
        args = ([2, 3], dict(offsetDims=[1], collapsedSliceDims=[0], startIndexMap=[0], indexVectorDim=1,
                             sliceSizes=[1, 3]))
    model, inputs = _gather_model(operand, indices, args[0], **args[1])
    reference = litert_run(model, inputs)["y"]
    np.testing.assert_array_equal(webnn_run(model, inputs)["y"], reference)
