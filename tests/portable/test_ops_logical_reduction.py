"""Logical operators and where (§8.9.14, §8.9.56), reductions (§8.9.39),
argMin/argMax (§8.9.5) and cumulativeSum (§8.9.12): hand-computed cases.

Portable: plain async tests, run on host CPython and again inside Pyodide.
"""
import math

import numpy as np

import webnn_py
from webnn_py import MLGraphBuilder

from .expect import assert_close, raises
from .graph import compute

NAN, INF = float("nan"), float("inf")


async def test_comparisons_broadcast_and_nan():
    a = np.array([[1, 2, NAN]], dtype=np.float32)
    b = np.array([[2], [NAN]], dtype=np.float32)
    expected = {
        "equal": [[0, 1, 0], [0, 0, 0]],
        "notEqual": [[1, 0, 1], [1, 1, 1]],
        "greater": [[0, 0, 0], [0, 0, 0]],
        "greaterOrEqual": [[0, 1, 0], [0, 0, 0]],
        "lesser": [[1, 0, 0], [0, 0, 0]],
        "lesserOrEqual": [[1, 1, 0], [0, 0, 0]],
    }
    for op, want in expected.items():
        got = await compute(lambda builder, x: getattr(builder, op)(x["a"], x["b"]), {"a": a, "b": b})
        assert got.dtype == np.uint8 and got.tolist() == want, (op, got.tolist())


async def test_comparison_exact_for_large_int64():
    a = np.array([2**62 + 1, -(2**63)], dtype=np.int64)
    b = np.array([2**62, -(2**63) + 1], dtype=np.int64)
    got = await compute(lambda builder, x: builder.greater(x["a"], x["b"]), {"a": a, "b": b})
    assert got.tolist() == [1, 0]


async def test_logical_operators():
    a = np.array([0, 0, 3, 255], dtype=np.uint8)
    b = np.array([0, 1, 0, 7], dtype=np.uint8)
    for op, want in [("logicalAnd", [0, 0, 0, 1]), ("logicalOr", [0, 1, 1, 1]), ("logicalXor", [0, 1, 1, 0])]:
        got = await compute(lambda builder, x: getattr(builder, op)(x["a"], x["b"]), {"a": a, "b": b})
        assert got.tolist() == want, op
    got = await compute(lambda builder, x: builder.logicalNot(x["a"]), {"a": a})
    assert got.tolist() == [1, 1, 0, 0]


async def test_is_nan_is_infinite():
    a = np.array([1, NAN, INF, -INF], dtype=np.float16)
    assert (await compute(lambda builder, x: builder.isNaN(x["a"]), {"a": a})).tolist() == [0, 1, 0, 0]
    assert (await compute(lambda builder, x: builder.isInfinite(x["a"]), {"a": a})).tolist() == [0, 0, 1, 1]


async def test_where():
    got = await compute(lambda builder, x: builder.where(x["c"], x["t"], x["f"]),
                        {"c": np.array([[1], [0], [9]], np.uint8), "t": np.array([1, 2], np.int64),
                         "f": np.array(-5, np.int64)})
    assert got.dtype == np.int64 and got.tolist() == [[1, 2], [-5, -5], [1, 2]]


async def test_reductions_hand_computed():
    x = np.array([[1, -2, 3], [4, 5, -6]], dtype=np.float32)
    cases = [
        ("reduceSum", {}, 5.0),
        ("reduceSum", {"axes": [1]}, [2, 3]),
        ("reduceSum", {"axes": [0], "keepDimensions": True}, [[5, 3, -3]]),
        ("reduceL1", {"axes": [1]}, [6, 15]),
        ("reduceL2", {"axes": [0]}, [math.sqrt(17), math.sqrt(29), math.sqrt(45)]),
        ("reduceMax", {"axes": [1]}, [3, 5]),
        ("reduceMin", {}, -6.0),
        ("reduceMean", {"axes": [1]}, [2 / 3, 1]),
        ("reduceProduct", {"axes": [1]}, [-6, -120]),
        ("reduceSumSquare", {"axes": [1]}, [14, 77]),
        ("reduceSum", {"axes": []}, x.tolist()),
        ("reduceL1", {"axes": []}, np.abs(x).tolist()),
    ]
    for op, options, want in cases:
        got = await compute(lambda builder, o: getattr(builder, op)(o["x"], options), {"x": x})
        assert_close(got, np.array(want, dtype=np.float32), ulp=1, what=f"{op} {options}")
    pos = np.array([[1, 2], [3, 4]], dtype=np.float32)
    got = await compute(lambda builder, o: builder.reduceLogSum(o["x"], {"axes": [1]}), {"x": pos})
    assert_close(got, np.array([math.log(3), math.log(7)], np.float32), ulp=1)
    got = await compute(lambda builder, o: builder.reduceLogSumExp(o["x"], {"axes": [1]}), {"x": pos})
    expected = [math.log(math.exp(1) + math.exp(2)), math.log(math.exp(3) + math.exp(4))]
    assert_close(got, np.array(expected, np.float32), ulp=2)


async def test_integer_reduction_wraps():
    x = np.array([2**31 - 1, 1], dtype=np.int32)
    got = await compute(lambda builder, o: builder.reduceSum(o["x"]), {"x": x})
    assert got.dtype == np.int32 and got.item() == -(2**31)


async def test_arg_min_max():
    x = np.array([[3, 7, 7], [0, -1, 5]], dtype=np.int8)
    got = await compute(lambda builder, o: builder.argMax(o["x"], 1), {"x": x})
    assert got.dtype == np.int32 and got.tolist() == [1, 2]       # tie: the first index
    got = await compute(lambda builder, o: builder.argMin(o["x"], 0, {"keepDimensions": True,
                                                                      "outputDataType": "int64"}), {"x": x})
    assert got.dtype == np.int64 and got.tolist() == [[1, 1, 1]]


async def test_cumulative_sum():
    x = np.array([[1, 2, 3, 4]], dtype=np.float32)
    for options, want in [({}, [1, 3, 6, 10]), ({"exclusive": True}, [0, 1, 3, 6]),
                          ({"reversed": True}, [10, 9, 7, 4]), ({"exclusive": True, "reversed": True}, [9, 7, 4, 0])]:
        got = await compute(lambda builder, o: builder.cumulativeSum(o["x"], 1, options), {"x": x})
        assert got.tolist() == [want], options


async def test_type_errors():
    context = await webnn_py.ml.createContext()
    builder = MLGraphBuilder(context)
    f32 = builder.input("f", {"dataType": "float32", "shape": [2, 3]})
    i32 = builder.input("i", {"dataType": "int32", "shape": [2, 3]})
    u8 = builder.input("u", {"dataType": "uint8", "shape": [3]})
    with raises(TypeError, match=r"^logicalAnd: a has data type float32"):
        builder.logicalAnd(f32, f32)
    with raises(TypeError, match=r"^\[q\] isNaN: a has data type int32"):
        builder.isNaN(i32, {"label": "q"})
    with raises(TypeError, match=r"^equal: b's data type int32 differs"):
        builder.equal(f32, i32)
    with raises(TypeError, match=r"^where: condition has data type float32"):
        builder.where(f32, f32, f32)
    with raises(TypeError, match=r"^where: falseValue's data type int32 differs"):
        builder.where(u8, f32, i32)
    with raises(TypeError, match=r"^reduceMean: input has data type int32"):
        builder.reduceMean(i32)
    with raises(TypeError, match=r"^reduceSum: axes \[0, 0\] contain duplicate"):
        builder.reduceSum(f32, {"axes": [0, 0]})
    with raises(TypeError, match=r"^reduceSum: axis 2 is out of range"):
        builder.reduceSum(f32, {"axes": [2]})
    with raises(TypeError, match=r"^argMax: axis 2 is out of range"):
        builder.argMax(f32, 2)
    with raises(TypeError, match=r"^argMin: outputDataType uint32 is not allowed"):
        builder.argMin(f32, 0, {"outputDataType": "uint32"})
    with raises(TypeError, match=r"^cumulativeSum: axis 5 is out of range"):
        builder.cumulativeSum(f32, 5)
    with raises(TypeError, match=r"^cumulativeSum: input has data type uint8"):
        builder.cumulativeSum(u8, 0)
