"""DFT-7, IDFT-7 and RDFT-9 as products with constant cosine/sine matrices.

A complex tensor is IR data with a trailing axis of 2 (real, imaginary); here
it is a pair of real operands. Along each transformed axis of length N (after
signal_size trims it or pads it with zeros), output k is
sum_n x_n e^(-+2 pi i k n / N):

    forward:  Yr = C xr + S xi,  Yi = C xi - S xr
    inverse:  Yr = C xr - S xi,  Yi = C xi + S xr,  then divided by N

with C[k, n] = cos(2 pi k n / N), S[k, n] = sin(2 pi k n / N) computed in
float64 and rounded once. RDFT's input is real, and its last transformed axis
keeps the N // 2 + 1 non-redundant outputs (keeping the first rows along one
axis commutes with the transforms along the others, so the axes go in the
given order). IRDFT is not translated.
"""
from __future__ import annotations

import math

import numpy as np


def _matrices(rows: int, size: int, dtype: str):
    k = np.arange(rows, dtype=np.float64).reshape(rows, 1)
    n = np.arange(size, dtype=np.float64).reshape(1, size)
    angle = 2 * math.pi * ((k * n) % size) / size
    return np.cos(angle).astype(dtype), np.sin(angle).astype(dtype)


def _resize_axis(t, x, axis: int, size: int):
    """x trimmed to, or padded with zeros up to, `size` along `axis`."""
    current = x.shape[axis]
    if size == current:
        return x
    if size < current:
        sizes = list(x.shape)
        sizes[axis] = size
        return t.b.slice(x, [0] * len(sizes), sizes)
    end = [0] * len(x.shape)
    end[axis] = size - current
    return t.b.pad(x, [0] * len(x.shape), end)


def _along(t, x, axis: int, matrix: np.ndarray):
    """matrix [M, N] applied to x along `axis` (of length N)."""
    rank = len(x.shape)
    order = list(range(rank))
    order[axis], order[-1] = order[-1], order[axis]
    moved = t.b.transpose(x, {"permutation": order}) if axis != rank - 1 else x
    product = t.b.matmul(moved, t.operand(np.ascontiguousarray(matrix.T)))
    return t.b.transpose(product, {"permutation": order}) if axis != rank - 1 else product


def fourier(t, inputs):
    t.arity(inputs, 2, 3)
    kind = t.layer.type
    data = t.operand(inputs[0])
    if data.dataType not in ("float32", "float16"):
        raise t.unsupported(f"{kind} of {data.dataType} is not supported (floats)")
    real_input = kind == "RDFT"
    shape = list(data.shape)
    if not real_input and (len(shape) < 2 or shape[-1] != 2):
        raise t.malformed(f"complex data {shape} does not end in an axis of 2")
    rank = len(shape) if real_input else len(shape) - 1
    axes = [t.axis(a, rank, "axes item") for a in t.ints(inputs[1], "axes")]
    if len(set(axes)) != len(axes) or not axes:
        raise t.malformed(f"axes {axes} repeat an axis or are empty")
    sizes = t.ints(inputs[2], "signal_size") if len(inputs) == 3 else [-1] * len(axes)
    if len(sizes) != len(axes):
        raise t.malformed(f"signal_size {sizes} and axes {axes} differ in length")
    if real_input:
        re, im = data, None
    else:
        inner = shape[:-1]
        re = t.b.reshape(t.b.slice(data, [0] * len(shape), inner + [1]), inner)
        im = t.b.reshape(t.b.slice(data, [0] * (len(shape) - 1) + [1], inner + [1]), inner)
    inverse = kind == "IDFT"
    dtype = data.dataType
    scale = 1
    for position, (axis, size) in enumerate(zip(axes, sizes)):
        size = re.shape[axis] if size == -1 else size
        if size < 1:
            raise t.malformed(f"signal_size {size} is not positive")
        t.check_extent([size, size], "the transform matrix")
        re = _resize_axis(t, re, axis, size)
        im = None if im is None else _resize_axis(t, im, axis, size)
        last_real_axis = real_input and position == len(axes) - 1
        cos, sin = _matrices(size // 2 + 1 if last_real_axis else size, size, dtype)
        if im is None:
            re, im = _along(t, re, axis, cos), _along(t, re, axis, -sin)
        else:
            c_re, c_im = _along(t, re, axis, cos), _along(t, im, axis, cos)
            s_re, s_im = _along(t, re, axis, sin), _along(t, im, axis, sin)
            if inverse:
                re, im = t.b.sub(c_re, s_im), t.b.add(c_im, s_re)
            else:
                re, im = t.b.add(c_re, s_im), t.b.sub(c_im, s_re)
        scale *= size
    if inverse:
        factor = t.operand(np.array(1 / scale, np.dtype(dtype)))
        re, im = t.b.mul(re, factor), t.b.mul(im, factor)
    column = list(re.shape) + [1]
    return [t.b.concat([t.b.reshape(re, column), t.b.reshape(im, column)], len(column) - 1)]


TRANSLATORS = {"DFT": fourier, "IDFT": fourier, "RDFT": fourier}
