"""resample2d (§8.9.41): nearest-neighbor and (bi)linear resampling of two axes.

Both modes are separable, so the kernel resamples one axis at a time: the
second axis (the spec's x) first, then the first (y), which reproduces the
spec's bilinear formula term for term (vy0, vy1 along x, then along y).

Coordinates follow the spec's half-pixel mapping with scale = outputSize /
inputSize (the sizes, not the requested scales, as the spec writes it):
    inputCoordinate = clamp((outputCoordinate + 0.5) * inputSize / outputSize - 0.5, 0, inputSize - 1)

The spec does not say how linear results become integers for int8/uint8: we
round the exact rational result to the nearest integer, ties to even.
"""
from __future__ import annotations

import numpy as np

from ..base.descriptor import OperandDescriptor
from .convolution import valid_dimension
from .registry import BuildContext, TensorLimits, compute_type, register

LIMITS = TensorLimits(("float32", "float16", "uint8", "int8"), 4, 4)


def build(ctx: BuildContext, input, options: dict):
    """§8.9.41 resample2d(input, options), steps 2-12."""
    input_desc = ctx.check("input", input)                                  # steps 2-4
    scales = options.get("scales")
    if scales is None:                                                      # step 5
        scales = [1.0, 1.0]
    else:                                                                   # step 6
        scales = [float(s) for s in scales]
        if any(s <= 0 for s in scales) or len(scales) != 2:
            ctx.fail(f"scales must be 2 values greater than 0, got {scales}")
    sizes = options.get("sizes")
    if sizes is not None:                                                   # step 7
        sizes = [int(s) for s in sizes]
        if len(sizes) != 2 or any(s == 0 for s in sizes):
            ctx.fail(f"sizes must be 2 values greater than 0, got {sizes}")
    axes = options.get("axes")
    if axes is None:                                                        # step 8
        axes = [2, 3]
    else:                                                                   # step 9
        axes = [int(a) for a in axes]
        # The spec's step 9 omits the size check the IDL's "a list of length 2"
        # implies; step 10 reads scales[index]/sizes[index] for every axis, which
        # only exist for 2 of them.
        if len(axes) != 2:
            ctx.fail(f"axes must have 2 items, got {len(axes)} ({axes})")
        if len(set(axes)) != len(axes):
            ctx.fail(f"axes {axes} contain a duplicate")
        for axis in axes:
            ctx.axis("axes item", axis, input_desc.rank)
    shape = list(input_desc.shape)                                          # step 10
    for index, axis in enumerate(axes):
        if sizes is not None:
            size = sizes[index]
        else:
            size = int(np.floor(input_desc.shape[axis] * scales[index]))
        if not valid_dimension(size):
            ctx.fail(f"the output size {size} of axis {axis} is not a valid dimension "
                     f"(input size {input_desc.shape[axis]}, scale {scales[index]})")
        shape[axis] = size
    attributes = {"mode": options.get("mode", "nearest-neighbor"), "axes": axes}
    return ctx.emit([input], [OperandDescriptor(input_desc.data_type, tuple(shape))], attributes)[0]


def _nearest_indices(in_size: int, out_size: int) -> np.ndarray:
    """x = ceil(clamp(c, 0, in - 1) - 0.5) in exact integer arithmetic:
    c - 0.5 = ((2*o + 1) * in - 2*out) / (2*out), and a ceiling of a ratio of
    integers needs no floating point, so ties (c - 0.5 an integer) round
    down exactly as the spec's ceil(c - 0.5) says."""
    o = np.arange(out_size, dtype=np.int64)
    numerator = (2 * o + 1) * in_size - 2 * out_size
    # np.take wants np.intp indices (int32 on wasm32, where int64 will not cast).
    return np.clip(-(-numerator // (2 * out_size)), 0, in_size - 1).astype(np.intp)


def _linear_taps(in_size: int, out_size: int):
    """x0, x1 and the weight t of x1 for each output coordinate."""
    o = np.arange(out_size, dtype=np.float64)
    coordinate = np.clip((o + 0.5) * (in_size / out_size) - 0.5, 0, in_size - 1)
    x0 = np.floor(coordinate)
    x1 = np.ceil(coordinate)
    return x0.astype(np.intp), x1.astype(np.intp), coordinate - x0


def _linear_taps_exact(in_size: int, out_size: int):
    """x0, x1 and the integer weights (of x0, of x1) over the common denominator
    2 * out_size: the coordinate is exactly ((2*o + 1) * in - out) / (2 * out)."""
    denominator = 2 * out_size
    o = np.arange(out_size, dtype=np.int64)
    numerator = np.clip((2 * o + 1) * in_size - out_size, 0, (in_size - 1) * denominator)
    x0 = numerator // denominator
    remainder = numerator - x0 * denominator
    return (x0.astype(np.intp), (x0 + (remainder > 0)).astype(np.intp), denominator - remainder, remainder,
            denominator)


def kernel(inputs, attributes, outputs):
    x = inputs[0]
    out_dtype = x.dtype
    out_shape = outputs[0].shape
    axes = attributes["axes"]
    if attributes["mode"] == "linear":
        result = _linear(x, axes, out_shape)
    else:
        result = x
        for axis in axes:
            if x.shape[axis] != out_shape[axis]:
                result = np.take(result, _nearest_indices(x.shape[axis], out_shape[axis]), axis=axis)
    if result is x:
        result = x.copy()       # sizes equal to the input's: still a fresh array
    return [np.ascontiguousarray(result).astype(out_dtype, copy=False)]


def _weights(values: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    shape = [1] * ndim
    shape[axis] = values.size
    return values.reshape(shape)


def _linear(x: np.ndarray, axes, out_shape) -> np.ndarray:
    # The second axis (x) first, then the first (y): the spec's order of terms.
    order = list(reversed(axes))
    if x.dtype.kind != "f":
        denominators = 1
        for axis in axes:
            denominators *= 2 * out_shape[axis]
        # 8-bit values times both denominators (and twice the remainder) must fit int64.
        if denominators < 2**53:
            return _linear_integer(x, order, out_shape)
    # Floats compute as compute_type says; integers too large for the exact path
    # interpolate in float64 and round to nearest, ties to even.
    ctype = compute_type(x.dtype) if x.dtype.kind == "f" else np.dtype(np.float64)
    result = x.astype(ctype, copy=False)
    for axis in order:
        x0, x1, t = _linear_taps(x.shape[axis], out_shape[axis])
        t = _weights(t.astype(ctype), axis, x.ndim)
        result = np.take(result, x0, axis=axis) * (1 - t) + np.take(result, x1, axis=axis) * t
    if x.dtype.kind != "f":
        info = np.iinfo(x.dtype)
        result = np.clip(np.rint(result), info.min, info.max)
    return result


def _linear_integer(x: np.ndarray, order, out_shape) -> np.ndarray:
    """int8/uint8: the spec's formula on exact rationals (integer numerators
    over a common denominator), rounded once to the nearest integer, ties to
    even; so equal inputs give equal, platform-independent results."""
    result = x.astype(np.int64)
    scale = 1
    for axis in order:
        x0, x1, w0, w1, denominator = _linear_taps_exact(x.shape[axis], out_shape[axis])
        result = (np.take(result, x0, axis=axis) * _weights(w0, axis, x.ndim)
                  + np.take(result, x1, axis=axis) * _weights(w1, axis, x.ndim))
        scale *= denominator
    quotient, remainder = np.divmod(result, scale)        # floor division: 0 <= remainder < scale
    round_up = (2 * remainder > scale) | ((2 * remainder == scale) & (quotient % 2 == 1))
    return quotient + round_up


register("resample2d", build=build, kernel=kernel, limits={"input": LIMITS, "output": LIMITS})
