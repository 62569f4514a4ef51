"""Tensor manipulation and gather/scatter operators, hand-computed cases.

Portable: runs under pytest on CPython and inside Pyodide under Node.js, where
numpy's index type is 32 bits wide (the kernels compute positions in int64).
Expected values are worked out by hand from the spec's definitions and examples.
"""
import numpy as np

import webnn_py
from webnn_py import MLGraphBuilder

from .expect import raises
from .graph import compute

X43 = np.array([[0, 1, 2], [10, 11, 12], [20, 21, 22], [30, 31, 32]], np.float32)   # the spec's [4,3] example


async def _builder():
    context = await webnn_py.ml.createContext()
    return MLGraphBuilder(context)


async def test_concat():
    a = np.array([[1, 2]], np.int8)
    b = np.array([[3, 4], [5, 6]], np.int8)
    got = await compute(lambda builder, x: builder.concat([x["a"], x["b"]], 0), {"a": a, "b": b})
    assert got.tolist() == [[1, 2], [3, 4], [5, 6]]
    got = await compute(lambda builder, x: builder.concat([x["b"], x["b"]], 1), {"b": b})
    assert got.tolist() == [[3, 4, 3, 4], [5, 6, 5, 6]]


async def test_expand_and_reshape():
    x = np.array([[1], [2]], np.uint64)
    got = await compute(lambda builder, o: builder.expand(o["x"], [2, 2, 3]), {"x": x})
    assert got.tolist() == [[[1, 1, 1], [2, 2, 2]]] * 2
    got = await compute(lambda builder, o: builder.reshape(o["x"], [1, 2, 1]), {"x": x})
    assert got.shape == (1, 2, 1) and got.ravel().tolist() == [1, 2]
    got = await compute(lambda builder, o: builder.reshape(o["x"], []), {"x": np.array([[7]], np.int32)})
    assert got.shape == () and int(got) == 7


async def test_reverse_slice_tile_transpose():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)          # [[0 1 2] [3 4 5]]
    got = await compute(lambda builder, o: [builder.reverse(o["x"]), builder.reverse(o["x"], {"axes": [1]}),
                                            builder.reverse(o["x"], {"axes": []})], {"x": x})
    assert [g.tolist() for g in got] == [[[5, 4, 3], [2, 1, 0]], [[2, 1, 0], [5, 4, 3]], [[0, 1, 2], [3, 4, 5]]]
    got = await compute(lambda builder, o: [builder.slice(o["x"], [0, 1], [2, 2]),
                                            builder.slice(o["x"], [0, 0], [2, 3], {"strides": [1, 2]})], {"x": x})
    assert [g.tolist() for g in got] == [[[1, 2], [4, 5]], [[0, 2], [3, 5]]]
    got = await compute(lambda builder, o: builder.tile(o["x"], [1, 2]), {"x": x})
    assert got.tolist() == [[0, 1, 2, 0, 1, 2], [3, 4, 5, 3, 4, 5]]
    got = await compute(lambda builder, o: builder.transpose(o["x"]), {"x": x})
    assert got.tolist() == [[0, 3], [1, 4], [2, 5]]
    y = np.arange(6, dtype=np.uint8).reshape(1, 2, 3)
    got = await compute(lambda builder, o: builder.transpose(o["y"], {"permutation": [2, 0, 1]}), {"y": y})
    assert got.shape == (3, 1, 2) and got.tolist() == [[[0, 3]], [[1, 4]], [[2, 5]]]


async def test_split():
    x = np.arange(6, dtype=np.float16).reshape(2, 3)
    got = await compute(lambda builder, o: builder.split(o["x"], [2, 1], {"axis": 1}), {"x": x})
    assert [g.tolist() for g in got] == [[[0, 1], [3, 4]], [[2], [5]]]
    got = await compute(lambda builder, o: builder.split(o["x"], 2), {"x": x})
    assert [g.tolist() for g in got] == [[[0, 1, 2]], [[3, 4, 5]]]


async def test_triangular():
    x = np.array([[7, 1, 2], [9, 4, 8], [2, 6, 3]], np.int64)
    got = await compute(lambda builder, o: [builder.triangular(o["x"]),
                                            builder.triangular(o["x"], {"upper": False, "diagonal": -1})], {"x": x})
    assert got[0].tolist() == [[7, 1, 2], [0, 4, 8], [0, 0, 3]]
    assert got[1].tolist() == [[0, 0, 0], [9, 0, 0], [2, 6, 0]]


async def test_float16_bit_patterns_pass_through():
    bits = np.array([0x0001, 0x8000, 0x7C00, 0xFC00, 0x7E01, 0x3C00], np.uint16)   # subnormal, -0, ±inf, NaN, 1
    x = bits.view(np.float16).reshape(2, 3)
    got = await compute(lambda builder, o: builder.transpose(builder.reverse(o["x"], {"axes": [0]})), {"x": x})
    assert got.view(np.uint16).tolist() == [[0xFC00, 0x0001], [0x7E01, 0x8000], [0x3C00, 0x7C00]]


async def test_gather_family():
    got = await compute(lambda builder, o: builder.gather(o["x"], o["i"], {"axis": 1}), {"x": X43},
                        {"i": np.array([2, 1, 1], np.uint32)})
    assert got.tolist() == [[2, 1, 1], [12, 11, 11], [22, 21, 21], [32, 31, 31]]
    got = await compute(lambda builder, o: builder.gatherElements(o["x"], o["i"]), {"x": X43},
                        {"i": np.array([[3, 1, 1], [2, 0, 3]], np.int64)})
    assert got.tolist() == [[30, 11, 12], [20, 1, 32]]
    got = await compute(lambda builder, o: builder.gatherND(o["x"], o["i"]), {"x": X43},
                        {"i": np.array([[1, 2], [3, 0]], np.int32)})
    assert got.tolist() == [12, 30]


async def test_gather_negative_and_out_of_range_indices():
    x = np.array([10, 11, 12, 13], np.int32)
    indices = np.array([-1, -4, -9, 4, 100, 1], np.int32)    # from the end; clamped into [-4, 3]
    got = await compute(lambda builder, o: builder.gather(o["x"], o["i"]), {"x": x, "i": indices})
    assert got.tolist() == [13, 10, 10, 13, 13, 11]


async def test_scatter_family():
    got = await compute(lambda builder, o: builder.scatterElements(o["x"], o["i"], o["u"], {"axis": 1}), {"x": X43},
                        {"i": np.array([[2], [1], [0], [2]], np.uint32),
                         "u": np.array([[-1], [-2], [-3], [-4]], np.float32)})
    assert got.tolist() == [[0, 1, -1], [10, -2, 12], [-3, 21, 22], [30, 31, -4]]
    x = np.array([[0, 1], [2, 3], [4, 5]], np.float32)
    got = await compute(lambda builder, o: builder.scatterND(o["x"], o["i"], o["u"]), {"x": x},
                        {"i": np.array([[2], [0]], np.int64), "u": np.array([[-1, -2], [-3, -4]], np.float32)})
    assert got.tolist() == [[-3, -4], [2, 3], [-1, -2]]


async def test_scatter_duplicates_last_update_wins():
    x = np.zeros(3, np.uint32)
    got = await compute(lambda builder, o: builder.scatterND(o["x"], o["i"], o["u"]),
                        {"x": x, "i": np.array([[1], [-2], [0]], np.int32), "u": np.array([5, 6, 7], np.uint32)})
    assert got.tolist() == [7, 6, 0]


async def test_validation_errors():
    builder = await _builder()
    x = builder.input("x", {"dataType": "float32", "shape": [2, 3]})
    i = builder.input("i", {"dataType": "int32", "shape": [2]})
    with raises(TypeError, match=r"^concat: axis 2 is out of range for rank 2"):
        builder.concat([x, x], 2)
    with raises(TypeError, match=r"^\[r\] reshape: new shape \[5\] has 5 elements"):
        builder.reshape(x, [5], {"label": "r"})
    with raises(TypeError, match=r"^slice: starts\[1\] \+ sizes\[1\] = 4 exceeds"):
        builder.slice(x, [0, 1], [1, 3])
    with raises(TypeError, match=r"^split: splits \[1, 1\] sum to 2"):
        builder.split(x, [1, 1], {"axis": 1})
    with raises(TypeError, match=r"^transpose: permutation \[0, 0\] contains duplicate"):
        builder.transpose(x, {"permutation": [0, 0]})
    with raises(TypeError, match=r"^triangular: input has rank 1"):
        builder.triangular(i)
    with raises(TypeError, match=r"^gather: indices has data type float32"):
        builder.gather(i, x)
    with raises(TypeError, match=r"^gatherND: indices' last dimension 2 exceeds the input's rank 1"):
        builder.gatherND(i, builder.reshape(i, [1, 2]))
    with raises(TypeError, match=r"^scatterElements: updates shape \[2, 3\] differs from indices shape \[1, 3\]"):
        builder.scatterElements(x, builder.input("j", {"dataType": "uint32", "shape": [1, 3]}), x)
