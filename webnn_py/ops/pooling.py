"""Pooling operations (§8.9.37): averagePool2d, l2Pool2d, maxPool2d.

Padding is not data: an average divides by the number of window elements that
lie inside the input, l2 sums the squares of those elements, and max takes the
largest of them. (§8.9.37 describes the reductions over "the window" without
saying what padding contributes; excluding it is what WebNN's native backends
and WPT's expected values do, e.g. torch's count_include_pad=False.) Output
positions the ceil rounding adds past the ending padding are treated the same
way. A window with no element inside the input yields 0 for average and l2
and the lowest value of the type (-Infinity for floats) for max.
"""
from __future__ import annotations

import numpy as np

from ..base.descriptor import OperandDescriptor
from .convolution import (check_output_size, conv_output_ceil, conv_output_floor, from_nchw, join_layout,
                          list_option, spatial_windows, split_layout, to_nchw)
from .registry import ALL_TYPES, FLOATS, BuildContext, TensorLimits, compute_type, register

FLOAT4 = TensorLimits(FLOATS, 4, 4)
ANY4 = TensorLimits(ALL_TYPES, 4, 4)


def build(op: str):
    def method(ctx: BuildContext, input, options: dict):
        return _create_pooling(ctx, op, input, options)
    return method


def _create_pooling(ctx: BuildContext, op: str, input, options: dict):
    """§8.9.37 "create a pooling operation", steps 3-22."""
    input_desc = ctx.check("input", input)                                  # steps 3-5
    layout = options.get("layout", "nchw")
    batches, channels, input_height, input_width = split_layout(input_desc.shape, layout)   # step 6
    window = list_option(ctx, options, "windowDimensions", [input_height, input_width], 2,
                         nonzero=True)                                      # steps 7-9
    output_sizes = options.get("outputSizes")
    # Step 10 reads "if options.outputSizes exists, or if options.padding does not
    # exist, set options.padding to « 0, 0, 0, 0 »". We ignore the first half: it
    # would silently drop the caller's padding, which Chromium honours and WPT's
    # pooling tests combine with outputSizes: we read it as a spec bug.
    padding = list_option(ctx, options, "padding", [0, 0, 0, 0], 4)       # steps 10-11
    strides = list_option(ctx, options, "strides", [1, 1], 2, nonzero=True)  # steps 12-14
    if output_sizes is not None:                                            # step 15
        output_sizes = [int(v) for v in output_sizes]
        if len(output_sizes) != 2:
            ctx.fail(f"outputSizes must have 2 items, got {len(output_sizes)} ({output_sizes})")
        # Step 15.2 ("if its items are not smaller than the items of options.strides,
        # throw") is not applied: it would reject every outputSizes with the
        # default strides « 1, 1 » (an output size is at least 1), contradicting
        # step 20.3, which accepts either rounding of the calculated size.
    dilations = list_option(ctx, options, "dilations", [1, 1], 2, nonzero=True)  # steps 16-18
    # Step 20: the output shape, from "calculate conv2d output sizes" (§8.9.10).
    args_h = (input_height, window[0], padding[0], padding[1], strides[0], dilations[0])
    args_w = (input_width, window[1], padding[2], padding[3], strides[1], dilations[1])
    floor_size = (conv_output_floor(*args_h), conv_output_floor(*args_w))
    ceil_size = (conv_output_ceil(*args_h), conv_output_ceil(*args_w))
    if output_sizes is not None:
        if tuple(output_sizes) not in (floor_size, ceil_size):
            ctx.fail(f"outputSizes {output_sizes} is neither the floor {list(floor_size)} nor the ceiling "
                     f"{list(ceil_size)} of the calculated output size")
        output_height, output_width = output_sizes
    elif options.get("outputShapeRounding", "floor") == "floor":
        output_height, output_width = floor_size
    else:
        output_height, output_width = ceil_size
    check_output_size(ctx, output_height, output_width,
                      f"input {input_height} x {input_width}, window {window}, padding {padding}, "
                      f"strides {strides}, dilations {dilations}")
    shape = join_layout(batches, channels, output_height, output_width, layout)
    attributes = {"windowDimensions": window, "padding": padding, "strides": strides, "dilations": dilations,
                  "layout": layout, "outputSizes": [output_height, output_width]}
    return ctx.emit([input], [OperandDescriptor(input_desc.data_type, shape)], attributes)[0]


def _taps(x: np.ndarray, attributes: dict, fill):
    """The windows' elements of `x` (NCHW) padded with `fill`: either a list of
    [N, C, outH, outW] strided views, one per window offset, or (for large
    windows) a single [N, C, outH, outW, windowH, windowW] view. A loop over a
    few window offsets, each vectorised over every output element, is much
    faster in numpy than a reduction over a 6-D view; with many offsets (global
    pooling) the single reduction wins."""
    window, strides, dilations = attributes["windowDimensions"], attributes["strides"], attributes["dilations"]
    pt, pb, pl, pr = attributes["padding"]
    out_h, out_w = attributes["outputSizes"]
    h, w = x.shape[2:]
    # Ceil rounding may place the last windows past the ending padding: extend it.
    pb = max(pb, (out_h - 1) * strides[0] + (window[0] - 1) * dilations[0] + 1 - pt - h)
    pr = max(pr, (out_w - 1) * strides[1] + (window[1] - 1) * dilations[1] + 1 - pl - w)
    padded = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=fill)
    if window[0] * window[1] > _MAX_TAPS:
        return spatial_windows(padded, window, strides, dilations, (out_h, out_w))
    return [padded[:, :, i * dilations[0]:i * dilations[0] + (out_h - 1) * strides[0] + 1:strides[0],
                   j * dilations[1]:j * dilations[1] + (out_w - 1) * strides[1] + 1:strides[1]]
            for i in range(window[0]) for j in range(window[1])]


_MAX_TAPS = 64


def _inside_counts(size: int, window: int, begin: int, stride: int, dilation: int, out_size: int) -> np.ndarray:
    """For each output position along one axis, how many window offsets land inside the input."""
    positions = (np.arange(out_size)[:, None] * stride + np.arange(window)[None, :] * dilation - begin)
    return ((positions >= 0) & (positions < size)).sum(axis=1)


def _average_divisors(x: np.ndarray, attributes: dict) -> np.ndarray:
    (wh, ww), (sh, sw) = attributes["windowDimensions"], attributes["strides"]
    (dh, dw), (out_h, out_w) = attributes["dilations"], attributes["outputSizes"]
    pt, _, pl, _ = attributes["padding"]
    counts = np.outer(_inside_counts(x.shape[2], wh, pt, sh, dh, out_h),
                      _inside_counts(x.shape[3], ww, pl, sw, dw, out_w))
    return np.maximum(counts, 1)      # a window with nothing inside averages to 0, not NaN


def _reduce(taps, ufunc) -> np.ndarray:
    if isinstance(taps, np.ndarray):
        return ufunc.reduce(taps, axis=(-2, -1))
    result = taps[0].copy()
    for tap in taps[1:]:
        ufunc(result, tap, out=result)
    return result


def _is_global(x: np.ndarray, attributes: dict) -> bool:
    """One window covering the whole unpadded input (a classifier's global pooling)."""
    spatial = x.shape[2:] if attributes["layout"] == "nchw" else x.shape[1:3]
    return (list(attributes["windowDimensions"]) == list(spatial) and not any(attributes["padding"])
            and list(attributes["outputSizes"]) == [1, 1])


def _global(op: str, x: np.ndarray, layout: str) -> np.ndarray:
    """Global pooling as one reduction over the spatial axes of the input's own layout
    (for NHWC, whole contiguous rows of channels at a time) instead of window views."""
    axes = (2, 3) if layout == "nchw" else (1, 2)
    with np.errstate(invalid="ignore", over="ignore"):
        if op == "maxPool2d":
            return np.max(x, axis=axes, keepdims=True)
        if op == "l2Pool2d":
            return np.sqrt(np.sum(x * x, axis=axes, keepdims=True))
        count = x.shape[axes[0]] * x.shape[axes[1]]
        return np.sum(x, axis=axes, keepdims=True) / x.dtype.type(count)


def kernel(op: str):
    def compute(inputs, attributes, outputs):
        x = inputs[0]
        out_dtype = x.dtype
        ctype = compute_type(out_dtype)
        layout = attributes["layout"]
        if _is_global(x, attributes):
            return [_global(op, x.astype(ctype, copy=False), layout).astype(out_dtype, copy=False)]
        x = to_nchw(x, layout).astype(ctype, copy=False)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            if op == "maxPool2d":
                lowest = -np.inf if ctype.kind == "f" else np.iinfo(ctype).min
                result = _reduce(_taps(x, attributes, lowest), np.maximum)
            else:
                result = _reduce(_taps(x * x if op == "l2Pool2d" else x, attributes, 0), np.add)
                if op == "averagePool2d":
                    result /= _average_divisors(x, attributes).astype(ctype)
                else:
                    np.sqrt(result, out=result)
        return [np.ascontiguousarray(from_nchw(result, layout)).astype(out_dtype, copy=False)]
    return compute


register("averagePool2d", build=build("averagePool2d"), kernel=kernel("averagePool2d"),
         limits={"input": FLOAT4, "output": FLOAT4})
register("l2Pool2d", build=build("l2Pool2d"), kernel=kernel("l2Pool2d"),
         limits={"input": FLOAT4, "output": FLOAT4})
# maxPool2d passes no allowed data types to "create a pooling operation" (§8.9.37):
# any data type.
register("maxPool2d", build=build("maxPool2d"), kernel=kernel("maxPool2d"),
         limits={"input": ANY4, "output": ANY4})
