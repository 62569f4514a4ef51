"""matmul, gemm, batch/instance/layer normalization, dequantizeLinear and
quantizeLinear on small hand-computed cases.

Portable: these run on host CPython and inside Pyodide under Node.js.
"""
import numpy as np

import webnn_py

from .expect import assert_close, raises
from .graph import compute


async def builder_with(**descriptors):
    context = await webnn_py.ml.createContext()
    builder = webnn_py.MLGraphBuilder(context)
    return builder, {name: builder.input(name, {"dataType": dt, "shape": shape})
                     for name, (dt, shape) in descriptors.items()}


async def test_matmul_2d_and_broadcast_batch():
    for dtype in (np.float32, np.float16):
        a = np.array([[1, 2], [3, 4]], dtype)
        b = np.array([[5, 6], [7, 8]], dtype)
        got = await compute(lambda builder, x: builder.matmul(x["a"], x["b"]), {"a": a, "b": b})
        assert got.dtype == dtype and got.tolist() == [[19, 22], [43, 50]]
    # [2, 1, 2] x [2, 1]: the rank-2 b is shared by both batches
    a = np.array([[[1, 2]], [[3, 4]]], np.float32)
    b = np.array([[1], [10]], np.float32)
    got = await compute(lambda builder, x: builder.matmul(x["a"], x["b"]), {"a": a}, {"b": b})
    assert got.shape == (2, 1, 1) and got.ravel().tolist() == [21, 43]


async def test_matmul_errors():
    builder, x = await builder_with(a=("float32", [2, 3]), b=("float32", [2, 3]), v=("float32", [3]))
    with raises(TypeError, r"^\[m\] matmul: a's columns \(3\) differ from b's rows \(2\)"):
        builder.matmul(x["a"], x["b"], {"label": "m"})
    with raises(TypeError, "matmul: b has rank 1"):
        builder.matmul(x["a"], x["v"])


async def test_gemm_options():
    a = np.array([[1, 2], [3, 4]], np.float32)
    b = np.array([[1, 0], [0, 1]], np.float32)
    c = np.array([10, 20], np.float32)
    # 2 * aᵀ·I + 0.5 * [10, 20] = [[2+5, 6+10], [4+5, 8+10]]
    got = await compute(lambda builder, x: builder.gemm(
        x["a"], x["b"], {"c": x["c"], "alpha": 2.0, "beta": 0.5, "aTranspose": True}), {"a": a, "b": b, "c": c})
    assert got.tolist() == [[7, 16], [9, 18]]
    got = await compute(lambda builder, x: builder.gemm(x["a"], x["b"], {"bTranspose": True}),
                        {"a": a.astype(np.float16), "b": np.array([[1, 1]], np.float16)})
    assert got.dtype == np.float16 and got.tolist() == [[3], [7]]


async def test_gemm_errors():
    builder, x = await builder_with(a=("float32", [2, 3]), b=("float32", [3, 4]), c=("float32", [3]))
    with raises(TypeError, r"gemm: c's shape \[3\] is not unidirectionally broadcastable to \[2, 4\]"):
        builder.gemm(x["a"], x["b"], {"c": x["c"]})
    with raises(TypeError, r"gemm: a's columns \(2\) differ from b's rows \(3\)"):
        builder.gemm(x["a"], x["b"], {"aTranspose": True})


async def test_batch_normalization():
    x = np.array([[[[1, 3]], [[2, 6]]]], np.float32)           # [1, 2, 1, 2], channels at axis 1
    operands = {"x": x, "mean": np.array([2, 4], np.float32), "var": np.array([1, 4], np.float32),
                "scale": np.array([2, 3], np.float32), "bias": np.array([0.5, -1], np.float32)}
    got = await compute(lambda b, o: b.batchNormalization(
        o["x"], o["mean"], o["var"], {"scale": o["scale"], "bias": o["bias"], "epsilon": 0.0}), operands)
    # channel 0: (x - 2) / 1 * 2 + 0.5; channel 1: (x - 4) / 2 * 3 - 1
    assert got.tolist() == [[[[-1.5, 2.5]], [[-4, 2]]]]
    # axis 3 of an NHWC-like tensor, no scale or bias
    got = await compute(lambda b, o: b.batchNormalization(o["x"], o["mean"], o["var"], {"axis": 3, "epsilon": 0.0}),
                        {"x": np.array([[[[3, 8]]]], np.float16), "mean": np.array([2, 4], np.float16),
                         "var": np.array([1, 4], np.float16)})
    assert got.dtype == np.float16 and got.tolist() == [[[[1, 2]]]]


async def test_batch_normalization_errors():
    builder, x = await builder_with(x=("float32", [2, 3]), m=("float32", [3]), m2=("float32", [2]))
    with raises(TypeError, "batchNormalization: axis 2 is out of range for rank 2"):
        builder.batchNormalization(x["x"], x["m"], x["m"], {"axis": 2})
    with raises(TypeError, r"batchNormalization: variance's shape \[2\] must be \[3\]"):
        builder.batchNormalization(x["x"], x["m"], x["m2"])


async def test_instance_normalization_layouts():
    got = await compute(lambda b, o: b.instanceNormalization(o["x"], {"epsilon": 0.0}),
                        {"x": np.array([[[[1, 3]], [[10, 30]]]], np.float32)})   # nchw [1, 2, 1, 2]
    assert got.tolist() == [[[[-1, 1]], [[-1, 1]]]]
    x = np.array([[[[1, 10], [3, 30]]]], np.float32)                              # nhwc [1, 1, 2, 2]
    got = await compute(lambda b, o: b.instanceNormalization(
        o["x"], {"layout": "nhwc", "epsilon": 0.0, "scale": o["s"], "bias": o["b"]}),
        {"x": x, "s": np.array([1, 2], np.float32), "b": np.array([0, 5], np.float32)})
    assert got.tolist() == [[[[-1, 3], [1, 7]]]]


async def test_instance_normalization_errors():
    builder, x = await builder_with(x=("float32", [1, 2, 3, 4]), s=("float32", [2]), r3=("float32", [2, 3, 4]))
    with raises(TypeError, r"instanceNormalization: scale's shape \[2\] must be \[4\]"):
        builder.instanceNormalization(x["x"], {"layout": "nhwc", "scale": x["s"]})
    with raises(TypeError, "instanceNormalization: input has rank 3"):
        builder.instanceNormalization(x["r3"])


async def test_layer_normalization():
    x = np.array([[1, 3], [0, 4]], np.float32)
    # default axes [1]: each row to (x - mean) / std = [-1, 1], then * [1, 2] + [0, 1]
    got = await compute(lambda b, o: b.layerNormalization(o["x"], {"epsilon": 0.0, "scale": o["s"], "bias": o["b"]}),
                        {"x": x, "s": np.array([1, 2], np.float32), "b": np.array([0, 1], np.float32)})
    assert got.tolist() == [[-1, 3], [-1, 3]]
    # axes [0]: per column; the column [3, 4] has mean 3.5 and std 0.5
    got = await compute(lambda b, o: b.layerNormalization(o["x"], {"axes": [0], "epsilon": 0.0}),
                        {"x": x.astype(np.float16)})
    assert got.dtype == np.float16 and got.tolist() == [[1, -1], [-1, 1]]
    # empty axes: nothing reduced, every element becomes the bias
    got = await compute(lambda b, o: b.layerNormalization(o["x"], {"axes": [], "bias": o["b"]}),
                        {"x": x, "b": np.array(0.25, np.float32)})
    assert got.tolist() == [[0.25, 0.25], [0.25, 0.25]]


async def test_layer_normalization_errors():
    builder, x = await builder_with(x=("float32", [2, 3]), s=("float32", [2]))
    with raises(TypeError, r"layerNormalization: axes \[1, 1\] contain duplicate values"):
        builder.layerNormalization(x["x"], {"axes": [1, 1]})
    with raises(TypeError, r"layerNormalization: scale's dimension 0 is 2, but input's dimension 1"):
        builder.layerNormalization(x["x"], {"scale": x["s"]})


async def test_dequantize_linear_blockwise():
    x = np.array([[0, 128, 255, 10]], np.uint8)
    scale = np.array([[0.5, 2]], np.float32)            # each value covers a block of 2 columns
    zero_point = np.array([[128, 10]], np.uint8)
    got = await compute(lambda b, o: b.dequantizeLinear(o["x"], o["s"], o["z"]), {"x": x}, {"s": scale, "z": zero_point})
    assert got.dtype == np.float32 and got.tolist() == [[-64, 0, 490, 0]]
    got = await compute(lambda b, o: b.dequantizeLinear(o["x"], o["s"], o["z"]),
                        {"x": np.array([-128, 127], np.int8)},
                        {"s": np.array([0.25], np.float16), "z": np.array([-1], np.int8)})
    assert got.dtype == np.float16 and got.tolist() == [-31.75, 32]


async def test_quantize_linear_rounds_half_to_even_and_saturates():
    x = np.array([0.5, 1.5, 2.5, -2.5, 300, -300], np.float32)
    got = await compute(lambda b, o: b.quantizeLinear(o["x"], o["s"], o["z"]), {"x": x},
                        {"s": np.array([1], np.float32), "z": np.array([0], np.int8)})
    assert got.dtype == np.int8 and got.tolist() == [0, 2, 2, -2, 127, -128]
    got = await compute(lambda b, o: b.quantizeLinear(o["x"], o["s"], o["z"]),
                        {"x": np.array([1, 3, -1000], np.float16)},
                        {"s": np.array([2], np.float16), "z": np.array([128], np.uint8)})
    assert got.dtype == np.uint8 and got.tolist() == [128, 130, 0]


async def test_quantization_round_trip():
    x = np.array([[-1.0, -0.5, 0.25, 1.0]], np.float32)
    scale, zero = np.array([[0.25]], np.float32), np.array([[4]], np.int32)
    got = await compute(lambda b, o: b.dequantizeLinear(b.quantizeLinear(o["x"], o["s"], o["z"]), o["s"], o["z"]),
                        {"x": x}, {"s": scale, "z": zero})
    assert_close(got, x, ulp=0)


async def test_quantization_errors():
    builder, x = await builder_with(q=("uint8", [4, 6]), f=("float32", [4, 6]), s=("float32", [3, 1]),
                                    z=("uint8", [3, 1]), z8=("int8", [3, 1]))
    with raises(TypeError, r"dequantizeLinear: zeroPoint's data type int8 differs from input's uint8"):
        builder.dequantizeLinear(x["q"], x["s"], x["z8"])
    with raises(TypeError, r"^\[ql\] quantizeLinear: scale's shape \[3, 1\] is not blockwise broadcastable"):
        builder.quantizeLinear(x["f"], x["s"], x["z"], {"label": "ql"})
    with raises(TypeError, r"quantizeLinear: input has data type uint8"):
        builder.quantizeLinear(x["q"], x["s"], x["z"])
