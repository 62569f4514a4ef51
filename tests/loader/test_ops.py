"""Every TFLite operator the importer translates, on small models written with
LiteRT's own schema classes, against the LiteRT interpreter."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from webnn_py.base.errors import NotSupportedError

from .helpers import litert_run, relative_error, webnn_run
from .tflite_writer import ModelWriter, options

RNG = np.random.default_rng(2024)


def rand(*shape, low=-1.0, high=1.0, dtype=np.float32):
    return RNG.uniform(low, high, shape).astype(dtype)


def single_op(code, in_shapes, out_shape, consts=(), opts=None, out_dtype=np.float32, custom=None,
              custom_options=None, in_dtype=np.float32):
    """A model of one operator: runtime inputs of in_shapes, then constant inputs `consts`
    (None for an omitted optional input)."""
    w = ModelWriter()
    g = w.subgraph()
    ins = [g.tensor(s, in_dtype, name=f"x{i}") for i, s in enumerate(in_shapes)]
    const_ids = [-1 if c is None else g.const(c) for c in consts]
    out = g.tensor(out_shape, out_dtype, name="y")
    g.op(code, ins + const_ids, [out], opts, custom=custom, custom_options=custom_options)
    g.io(ins, [out])
    return w.finish()


def check(model: bytes, inputs: dict, tolerance=1e-5):
    reference = litert_run(model, inputs)
    ours = webnn_run(model, inputs)
    for name, expected in reference.items():
        assert ours[name].shape == expected.shape, (name, ours[name].shape, expected.shape)
        error = relative_error(ours[name], expected)
        assert error <= tolerance, f"output {name}: relative error {error:.3g}"
    return ours


def conv_opts(padding, stride=1, dilation=1, act=0):
    return options("Conv2DOptions", padding=padding, strideW=stride, strideH=stride,
                   dilationWFactor=dilation, dilationHFactor=dilation, fusedActivationFunction=act)


@pytest.mark.parametrize("padding,stride,dilation,act", [(0, 1, 1, 0), (0, 2, 1, 1), (1, 2, 1, 3), (0, 1, 2, 0)])
def test_conv_2d(padding, stride, dilation, act):
    x = rand(1, 9, 8, 3)
    filt, bias = rand(4, 3, 3, 3), rand(4)
    k_eff = 2 * dilation + 1
    out = [-(-9 // stride), -(-8 // stride)] if padding == 0 else [-(-(9 - k_eff + 1) // stride), -(-(8 - k_eff + 1) // stride)]
    model = single_op("CONV_2D", [x.shape], [1, *out, 4], [filt, bias], conv_opts(padding, stride, dilation, act))
    check(model, {"x0": x})


def test_depthwise_conv_2d_with_multiplier():
    x = rand(1, 7, 7, 3)
    model = single_op("DEPTHWISE_CONV_2D", [x.shape], [1, 4, 4, 6], [rand(1, 3, 3, 6), rand(6)],
                      options("DepthwiseConv2DOptions", padding=0, strideW=2, strideH=2, depthMultiplier=2,
                              dilationWFactor=1, dilationHFactor=1, fusedActivationFunction=3))
    check(model, {"x0": x})


@pytest.mark.parametrize("keep", [False, True])
def test_fully_connected(keep):
    x = rand(2, 3, 5)
    out = [2, 3, 4] if keep else [6, 4]
    model = single_op("FULLY_CONNECTED", [x.shape], out, [rand(4, 5), rand(4)],
                      options("FullyConnectedOptions", keepNumDims=keep, fusedActivationFunction=1))
    check(model, {"x0": x})


@pytest.mark.parametrize("code,opts", [("ADD", "AddOptions"), ("SUB", "SubOptions"), ("MUL", "MulOptions"),
                                       ("DIV", "DivOptions")])
def test_binary_broadcast_and_fused_activation(code, opts):
    a, b = rand(2, 3, 4), rand(1, 4, low=0.5, high=2.0)
    model = single_op(code, [a.shape, b.shape], [2, 3, 4], opts=options(opts, fusedActivationFunction=3))
    check(model, {"x0": a, "x1": b})


@pytest.mark.parametrize("code,opts", [
    ("RELU", None), ("RELU6", None), ("LOGISTIC", None), ("TANH", None), ("HARD_SWISH", None),
    ("SOFTMAX", options("SoftmaxOptions", beta=1.0)), ("SOFTMAX", options("SoftmaxOptions", beta=0.5)),
    ("LEAKY_RELU", options("LeakyReluOptions", alpha=0.2)),
])
def test_unary(code, opts):
    x = rand(2, 5, 7, low=-8, high=8)
    check(single_op(code, [x.shape], list(x.shape), opts=opts), {"x0": x})


def test_prelu():
    x = rand(1, 4, 4, 3)
    check(single_op("PRELU", [x.shape], list(x.shape), [rand(1, 1, 3)]), {"x0": x})


@pytest.mark.parametrize("keep", [False, True])
def test_mean(keep):
    x = rand(2, 4, 5, 3)
    out = [2, 1, 1, 3] if keep else [2, 3]
    check(single_op("MEAN", [x.shape], out, [np.array([1, -2], np.int32)], options("ReducerOptions", keepDims=keep)),
          {"x0": x})


def test_pad_and_padv2():
    x = rand(1, 3, 4, 2)
    pads = np.array([[0, 0], [1, 2], [2, 0], [0, 1]], np.int32)
    check(single_op("PAD", [x.shape], [1, 6, 6, 3], [pads]), {"x0": x})
    check(single_op("PADV2", [x.shape], [1, 6, 6, 3], [pads, np.array([1.5], np.float32)]), {"x0": x})


def test_reshape_and_squeeze():
    x = rand(1, 4, 6, 1)
    check(single_op("RESHAPE", [x.shape], [4, 6], [np.array([4, -1], np.int32)]), {"x0": x})
    check(single_op("SQUEEZE", [x.shape], [4, 6], opts=options("SqueezeOptions", squeezeDims=[0, 3])), {"x0": x})


def test_concatenation():
    a, b = rand(1, 2, 3, 4), rand(1, 2, 3, 2)
    check(single_op("CONCATENATION", [a.shape, b.shape], [1, 2, 3, 6],
                    opts=options("ConcatenationOptions", axis=-1, fusedActivationFunction=1)), {"x0": a, "x1": b})


@pytest.mark.parametrize("begin,end,strides,begin_mask,end_mask,shrink,out", [
    ([0, 1, 0], [2, 5, 6], [1, 2, 2], 0, 0, 0, [2, 2, 3]),
    ([1, -1, 0], [2, 0, 6], [1, -1, 3], 0, 0, 1, [5, 2]),
    ([0, 0, 5], [0, 0, 0], [1, 1, -2], 3, 7, 0, [2, 6, 3]),
])
def test_strided_slice(begin, end, strides, begin_mask, end_mask, shrink, out):
    x = rand(2, 6, 6)
    consts = [np.array(v, np.int32) for v in (begin, end, strides)]
    opts = options("StridedSliceOptions", beginMask=begin_mask, endMask=end_mask, shrinkAxisMask=shrink)
    check(single_op("STRIDED_SLICE", [x.shape], out, consts, opts), {"x0": x})


def test_slice():
    x = rand(3, 5, 4)
    check(single_op("SLICE", [x.shape], [2, 3, 4], [np.array([1, 2, 0], np.int32), np.array([2, -1, 4], np.int32)]),
          {"x0": x})


def test_transpose():
    x = rand(2, 3, 4, 5)
    check(single_op("TRANSPOSE", [x.shape], [5, 2, 4, 3], [np.array([3, 0, 2, 1], np.int32)]), {"x0": x})


@pytest.mark.parametrize("code", ["MAX_POOL_2D", "AVERAGE_POOL_2D"])
@pytest.mark.parametrize("padding,out", [(0, [1, 4, 3, 2]), (1, [1, 3, 3, 2])])
def test_pooling(code, padding, out):
    x = rand(1, 7, 6, 2)
    opts = options("Pool2DOptions", padding=padding, strideW=2, strideH=2, filterWidth=2, filterHeight=3,
                   fusedActivationFunction=0)
    check(single_op(code, [x.shape], out, opts=opts), {"x0": x})


@pytest.mark.parametrize("align,half", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("size", [[10, 7], [3, 2]])
def test_resize_bilinear(align, half, size):
    x = rand(1, 5, 4, 3)
    opts = options("ResizeBilinearOptions", alignCorners=align, halfPixelCenters=half)
    check(single_op("RESIZE_BILINEAR", [x.shape], [1, *size, 3], [np.array(size, np.int32)], opts), {"x0": x})


@pytest.mark.parametrize("align,half", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("size", [[10, 7], [3, 2]])
def test_resize_nearest_neighbor(align, half, size):
    x = rand(1, 5, 4, 3)
    opts = options("ResizeNearestNeighborOptions", alignCorners=align, halfPixelCenters=half)
    check(single_op("RESIZE_NEAREST_NEIGHBOR", [x.shape], [1, *size, 3], [np.array(size, np.int32)], opts),
          {"x0": x})


def test_depth_to_space_and_space_to_depth():
    x = rand(1, 2, 3, 8)
    check(single_op("DEPTH_TO_SPACE", [x.shape], [1, 4, 6, 2], opts=options("DepthToSpaceOptions", blockSize=2)),
          {"x0": x})
    y = rand(1, 4, 6, 2)
    check(single_op("SPACE_TO_DEPTH", [y.shape], [1, 2, 3, 8], opts=options("SpaceToDepthOptions", blockSize=2)),
          {"x0": y})


def test_gather():
    x = rand(4, 5, 3)
    check(single_op("GATHER", [x.shape], [4, 2, 2, 3], [np.array([[4, 0], [2, 2]], np.int32)],
                    options("GatherOptions", axis=1)), {"x0": x})


@pytest.mark.parametrize("padding,out", [(0, [1, 8, 10, 3]), (1, [1, 9, 11, 3])])
def test_transpose_conv(padding, out):
    x = rand(1, 4, 5, 2)
    w = ModelWriter()
    g = w.subgraph()
    xi = g.tensor(x.shape, name="x0")
    ids = [g.const(np.array(out, np.int32)), g.const(rand(3, 3, 3, 2)), xi, g.const(rand(3))]
    y = g.tensor(out, name="y")
    g.op("TRANSPOSE_CONV", ids, [y], options("TransposeConvOptions", padding=padding, strideW=2, strideH=2))
    g.io([xi], [y])
    check(w.finish(), {"x0": x})


def test_convolution_2d_transpose_bias_custom_op():
    """MediaPipe's custom op; LiteRT's interpreter registers it too."""
    x = rand(1, 4, 5, 2)
    params = struct.pack("<iii", 1, 2, 2)       # C TfLitePadding SAME, stride w, stride h
    model = single_op("CUSTOM", [x.shape], [1, 8, 10, 3], [rand(3, 4, 4, 2), rand(3)],
                      custom="Convolution2DTransposeBias", custom_options=params)
    check(model, {"x0": x})


def test_dequantize_fp16_weights():
    x = rand(1, 5, 5, 2)
    w = ModelWriter()
    g = w.subgraph()
    xi = g.tensor(x.shape, name="x0")
    w16 = g.const(rand(3, 3, 3, 2).astype(np.float16))
    w32 = g.tensor([3, 3, 3, 2])
    g.op("DEQUANTIZE", [w16], [w32])
    y = g.tensor([1, 5, 5, 3], name="y")
    g.op("CONV_2D", [xi, w32, g.const(rand(3))], [y], conv_opts(0))
    g.io([xi], [y])
    check(w.finish(), {"x0": x})


def _quantized_conv(dtype):
    """QUANTIZE -> int8/uint8 CONV_2D (per-channel int8 weights, int32 bias) -> DEQUANTIZE,
    and a quantized second output straight from the conv."""
    w = ModelWriter()
    g = w.subgraph()
    xi = g.tensor([1, 6, 6, 2], name="x0")
    zero = 3 if dtype == np.int8 else 128
    xq = g.tensor([1, 6, 6, 2], dtype, scale=0.02, zero_point=zero)
    g.op("QUANTIZE", [xi], [xq])
    scales = np.array([0.01, 0.02, 0.015], np.float32)
    if dtype == np.uint8:
        # LiteRT's uint8 kernels take per-tensor quantized uint8 weights only.
        scales = np.full(3, 0.015, np.float32)
        weights = RNG.integers(0, 256, (3, 3, 3, 2)).astype(np.uint8)
        wi = g.const(weights, scale=scales[:1], zero_point=[128])
        bias_scale, bias_zero = scales[:1] * 0.02, [0]
    else:
        weights = RNG.integers(-127, 128, (3, 3, 3, 2)).astype(np.int8)
        wi = g.const(weights, scale=scales, zero_point=np.zeros(3, np.int64), axis=0)
        bias_scale, bias_zero = scales * 0.02, np.zeros(3, np.int64)
    bias = g.const(RNG.integers(-500, 500, 3).astype(np.int32), scale=bias_scale, zero_point=bias_zero)
    yq = g.tensor([1, 6, 6, 3], dtype, name="yq", scale=0.05, zero_point=-2 if dtype == np.int8 else 120)
    g.op("CONV_2D", [xq, wi, bias], [yq], conv_opts(0, act=1))
    y = g.tensor([1, 6, 6, 3], name="y")
    g.op("DEQUANTIZE", [yq], [y])
    g.io([xi], [y, yq])
    return w.finish()


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_quantized_model(dtype):
    """Integer kernels round once per requantization; ours compute in float and
    round onto the same grid, so results may differ by one quantum (0.05)."""
    x = rand(1, 6, 6, 2)
    model = _quantized_conv(dtype)
    reference = litert_run(model, {"x0": x})
    ours = webnn_run(model, {"x0": x})
    assert ours["yq"].dtype == reference["yq"].dtype == dtype
    assert np.abs(ours["yq"].astype(int) - reference["yq"].astype(int)).max() <= 1
    assert np.abs(ours["y"] - reference["y"]).max() <= 0.05 + 1e-6
    assert np.mean(ours["yq"] == reference["yq"]) > 0.95


def test_uint8_model_input():
    """A model whose input itself is quantized: the graph input is uint8."""
    w = ModelWriter()
    g = w.subgraph()
    xq = g.tensor([1, 4, 4, 1], np.uint8, name="x0", scale=0.1, zero_point=10)
    y = g.tensor([1, 4, 4, 1], name="y")
    g.op("DEQUANTIZE", [xq], [y])
    g.io([xq], [y])
    x = RNG.integers(0, 256, (1, 4, 4, 1)).astype(np.uint8)
    check(w.finish(), {"x0": x})


def test_multiple_signatures_and_subgraphs():
    w = ModelWriter()
    for i, code in enumerate(["RELU", "TANH"]):
        g = w.subgraph(f"graph{i}")
        x = g.tensor([3], name="in")
        y = g.tensor([3], name="out")
        g.op(code, [x], [y])
        g.io([x], [y])
        w.signature(f"sig_{code.lower()}", i, {"value": x}, {"result": y})
    model = w.finish()
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    default = webnn_run(model, {"value": x})
    np.testing.assert_array_equal(default["result"], np.maximum(x, 0))
    second = webnn_run(model, {"value": x}, signature="sig_tanh")
    np.testing.assert_allclose(second["result"], np.tanh(x), rtol=1e-6)
    with pytest.raises(NotSupportedError, match="no signature 'nope'"):
        webnn_run(model, {"value": x}, signature="nope")


def test_densify_sparse_weights():
    """A CSR-sparse 4x4 fp32 constant (dense rows, sparse columns) through DENSIFY."""
    from ai_edge_litert import schema_py_generated as schema
    dense = np.array([[1, 0, 0, 2], [0, 0, 0, 0], [0, 3, 4, 0], [5, 0, 0, 6]], np.float32)
    sparsity = schema.SparsityParametersT()
    sparsity.traversalOrder, sparsity.blockMap = [0, 1], []
    d0 = schema.DimensionMetadataT()
    d0.format, d0.denseSize = schema.DimensionType.DENSE, 4
    d1 = schema.DimensionMetadataT()
    d1.format = schema.DimensionType.SPARSE_CSR
    seg, idx = schema.Int32VectorT(), schema.Int32VectorT()
    seg.values, idx.values = [0, 2, 2, 4, 6], [0, 3, 1, 2, 0, 3]
    d1.arraySegmentsType, d1.arraySegments = schema.SparseIndexVector.Int32Vector, seg
    d1.arrayIndicesType, d1.arrayIndices = schema.SparseIndexVector.Int32Vector, idx
    sparsity.dimMetadata = [d0, d1]
    w = ModelWriter()
    g = w.subgraph()
    xi = g.tensor([2, 4], name="x0")
    sparse = g.tensor([4, 4], np.float32, data=dense[dense != 0], sparsity=sparsity)
    weights = g.tensor([4, 4])
    g.op("DENSIFY", [sparse], [weights])
    y = g.tensor([2, 4], name="y")
    g.op("FULLY_CONNECTED", [xi, weights, -1], [y], options("FullyConnectedOptions"))
    g.io([xi], [y])
    x = rand(2, 4)
    ours = check(w.finish(), {"x0": x})
    np.testing.assert_allclose(ours["y"], x @ dense.T, rtol=1e-5, atol=1e-6)


def test_unsupported_operator_names_the_op():
    x = rand(4)
    model = single_op("BITCAST", [x.shape, x.shape], [4])
    with pytest.raises(NotSupportedError, match="BITCAST"):
        webnn_run(model, {"x0": x, "x1": x})
    custom = single_op("CUSTOM", [x.shape], [4], custom="MyFancyOp")
    with pytest.raises(NotSupportedError, match="MyFancyOp"):
        webnn_run(custom, {"x0": x})
