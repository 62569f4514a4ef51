"""Convolutions and fully connected layers: CONV_2D, DEPTHWISE_CONV_2D, CONV_3D,
CONV_3D_TRANSPOSE, TRANSPOSE_CONV, MediaPipe's custom Convolution2DTransposeBias, FULLY_CONNECTED.

TFLite keeps activations NHWC and filters OHWI (depthwise: 1HW(I*M)), which
WebNN's conv2d takes as they are (inputLayout "nhwc"; filterLayout "ohwi",
or "ihwo" for depthwise, whose filter is exactly [1, H, W, I*M]).
"""
from __future__ import annotations

import struct

import numpy as np

from . import options as opt

# Filter depth slices a 3-D convolution may become (one conv2d each).
MAX_FILTER_DEPTH = 256


def _shape4(ctx, k: int, what: str):
    shape = ctx.input_tensor(k).shape
    if len(shape) != 4:
        raise ctx.fail(f"its {what} must be 4-D, it is {list(shape)}")
    return shape


def conv_2d(ctx):
    """Conv2DOptions: padding 0, stride_w 1, stride_h 2, fused_activation 3, dilation_w 4, dilation_h 5."""
    n, h, w, c = _shape4(ctx, 0, "input")
    o, kh, kw, ci = _shape4(ctx, 1, "filter")
    strides = [opt.read(ctx, 2, "i32"), opt.read(ctx, 1, "i32")]
    dilations = [opt.read(ctx, 5, "i32", 1), opt.read(ctx, 4, "i32", 1)]
    if ci < 1 or c % ci:
        raise ctx.fail(f"the filter's {ci} input channels do not divide the input's {c}")
    options = {
        "inputLayout": "nhwc", "filterLayout": "ohwi", "strides": strides, "dilations": dilations,
        "padding": opt.padding_2d(ctx, opt.read(ctx, 0, "i8"), (h, w), (kh, kw), strides, dilations),
        "groups": c // ci,
    }
    if ctx.has_input(2):
        options["bias"] = ctx.input(2)
    out = ctx.b.conv2d(ctx.input(0), ctx.input(1), options)
    ctx.set_output(0, ctx.activation(out, opt.read(ctx, 3, "i8")))


def depthwise_conv_2d(ctx):
    """DepthwiseConv2DOptions: padding 0, stride_w 1, stride_h 2, depth_multiplier 3,
    fused_activation 4, dilation_w 5, dilation_h 6."""
    n, h, w, c = _shape4(ctx, 0, "input")
    one, kh, kw, oc = _shape4(ctx, 1, "filter")
    if one != 1 or c < 1 or oc % c:
        raise ctx.fail(f"a depthwise filter {[one, kh, kw, oc]} does not fit {c} input channels")
    strides = [opt.read(ctx, 2, "i32"), opt.read(ctx, 1, "i32")]
    dilations = [opt.read(ctx, 6, "i32", 1), opt.read(ctx, 5, "i32", 1)]
    options = {
        "inputLayout": "nhwc", "filterLayout": "ihwo", "strides": strides, "dilations": dilations,
        "padding": opt.padding_2d(ctx, opt.read(ctx, 0, "i8"), (h, w), (kh, kw), strides, dilations),
        "groups": c,
    }
    if ctx.has_input(2):
        options["bias"] = ctx.input(2)
    out = ctx.b.conv2d(ctx.input(0), ctx.input(1), options)
    ctx.set_output(0, ctx.activation(out, opt.read(ctx, 4, "i8")))


def _transpose_conv(ctx, input_k, filter_k, bias_k, padding, strides, activation):
    n, h, w, c = _shape4(ctx, input_k, "input")
    o, kh, kw, ci = _shape4(ctx, filter_k, "filter")
    out_shape = ctx.output_tensor(0).shape
    if len(out_shape) != 4:
        raise ctx.fail(f"its output must be 4-D, it is {list(out_shape)}")
    oh, ow = out_shape[1], out_shape[2]
    for s in strides:
        opt.positive(ctx, s, "a stride")
    if padding == opt.SAME:
        pads = []
        for in_size, k, s, out in ((h, kh, strides[0], oh), (w, kw, strides[1], ow)):
            total = max((in_size - 1) * s + k - out, 0)
            pads += [total // 2, total - total // 2]
    elif padding == opt.VALID:
        pads = [0, 0, 0, 0]
    else:
        raise ctx.fail(f"padding mode {padding} is not supported")
    options = {"inputLayout": "nhwc", "filterLayout": "ohwi", "strides": list(strides), "padding": pads,
               "outputSizes": [oh, ow]}
    if bias_k is not None and ctx.has_input(bias_k):
        options["bias"] = ctx.input(bias_k)
    out = ctx.b.convTranspose2d(ctx.input(input_k), ctx.input(filter_k), options)
    ctx.set_output(0, ctx.activation(out, activation))


def transpose_conv(ctx):
    """TRANSPOSE_CONV inputs: output_shape, weights (OHWI), input, optional bias.
    TransposeConvOptions: padding 0, stride_w 1, stride_h 2, fused_activation 3."""
    shape = ctx.required_const(0, "output shape")
    if [int(v) for v in shape.reshape(-1)] != list(ctx.output_tensor(0).shape):
        raise ctx.fail(f"the output_shape input {shape.tolist()} differs from the declared output shape")
    _transpose_conv(ctx, 2, 1, 3, opt.read(ctx, 0, "i8"),
                    (opt.read(ctx, 2, "i32"), opt.read(ctx, 1, "i32")), opt.read(ctx, 3, "i8"))


# TfLitePadding of the C API, which MediaPipe's custom options carry.
_C_PADDING = {1: opt.SAME, 2: opt.VALID}


def convolution_2d_transpose_bias(ctx):
    """MediaPipe's custom op: inputs input, weights (OHWI), bias; its custom options
    are the raw bytes of a C TfLiteTransposeConvParams {padding, stride_width,
    stride_height} (three little-endian int32, the C padding enum: 1 SAME, 2 VALID)."""
    raw = ctx.op.custom_options or b""
    if len(raw) < 12:
        raise ctx.fail(f"its custom options hold {len(raw)} bytes, 12 are needed")
    padding, stride_w, stride_h = struct.unpack_from("<iii", raw, 0)
    if padding not in _C_PADDING:
        raise ctx.fail(f"padding {padding} is not supported")
    _transpose_conv(ctx, 0, 1, 2, _C_PADDING[padding], (stride_h, stride_w), 0)


def fully_connected(ctx):
    """FullyConnectedOptions: fused_activation 0, weights_format 1, keep_num_dims 2."""
    if opt.read(ctx, 1, "i8") != 0:
        raise ctx.fail("shuffled weights formats are not supported")
    shape = ctx.input_tensor(0).shape
    weights = ctx.input_tensor(1).shape
    if len(weights) != 2 or weights[1] < 1:
        raise ctx.fail(f"its weights must be [units, depth], they are {list(weights)}")
    units, depth = weights
    total = int(np.prod(shape, dtype=np.int64))
    if total % depth:
        raise ctx.fail(f"an input of shape {list(shape)} cannot be split into rows of {depth}")
    x = ctx.b.reshape(ctx.input(0), [total // depth, depth])
    options = {"bTranspose": True}
    if ctx.has_input(2):
        options["c"] = ctx.input(2)
    out = ctx.b.gemm(x, ctx.input(1), options)
    out_shape = list(ctx.output_tensor(0).shape)
    if opt.read(ctx, 2, "bool", False) or out_shape != [total // depth, units]:
        out = ctx.b.reshape(out, out_shape)
    ctx.set_output(0, ctx.activation(out, opt.read(ctx, 0, "i8")))


def _conv_3d_steps(ctx, kd: int) -> tuple[list[int], list[int]]:
    """Conv3DOptions' strides (stride_d 1, stride_h 3, stride_w 2) and dilations
    (5, 7, 6) in depth, height, width order, each at least 1; the filter depth kd
    within the slices the importer unrolls."""
    if kd > MAX_FILTER_DEPTH:
        raise ctx.fail(f"its filter depth {kd} is more than the {MAX_FILTER_DEPTH} slices the importer unrolls")
    strides = [opt.read(ctx, 1, "i32", 1), opt.read(ctx, 3, "i32", 1), opt.read(ctx, 2, "i32", 1)]
    dilations = [opt.read(ctx, 5, "i32", 1), opt.read(ctx, 7, "i32", 1), opt.read(ctx, 6, "i32", 1)]
    for v in strides + dilations:
        opt.positive(ctx, v, "a stride or dilation")
    return strides, dilations


def conv_3d(ctx):
    """Conv3DOptions: padding 0, stride_d 1, stride_w 2, stride_h 3, fused_activation 4,
    dilation_d 5, dilation_w 6, dilation_h 7. Input NDHWC, filter DHWIO, optional bias.
    WebNN's convolutions are 2-D, so the depth is folded into the batch: each filter
    depth slice kd is a conv2d over every input depth at once, and output depth d sums
    slice kd's result at input depth d * stride - pad_front + kd * dilation."""
    b = ctx.b
    x, w = ctx.input(0), ctx.input(1)
    if len(x.shape) != 5 or len(w.shape) != 5:
        raise ctx.fail(f"its input {list(x.shape)} and filter {list(w.shape)} must be 5-D (NDHWC, DHWIO)")
    n, depth, h, wi, c = x.shape
    kd, kh, kw, ci, co = w.shape
    if ci != c:
        raise ctx.fail(f"the filter's {ci} input channels differ from the input's {c}")
    strides, dilations = _conv_3d_steps(ctx, kd)
    padding = opt.read(ctx, 0, "i8")
    planes = opt.padding_2d(ctx, padding, (h, wi), (kh, kw), strides[1:], dilations[1:])
    front, back = (opt.same_padding(ctx, depth, kd, strides[0], dilations[0]) if padding == opt.SAME
                   else (0, 0))
    out_depth = (depth + front + back - ((kd - 1) * dilations[0] + 1)) // strides[0] + 1
    if out_depth < 1:
        raise ctx.fail(f"the filter depth {kd} does not fit the input depth {depth}")
    folded = b.reshape(x, [n * depth, h, wi, c])
    total = None
    for k in range(kd):
        plane = b.reshape(b.slice(w, [k, 0, 0, 0, 0], [1, kh, kw, ci, co]), [kh, kw, ci, co])
        y = b.conv2d(folded, plane, {"inputLayout": "nhwc", "filterLayout": "hwio", "strides": strides[1:],
                                     "dilations": dilations[1:], "padding": planes})
        oh, ow = y.shape[1:3]
        y = b.reshape(y, [n, depth, oh, ow, co])
        if front or back:
            y = b.pad(y, [0, front, 0, 0, 0], [0, back, 0, 0, 0])
        y = b.slice(y, [0, k * dilations[0], 0, 0, 0], [n, (out_depth - 1) * strides[0] + 1, oh, ow, co],
                    {"strides": [1, strides[0], 1, 1, 1]})
        total = y if total is None else b.add(total, y)
    if ctx.has_input(2):
        total = b.add(total, ctx.input(2))
    ctx.set_output(0, ctx.activation(total, opt.read(ctx, 4, "i8")))


def conv_3d_transpose(ctx):
    """CONV_3D_TRANSPOSE inputs: output_shape (a constant), filter DHWOI, input NDHWC,
    optional bias; Conv3DOptions as CONV_3D's. Each filter depth slice kd is a
    convTranspose2d over every input depth at once (depth folded into the batch);
    input depth i contributes to output depth i * stride + kd * dilation - pad_front,
    so the slice's result is spread over the depth with stride - 1 zeros between
    planes (ops_window.dilate), shifted by kd * dilation - pad_front and summed."""
    from .ops_window import dilate
    b = ctx.b
    shape = [int(v) for v in np.asarray(ctx.required_const(0, "output shape")).reshape(-1)]
    w, x = ctx.input(1), ctx.input(2)
    if len(x.shape) != 5 or len(w.shape) != 5 or len(shape) != 5:
        raise ctx.fail(f"its input {list(x.shape)}, filter {list(w.shape)} and output shape {shape} must be 5-D")
    n, depth, h, wi, c = x.shape
    kd, kh, kw, co, ci = w.shape
    if ci != c or shape[0] != n or shape[4] != co:
        raise ctx.fail(f"the filter {list(w.shape)} and output shape {shape} do not fit the input {list(x.shape)}")
    strides, dilations = _conv_3d_steps(ctx, kd)
    padding = opt.read(ctx, 0, "i8")
    pads = []
    for size, k, s, d, out in zip((depth, h, wi), (kd, kh, kw), strides, dilations, shape[1:4]):
        total = max((size - 1) * s + (k - 1) * d + 1 - out, 0) if padding == opt.SAME else 0
        if padding not in (opt.SAME, opt.VALID):
            raise ctx.fail(f"padding mode {padding} is not supported")
        pads.append((total // 2, total - total // 2))
    out_depth, oh, ow = shape[1:4]
    folded = b.reshape(x, [n * depth, h, wi, c])
    total = None
    for k in range(kd):
        plane = b.reshape(b.slice(w, [k, 0, 0, 0, 0], [1, kh, kw, co, ci]), [kh, kw, co, ci])
        y = b.convTranspose2d(folded, plane, {
            "inputLayout": "nhwc", "filterLayout": "hwoi", "strides": strides[1:], "dilations": dilations[1:],
            "padding": [*pads[1], *pads[2]], "outputSizes": [oh, ow]})
        y = dilate(ctx, b.reshape(y, [n, depth, oh, ow, co]), [1, strides[0], 1, 1, 1], 0.0)
        # Output depth o takes spread plane o - (kd * dilation - pad_front).
        shift = k * dilations[0] - pads[0][0]
        have = y.shape[1]
        start, before = max(-shift, 0), max(shift, 0)
        take = max(min(have - start, out_depth - before), 0)
        if take == 0:
            continue
        y = b.slice(y, [0, start, 0, 0, 0], [n, take, oh, ow, co])
        if before or out_depth - before - take:
            y = b.pad(y, [0, before, 0, 0, 0], [0, out_depth - before - take, 0, 0, 0])
        total = y if total is None else b.add(total, y)
    if total is None:
        ctx.check_made(shape, "its output")
        total = ctx.constant_operand(np.zeros(shape, np.float32))
    if ctx.has_input(3):
        total = b.add(total, ctx.input(3))
    ctx.set_output(0, ctx.activation(total, opt.read(ctx, 4, "i8")))


TRANSLATORS = {
    "CONV_2D": conv_2d,
    "CONV_3D": conv_3d,
    "CONV_3D_TRANSPOSE": conv_3d_transpose,
    "DEPTHWISE_CONV_2D": depthwise_conv_2d,
    "TRANSPOSE_CONV": transpose_conv,
    "Convolution2DTransposeBias": convolution_2d_transpose_bias,
    "FULLY_CONNECTED": fully_connected,
}
