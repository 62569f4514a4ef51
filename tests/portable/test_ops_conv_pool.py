"""conv2d, convTranspose2d, pooling, resample2d and pad on hand-computed values.

Portable: runs under pytest on CPython and inside Pyodide under Node.js.
"""
import math

import numpy as np

import webnn_py

from .expect import assert_close, raises
from .graph import compute


async def test_conv2d_sums_blocks_with_bias_and_padding():
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    w = np.ones((1, 1, 2, 2), np.float32)
    got = await compute(lambda b, o: b.conv2d(o["x"], o["w"], {"bias": o["b"], "padding": [1, 0, 0, 0]}),
                        {"x": x}, {"w": w, "b": np.array([1], np.float32)})
    # row -1 is padding: [0+1, 1+2], then the 2x2 block sums, each + 1
    assert got.tolist() == [[[[2, 4], [9, 13], [21, 25]]]]


async def test_conv2d_nhwc_hwio_depthwise_float16():
    # Two channels, 1x1 depthwise filter multiplies channel 0 by 2 and channel 1 by -1.
    x = np.array([1, 10, 2, 20, 3, 30, 4, 40], np.float16).reshape(1, 2, 2, 2)
    w = np.array([2, -1], np.float16).reshape(1, 1, 1, 2)
    got = await compute(lambda b, o: b.conv2d(o["x"], o["w"], {"groups": 2, "inputLayout": "nhwc",
                                                                "filterLayout": "hwio"}), {"x": x}, {"w": w})
    assert got.dtype == np.float16
    assert got.reshape(-1).tolist() == [2, -10, 4, -20, 6, -30, 8, -40]


async def test_conv_transpose2d_stride_copies_blocks():
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 2, 2)
    w = np.ones((1, 1, 2, 2), np.float32)
    got = await compute(lambda b, o: b.convTranspose2d(o["x"], o["w"], {"strides": [2, 2], "outputPadding": [1, 0]}),
                        {"x": x}, {"w": w})
    assert got.tolist() == [[[[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4], [0, 0, 0, 0]]]]


async def test_conv_transpose2d_overlap_and_padding():
    # 1-D in effect: [1, 2] with filter [1, 1, 1], stride 1 -> [1, 3, 3, 2]; padding [0, 0, 1, 1] crops to [3, 3].
    x = np.array([1, 2], np.float32).reshape(1, 1, 1, 2)
    w = np.ones((1, 1, 1, 3), np.float32)
    got = await compute(lambda b, o: b.convTranspose2d(o["x"], o["w"]), {"x": x}, {"w": w})
    assert got.reshape(-1).tolist() == [1, 3, 3, 2]
    got = await compute(lambda b, o: b.convTranspose2d(o["x"], o["w"], {"padding": [0, 0, 1, 1]}), {"x": x}, {"w": w})
    assert got.reshape(-1).tolist() == [3, 3]


async def test_pools_global_and_padded():
    x = np.array([[[[1, 2], [3, 4]]]], np.float32)
    assert (await compute(lambda b, o: b.averagePool2d(o["x"]), {"x": x})).tolist() == [[[[2.5]]]]
    assert (await compute(lambda b, o: b.maxPool2d(o["x"]), {"x": x})).tolist() == [[[[4]]]]
    l2 = await compute(lambda b, o: b.l2Pool2d(o["x"]), {"x": x})
    assert_close(l2, np.array([[[[math.sqrt(30)]]]], np.float32), ulp=1)
    # padding does not count in the average
    got = await compute(lambda b, o: b.averagePool2d(o["x"], {"windowDimensions": [2, 2], "padding": [1, 1, 1, 1]}),
                        {"x": x})
    assert got.tolist() == [[[[1, 1.5, 2], [2, 2.5, 3], [3, 3.5, 4]]]]


async def test_max_pool_ceil_nhwc_int8():
    x = np.arange(16, dtype=np.int8).reshape(1, 4, 4, 1) - 8
    got = await compute(lambda b, o: b.maxPool2d(o["x"], {"windowDimensions": [3, 3], "strides": [2, 2],
                                                          "outputShapeRounding": "ceil", "layout": "nhwc"}),
                        {"x": x})
    assert got.reshape(-1).tolist() == [2, 3, 6, 7]


async def test_resample2d_spec_example_and_nearest():
    x = np.array([0, 1, 2, 3, 0, 1, 2, 3, 12, 13, 14, 15, 12, 13, 14, 15], np.float32).reshape(1, 1, 4, 4)
    got = await compute(lambda b, o: b.resample2d(o["x"], {"mode": "linear", "sizes": [8, 8]}), {"x": x})
    assert got[0, 0, 3].tolist() == [3, 3.25, 3.75, 4.25, 4.75, 5.25, 5.75, 6]
    got = await compute(lambda b, o: b.resample2d(o["x"], {"scales": [0.5, 0.5]}), {"x": x})
    assert got.tolist() == [[[[0, 2], [12, 14]]]]
    y = np.array([1, 2], np.uint8).reshape(1, 1, 1, 2)
    got = await compute(lambda b, o: b.resample2d(o["x"], {"scales": [2.0, 2.0]}), {"x": y})
    assert got.reshape(-1).tolist() == [1, 1, 2, 2, 1, 1, 2, 2]


async def test_pad_modes():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    got = await compute(lambda b, o: b.pad(o["x"], [0, 2], [1, 1], {"mode": "reflection"}), {"x": x})
    assert got.tolist() == [[3, 2, 1, 2, 3, 2], [6, 5, 4, 5, 6, 5], [3, 2, 1, 2, 3, 2]]
    got = await compute(lambda b, o: b.pad(o["x"], [1, 0], [0, 1], {"value": 300.7}), {"x": x.astype(np.uint8)})
    assert got.tolist() == [[255, 255, 255, 255], [1, 2, 3, 255], [4, 5, 6, 255]]
    got = await compute(lambda b, o: b.pad(o["x"], [0, 1], [0, 1], {"mode": "edge"}), {"x": x})
    assert got.tolist() == [[1, 1, 2, 3, 3], [4, 4, 5, 6, 6]]


async def test_validation_errors_name_the_operator():
    context = await webnn_py.ml.createContext()
    builder = webnn_py.MLGraphBuilder(context)
    x = builder.input("x", {"dataType": "float32", "shape": [1, 2, 4, 4]})
    w = builder.input("w", {"dataType": "float32", "shape": [3, 1, 3, 3]})
    with raises(TypeError, match=r"^\[c\] conv2d: input channels / groups"):
        builder.conv2d(x, w, {"label": "c"})
    with raises(TypeError, match=r"^convTranspose2d: outputPadding"):
        builder.convTranspose2d(x, builder.input("w2", {"dataType": "float32", "shape": [2, 1, 3, 3]}),
                                {"outputPadding": [1, 1]})
    with raises(TypeError, match=r"^averagePool2d: the output size"):
        builder.averagePool2d(x, {"windowDimensions": [5, 5]})
    with raises(TypeError, match=r"^resample2d: axes \[1, 1\] contain a duplicate"):
        builder.resample2d(x, {"axes": [1, 1]})
    with raises(TypeError, match=r"^pad: beginningPadding\[2\] 4 must be smaller"):
        builder.pad(x, [0, 0, 4, 0], [0, 0, 0, 0], {"mode": "reflection"})
