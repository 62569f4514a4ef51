"""Interpolate-1, -4 and -11 (nearest, linear, linear_onnx, cubic).

Every mode is separable: each output position along a resized axis reads a
few input positions (taps) with fixed weights, all known at load time from
the sizes, the coordinate_transformation_mode and the nearest_mode. So:

  * when the taps are those of WebNN's resample2d (half-pixel coordinates,
    clamped; nearest rounds ties down) on at most two axes of a 4-D tensor,
    the layer becomes one resample2d;
  * otherwise each resized axis becomes gathers of its taps (constant indices)
    weighted by constant factors and summed: exactly the operation's formula.

Interpolate-1 maps onto the same taps; antialiasing and the area and Pillow
modes are not translated.
"""
from __future__ import annotations

import math

import numpy as np

FLOATS = ("float32", "float16")


def _coordinates(t, mode: str, out_size: int, in_size: int, scale: float) -> np.ndarray:
    """The input coordinate of every output position (the operation's
    get_original_coordinate), in float64."""
    o = np.arange(out_size, dtype=np.float64)
    if mode == "half_pixel":
        return (o + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (o + 0.5) / scale - 0.5 if out_size > 1 else np.zeros(out_size)
    if mode == "asymmetric":
        return o / scale
    if mode == "tf_half_pixel_for_nn":
        return (o + 0.5) / scale
    if mode == "align_corners":
        return o * (in_size - 1) / (out_size - 1) if out_size > 1 else np.zeros(out_size)
    raise t.malformed(f"coordinate_transformation_mode {mode!r} is not one of half_pixel, pytorch_half_pixel, "
                      "asymmetric, tf_half_pixel_for_nn, align_corners")


def _nearest(t, mode: str, c: np.ndarray, scale: float) -> np.ndarray:
    if mode == "round_prefer_floor":
        return np.where(c == np.floor(c) + 0.5, np.floor(c), np.round(c))
    if mode == "round_prefer_ceil":
        return np.floor(c + 0.5)
    if mode == "floor":
        return np.floor(c)
    if mode == "ceil":
        return np.ceil(c)
    if mode == "simple":
        return np.ceil(c) if scale < 1 else np.trunc(c)
    raise t.malformed(f"nearest_mode {mode!r} is not one of round_prefer_floor, round_prefer_ceil, floor, ceil, "
                      "simple")


def _cubic_weights(frac: np.ndarray, a: float) -> list[np.ndarray]:
    """Keys' cubic convolution weights of the taps at -1, 0, 1, 2 from floor(c)."""
    def near(d):          # |d| <= 1
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d):           # 1 < |d| < 2
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return [far(frac + 1), near(frac), near(1 - frac), far(2 - frac)]


def _taps(t, mode: str, in_size: int, out_size: int, scale: float, coordinate_mode: str,
          nearest_mode: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """[(input index per output position, weight per output position)] of one axis."""
    c = _coordinates(t, coordinate_mode, out_size, in_size, scale)
    last = in_size - 1
    if mode == "nearest":
        index = _nearest(t, nearest_mode, c, scale)
        return [(np.clip(index, 0, last).astype(np.int64), np.ones(out_size))]
    if mode in ("linear", "linear_onnx"):
        c = np.clip(c, 0, last)
        low = np.floor(c)
        frac = c - low
        return [(low.astype(np.int64), 1 - frac), (np.minimum(low + 1, last).astype(np.int64), frac)]
    # cubic: taps around floor(c), indices clamped to the axis.
    low = np.floor(c)
    weights = _cubic_weights(c - low, t.attr_float("cube_coeff", -0.75))
    return [(np.clip(low + k, 0, last).astype(np.int64), w) for k, w in zip((-1, 0, 1, 2), weights)]


def _resample2d_taps(in_size: int, out_size: int, mode: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """The taps WebNN's resample2d uses (§8.9.41: half-pixel, clamped)."""
    c = np.clip((np.arange(out_size) + 0.5) * in_size / out_size - 0.5, 0, in_size - 1)
    if mode == "nearest":
        return [(np.ceil(c - 0.5).astype(np.int64), np.ones(out_size))]
    low = np.floor(c)
    return [(low.astype(np.int64), 1 - (c - low)), (np.minimum(low + 1, in_size - 1).astype(np.int64), c - low)]


def _same_taps(a, b) -> bool:
    """The same sum: equal weights per index (taps of weight 0 ignored)."""
    def table(taps):
        entries = {}
        for index, weight in taps:
            for position, (i, w) in enumerate(zip(index, weight)):
                if abs(w) > 1e-12:
                    entries[(position, int(i))] = entries.get((position, int(i)), 0.0) + w
        return entries
    first, second = table(a), table(b)
    return first.keys() == second.keys() and all(abs(first[k] - second[k]) < 1e-9 for k in first)


def interpolate(t, inputs):
    """Interpolate-1/4/11. Interpolate-1's modes are those of -4 with
    coordinate_transformation_mode align_corners (align_corners=true) or
    asymmetric, nearest_mode simple, linear as linear_onnx: the conversion
    OpenVINO itself applies (its text gives no coordinate rule)."""
    data = inputs[0]
    shape = list(t.shape(data))
    rank = len(shape)
    coordinate_mode = t.layer.data.get("coordinate_transformation_mode", "half_pixel").lower()
    nearest_mode = t.layer.data.get("nearest_mode", "round_prefer_floor").lower()
    if t.layer.version == "opset1":
        t.arity(inputs, 2)
        sizes_value, scales_value, by_sizes = inputs[1], None, True
        axes_value = np.array(t.attr_ints("axes"), np.int64)
        align = t.attr_flag("align_corners")
        coordinate_mode, nearest_mode = ("align_corners" if align else "asymmetric"), "simple"
    elif t.layer.version == "opset11" or (t.layer.version != "opset4" and len(inputs) == 2):
        given, axes_value = inputs[1], (inputs[2] if len(inputs) == 3 else None)
        by_sizes = t.layer.data.get("shape_calculation_mode", "sizes").lower() == "sizes"
        sizes_value, scales_value = (given, None) if by_sizes else (None, given)
    else:
        t.arity(inputs, 3, 4)
        sizes_value, scales_value = inputs[1], inputs[2]
        axes_value = inputs[3] if len(inputs) == 4 else None
        by_sizes = t.layer.data.get("shape_calculation_mode", "sizes").lower() == "sizes"
    axes = [t.axis(a, rank, "axes item") for a in t.ints(axes_value, "axes")] if axes_value is not None \
        else list(range(rank))
    mode = t.layer.data.get("mode", "nearest").lower()
    if mode not in ("nearest", "linear", "linear_onnx", "cubic"):
        raise t.unsupported(f"mode {mode!r} is not supported (nearest, linear, linear_onnx, cubic are)")
    if t.attr_flag("antialias"):
        raise t.unsupported("antialias is not supported")
    x = t.operand(data)
    if x.dataType not in FLOATS and mode != "nearest":
        raise t.unsupported(f"{mode} interpolation of {x.dataType} is not supported (floats only)")
    begin = t.attr_ints("pads_begin", [0] * rank) or [0] * rank
    end = t.attr_ints("pads_end", [0] * rank) or [0] * rank
    if any(begin) or any(end):
        if any(v < 0 for v in begin + end):
            raise t.unsupported("negative pads_begin / pads_end are not supported")
        x = t.b.pad(x, begin, end)
        shape = list(x.shape)

    if by_sizes:
        sizes = t.ints(sizes_value, "sizes")
        if len(sizes) != len(axes):
            raise t.malformed(f"sizes {sizes} and axes {axes} differ in length")
        scales = [out / shape[a] for out, a in zip(sizes, axes)]
    else:
        scales = [float(v) for v in t.const(scales_value, "scales").reshape(-1)]
        if len(scales) != len(axes):
            raise t.malformed(f"scales {scales} and axes {axes} differ in length")
        # OpenVINO rounds the scaled size down after adding a small epsilon.
        sizes = [int(math.floor(shape[a] * s + 1e-5)) for a, s in zip(axes, scales)]
    if any(s < 1 for s in sizes):
        raise t.unsupported(f"output sizes {sizes} are empty; WebNN operands cannot be empty")
    wanted = list(shape)
    for a, out in zip(axes, sizes):
        wanted[a] = out
    t.check_extent(wanted, "the output shape")

    resized = [(a, out, s) for a, out, s in zip(axes, sizes, scales) if out != shape[a] or s != 1]
    if not resized:
        return [x]
    kind = "nearest" if mode == "nearest" else ("cubic" if mode == "cubic" else "linear")
    taps = {a: _taps(t, kind, shape[a], out, s, coordinate_mode, nearest_mode) for a, out, s in resized}
    if rank == 4 and len(resized) <= 2 and kind != "cubic":
        pair = [a for a, _, _ in resized]
        if len(pair) == 1:
            pair = sorted(pair + [next(a for a in (2, 3, 1, 0) if a != pair[0])])
        out_shape = list(shape)
        for a, out, _ in resized:
            out_shape[a] = out
        if all(_same_taps(taps[a], _resample2d_taps(shape[a], out_shape[a], kind)) for a in taps):
            return [t.b.resample2d(x, {"mode": "nearest-neighbor" if kind == "nearest" else "linear",
                                       "sizes": [out_shape[a] for a in pair], "axes": pair})]
    for a, _, _ in resized:
        x = _resample_axis(t, x, a, taps[a])
    return [x]


def _resample_axis(t, x, axis: int, taps):
    """Sum over the taps of gather(x, index, axis) * weight."""
    total = None
    broadcast = [1] * len(x.shape)
    for index, weight in taps:
        picked = t.b.gather(x, t.operand(index.astype(np.int32)), {"axis": axis})
        if not np.all(weight == 1):
            broadcast[axis] = weight.size
            picked = t.b.mul(picked, t.operand(weight.astype(np.dtype(x.dataType)).reshape(broadcast)))
        total = picked if total is None else t.b.add(total, picked)
    return total


TRANSLATORS = {"Interpolate": interpolate}
