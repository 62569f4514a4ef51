"""Pooling and resizing: MAX_POOL_2D, AVERAGE_POOL_2D, L2_POOL_2D, RESIZE_BILINEAR,
RESIZE_NEAREST_NEIGHBOR.

WebNN's resample2d "linear" is exactly TFLite's bilinear resize with
half_pixel_centers (both clamp the source coordinate to the edges). TFLite's
other coordinate rules (align_corners, and the legacy "asymmetric" default)
and all its nearest-neighbour rules round differently, so those are built from
gather() with precomputed source indices plus a constant-weight blend: the
same values TFLite computes, from ordinary builder calls.
"""
from __future__ import annotations

import numpy as np

from . import options as opt


def _pool(method: str):
    def translate(ctx):
        """Pool2DOptions: padding 0, stride_w 1, stride_h 2, filter_width 3,
        filter_height 4, fused_activation 5."""
        x = ctx.input(0)
        if len(x.shape) != 4:
            raise ctx.fail(f"its input must be 4-D (NHWC), it is {list(x.shape)}")
        window = [opt.read(ctx, 4, "i32"), opt.read(ctx, 3, "i32")]
        strides = [opt.read(ctx, 2, "i32"), opt.read(ctx, 1, "i32")]
        options = {"layout": "nhwc", "windowDimensions": window, "strides": strides,
                   "padding": opt.padding_2d(ctx, opt.read(ctx, 0, "i8"), x.shape[1:3], window, strides)}
        if method == "l2Pool2d":
            # TFLite's L2 pool is sqrt(sum(x^2) / n) over the n elements inside the
            # input; WebNN's l2Pool2d is the L2 norm, sqrt(sum(x^2)), with no division.
            # The mean of squares is averagePool2d of x^2 (padding excluded, as here).
            out = ctx.b.sqrt(ctx.b.averagePool2d(ctx.b.mul(x, x), options))
        else:
            out = getattr(ctx.b, method)(x, options)
        ctx.set_output(0, ctx.activation(out, opt.read(ctx, 5, "i8")))
    return translate


def _sizes(ctx):
    x = ctx.input(0)
    if len(x.shape) != 4:
        raise ctx.fail(f"its input must be 4-D (NHWC), it is {list(x.shape)}")
    size = [int(v) for v in np.asarray(ctx.required_const(1, "size")).reshape(-1)]
    if len(size) != 2 or min(size) < 1:
        raise ctx.fail(f"size {size} must be two positive numbers")
    return x, size


def _scale(in_size: int, out_size: int, align_corners: bool) -> float:
    if align_corners and out_size > 1:
        return (in_size - 1) / (out_size - 1)
    return in_size / out_size


def _blend(ctx, x, axis: int, i0: np.ndarray, i1: np.ndarray, t: np.ndarray):
    """x[i0] * (1 - t) + x[i1] * t along `axis`, t broadcast along that axis."""
    shape = [1] * len(x.shape)
    shape[axis] = len(t)
    dtype = np.float16 if x.dataType == "float16" else np.float32
    a = ctx.b.gather(x, ctx.constant_operand(i0.astype(np.int32)), {"axis": axis})
    if np.array_equal(i0, i1) or not t.any():
        return a
    b = ctx.b.gather(x, ctx.constant_operand(i1.astype(np.int32)), {"axis": axis})
    weight = ctx.constant_operand(t.astype(dtype).reshape(shape))
    # a + (b - a) * t, TFLite's order of operations for the float kernel.
    return ctx.b.add(a, ctx.b.mul(ctx.b.sub(b, a), weight))


def resize_bilinear(ctx):
    """ResizeBilinearOptions: align_corners 2, half_pixel_centers 3 (slots 0-1 are deprecated)."""
    x, size = _sizes(ctx)
    align = bool(opt.read(ctx, 2, "bool", False))
    half = bool(opt.read(ctx, 3, "bool", False))
    if half and not align:
        ctx.set_output(0, ctx.b.resample2d(x, {"mode": "linear", "sizes": size, "axes": [1, 2]}))
        return
    out = x
    for axis, out_size in ((1, size[0]), (2, size[1])):
        in_size = x.shape[axis]
        scale = _scale(in_size, out_size, align)
        o = np.arange(out_size, dtype=np.float64)
        source = (o + 0.5) * scale - 0.5 if half else o * scale
        source = source.astype(np.float32).astype(np.float64)   # TFLite computes it in float
        low = np.floor(source)
        i0 = np.clip(low, 0, in_size - 1).astype(np.int64)
        i1 = np.minimum(np.ceil(source), in_size - 1).astype(np.int64) if half else np.minimum(i0 + 1, in_size - 1)
        t = source - low
        out = _blend(ctx, out, axis, i0, np.maximum(i1, 0), t)
    ctx.set_output(0, out)


def resize_nearest_neighbor(ctx):
    """ResizeNearestNeighborOptions: align_corners 0, half_pixel_centers 1."""
    x, size = _sizes(ctx)
    align = bool(opt.read(ctx, 0, "bool", False))
    half = bool(opt.read(ctx, 1, "bool", False))
    out = x
    for axis, out_size in ((1, size[0]), (2, size[1])):
        in_size = x.shape[axis]
        scale = np.float32(_scale(in_size, out_size, align))
        o = np.arange(out_size, dtype=np.float32)
        source = (o + np.float32(0.5 if half else 0.0)) * scale
        # TFLite rounds halves away from zero (std::round); the sources are never negative.
        index = np.floor(source + np.float32(0.5)) if align else np.floor(source)
        index = np.clip(index, 0, in_size - 1).astype(np.int32)
        if not np.array_equal(index, np.arange(in_size)) or in_size != out_size:
            out = ctx.b.gather(out, ctx.constant_operand(index), {"axis": axis})
    if out is x:
        out = ctx.b.identity(x)
    ctx.set_output(0, out)


TRANSLATORS = {
    "MAX_POOL_2D": _pool("maxPool2d"),
    "AVERAGE_POOL_2D": _pool("averagePool2d"),
    "L2_POOL_2D": _pool("l2Pool2d"),
    "RESIZE_BILINEAR": resize_bilinear,
    "RESIZE_NEAREST_NEIGHBOR": resize_nearest_neighbor,
}
