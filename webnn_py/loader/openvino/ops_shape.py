"""Data-movement IR operations: Concat, Reshape, Squeeze, Unsqueeze, Transpose,
Gather and StridedSlice.

OpenVINO passes shapes, axes, permutations and slice bounds as (usually i64)
tensors; WebNN takes them as plain numbers, so they must be constants at load
time (they are, in IR that has been through OpenVINO's constant folding). When
the data is a constant too, the operation is done here in numpy, so constant
shape arithmetic stays constant.
"""
from __future__ import annotations

import numpy as np


def _bool_attr(t, key: str, default: bool) -> bool:
    text = t.layer.data.get(key)
    return default if text is None else text.strip().lower() in ("true", "1")


def concat(t, inputs):
    if not inputs:
        raise t.malformed("Concat has no inputs")
    rank = len(t.shape(inputs[0]))
    axis = t.axis(t.attr_int("axis"), rank)
    if all(isinstance(v, np.ndarray) for v in inputs):
        try:
            return [np.concatenate(inputs, axis=axis)]
        except ValueError as exc:
            raise t.malformed(f"the inputs cannot be joined: {exc}") from None
    return [t.b.concat([t.operand(v) for v in inputs], axis)]


def reshape(t, inputs):
    if len(inputs) != 2:
        raise t.malformed(f"Reshape takes 2 inputs, not {len(inputs)}")
    data, target = inputs
    shape_in = t.shape(data)
    wanted = t.ints(target, "the target shape")
    special_zero = _bool_attr(t, "special_zero", False)
    out, infer = [], None
    for i, d in enumerate(wanted):
        if d == 0 and special_zero:
            if i >= len(shape_in):
                raise t.malformed(f"target shape {wanted} copies dimension {i} (special_zero) of a rank-"
                                  f"{len(shape_in)} input")
            d = shape_in[i]
        elif d == -1:
            if infer is not None:
                raise t.malformed(f"target shape {wanted} has more than one -1")
            infer = i
        elif d < 0:
            raise t.malformed(f"target shape {wanted} has a negative dimension")
        out.append(d)
    size = int(np.prod(shape_in, dtype=np.int64))
    if infer is not None:
        known = int(np.prod([d for i, d in enumerate(out) if i != infer], dtype=np.int64))
        if known == 0 or size % known:
            raise t.malformed(f"cannot infer the -1 of target shape {wanted} for input shape {list(shape_in)}")
        out[infer] = size // known
    if int(np.prod(out, dtype=np.int64)) != size:
        raise t.malformed(f"target shape {out} does not hold the {size} elements of shape {list(shape_in)}")
    return [_reshape(t, data, out)]


def _reshape(t, data, shape):
    if isinstance(data, np.ndarray):
        return data.reshape(shape)
    if list(data.shape) == list(shape):
        return data
    return t.b.reshape(data, list(shape))


def squeeze(t, inputs):
    if len(inputs) not in (1, 2):
        raise t.malformed(f"Squeeze takes 1 or 2 inputs, not {len(inputs)}")
    shape = t.shape(inputs[0])
    if len(inputs) == 2:
        axes = {t.axis(a, len(shape), "axes item") for a in t.ints(inputs[1], "axes")}
        for a in axes:
            if shape[a] != 1:
                raise t.malformed(f"cannot squeeze axis {a} of size {shape[a]} (shape {list(shape)})")
    else:
        axes = {i for i, d in enumerate(shape) if d == 1}
    return [_reshape(t, inputs[0], [d for i, d in enumerate(shape) if i not in axes])]


def unsqueeze(t, inputs):
    if len(inputs) != 2:
        raise t.malformed(f"Unsqueeze takes 2 inputs, not {len(inputs)}")
    shape = list(t.shape(inputs[0]))
    axes_given = t.ints(inputs[1], "axes")
    rank = len(shape) + len(axes_given)
    axes = sorted(t.axis(a, rank, "axes item") for a in axes_given)
    if len(set(axes)) != len(axes):
        raise t.malformed(f"axes {axes_given} repeat an axis")
    for a in axes:
        shape.insert(a, 1)
    return [_reshape(t, inputs[0], shape)]


def transpose(t, inputs):
    if len(inputs) != 2:
        raise t.malformed(f"Transpose takes 2 inputs, not {len(inputs)}")
    rank = len(t.shape(inputs[0]))
    order = t.ints(inputs[1], "the order")
    if not order:
        order = list(range(rank))[::-1]       # Transpose-1: an empty order reverses the axes
    if sorted(order) != list(range(rank)):
        raise t.malformed(f"order {order} is not a permutation of {rank} axes")
    if isinstance(inputs[0], np.ndarray):
        return [np.transpose(inputs[0], order)]
    return [t.b.transpose(inputs[0], {"permutation": order})]


def gather(t, inputs):
    if len(inputs) != 3:
        raise t.malformed(f"Gather takes 3 inputs, not {len(inputs)}")
    data, indices, axis_value = inputs
    shape, ishape = t.shape(data), t.shape(indices)
    batch_dims = t.attr_int("batch_dims", 0)
    if batch_dims < 0:
        batch_dims += len(ishape)
    axes = t.ints(axis_value, "the axis")
    if len(axes) != 1:
        raise t.malformed(f"the axis input holds {len(axes)} values, not 1")
    axis = t.axis(axes[0], len(shape))
    if not 0 <= batch_dims <= min(axis, len(ishape)):
        raise t.malformed(f"batch_dims {batch_dims} must lie in [0, min(axis {axis}, indices rank {len(ishape)})]")
    if shape[:batch_dims] != ishape[:batch_dims]:
        raise t.malformed(f"the first {batch_dims} dimensions of data {list(shape)} and indices {list(ishape)} differ")
    if t.data_type(indices) not in ("int32", "int64"):
        raise t.malformed(f"indices are {t.data_type(indices)}, not i32 or i64")
    dim = shape[axis]
    out_shape = list(shape[:axis]) + list(ishape[batch_dims:]) + list(shape[axis + 1:])
    if isinstance(indices, np.ndarray):
        # Gather-8: negative indices count from the end; out-of-range ones are an error here.
        idx = indices.astype(np.int64)
        if ((idx < -dim) | (idx >= dim)).any():
            raise t.malformed(f"an index lies outside [-{dim}, {dim})")
        idx = np.where(idx < 0, idx + dim, idx)
        if isinstance(data, np.ndarray) and batch_dims == 0:
            return [np.take(data, idx, axis=axis)]
        if batch_dims == 0:
            return [t.b.gather(t.operand(data), t.operand(idx.astype(np.int32)), {"axis": axis})]
        # Constant indices with batch dims: gather the flat positions they select.
        flat = _batched_take(np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape), idx, axis, batch_dims)
        if isinstance(data, np.ndarray):
            return [data.reshape(-1)[flat]]
        source = t.b.reshape(t.operand(data), [int(np.prod(shape))])
        return [t.b.gather(source, t.operand(flat.astype(np.int32)), {"axis": 0})]
    idx = t.operand(indices)
    zero = t.operand(np.zeros((), dtype=np.dtype(idx.dataType)))
    size = t.operand(np.full((), dim, dtype=np.dtype(idx.dataType)))
    idx = t.b.where(t.b.lesser(idx, zero), t.b.add(idx, size), idx)
    source = t.operand(data)
    if batch_dims == 0:
        return [t.b.gather(source, idx, {"axis": axis})]
    # Run-time indices with batch dims: one gather per batch entry, then joined.
    batch = int(np.prod(shape[:batch_dims]))
    source = t.b.reshape(source, [batch] + list(shape[batch_dims:]))
    idx = t.b.reshape(idx, [batch] + list(ishape[batch_dims:]))
    parts = []
    inner_axis = axis - batch_dims
    for n in range(batch):
        s = t.b.slice(source, [n] + [0] * (len(shape) - batch_dims), [1] + list(shape[batch_dims:]))
        s = t.b.reshape(s, list(shape[batch_dims:]))
        i = t.b.slice(idx, [n] + [0] * (len(ishape) - batch_dims), [1] + list(ishape[batch_dims:]))
        i = t.b.reshape(i, list(ishape[batch_dims:]) or [])
        g = t.b.gather(s, i, {"axis": inner_axis})
        parts.append(t.b.reshape(g, [1] + list(g.shape)))
    joined = parts[0] if len(parts) == 1 else t.b.concat(parts, 0)
    return [t.b.reshape(joined, out_shape)]


def _batched_take(data: np.ndarray, idx: np.ndarray, axis: int, batch_dims: int) -> np.ndarray:
    """numpy Gather with batch_dims (reference semantics of Gather-8)."""
    batch_shape = data.shape[:batch_dims]
    out = []
    for b in np.ndindex(*batch_shape):
        out.append(np.take(data[b], idx[b], axis=axis - batch_dims))
    return np.stack(out).reshape(batch_shape + out[0].shape) if out else np.zeros((0,), data.dtype)


def strided_slice(t, inputs):
    if len(inputs) not in (3, 4):
        raise t.malformed(f"StridedSlice takes 3 or 4 inputs, not {len(inputs)}")
    data = inputs[0]
    shape = t.shape(data)
    begin = t.ints(inputs[1], "begin")
    end = t.ints(inputs[2], "end")
    stride = t.ints(inputs[3], "stride") if len(inputs) == 4 else [1] * len(begin)
    if not len(begin) == len(end) == len(stride):
        raise t.malformed(f"begin {begin}, end {end} and stride {stride} differ in length")
    if 0 in stride:
        raise t.malformed(f"stride {stride} contains 0")

    def mask(key):
        bits = t.attr_ints(key, [])
        return bits + [0] * (len(begin) - len(bits))

    begin_mask, end_mask = mask("begin_mask"), mask("end_mask")
    new_axis, shrink, ellipsis = mask("new_axis_mask"), mask("shrink_axis_mask"), mask("ellipsis_mask")
    if sum(1 for e in ellipsis if e) > 1:
        raise t.malformed("more than one ellipsis_mask bit is set")
    # StridedSlice-1 is numpy's basic indexing: build that index and let numpy
    # resolve it on a map of flat positions (bounds clamped as StridedSlice says).
    index = []
    for j in range(len(begin)):
        if ellipsis[j]:
            index.append(Ellipsis)
        elif new_axis[j]:
            index.append(np.newaxis)
        elif shrink[j]:
            index.append(begin[j])
        else:
            index.append(slice(None if begin_mask[j] else begin[j], None if end_mask[j] else end[j], stride[j]))
    positions = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    try:
        chosen = positions[tuple(index)]
    except IndexError as exc:
        raise t.malformed(f"the slice does not fit shape {list(shape)}: {exc}") from None
    if isinstance(data, np.ndarray):
        return [data.reshape(-1)[chosen]]
    if chosen.size == 0:
        raise t.unsupported(f"the slice of shape {list(shape)} is empty; WebNN operands cannot be empty")
    out_shape = list(chosen.shape)
    steps = _as_slice(shape, chosen)
    if steps is not None:
        starts, sizes, strides, sliced_shape = steps
        result = t.b.slice(data, starts, sizes, {"strides": strides}) if list(sizes) != list(shape) else data
        return [_reshape(t, result, out_shape) if sliced_shape != out_shape else result]
    flat = t.b.reshape(data, [positions.size])
    return [t.b.gather(flat, t.operand(chosen.reshape(-1).astype(np.int32)), {"axis": 0}) if not out_shape
            else t.b.reshape(t.b.gather(flat, t.operand(chosen.reshape(-1).astype(np.int32)), {"axis": 0}),
                             out_shape)]


def _as_slice(shape, chosen: np.ndarray):
    """(starts, sizes, strides, result shape) when the chosen positions are a
    forward strided slice of the input (then WebNN slice does it), else None."""
    rank = len(shape)
    if rank == 0:
        return None
    first = np.unravel_index(int(chosen.reshape(-1)[0]), shape)
    last = np.unravel_index(int(chosen.reshape(-1)[-1]), shape)
    starts, sizes, strides, result = [], [], [], []
    for axis in range(rank):
        span = last[axis] - first[axis]
        count = None
        # The number of distinct positions along this axis, read off the chosen set.
        values = np.unique(np.unravel_index(chosen.reshape(-1), shape)[axis])
        count = len(values)
        if span < 0:
            return None
        stride = 1 if count == 1 else int(values[1] - values[0])
        if count > 1 and not np.array_equal(values, np.arange(first[axis], last[axis] + 1, stride)):
            return None
        starts.append(int(first[axis]))
        sizes.append(span + 1)
        strides.append(stride)
        result.append(count)
    # The chosen positions must be exactly the grid product (no reordering).
    grid = np.ravel_multi_index(np.meshgrid(*[np.arange(s, s + z, st) for s, z, st in zip(starts, sizes, strides)],
                                            indexing="ij"), shape)
    if grid.size != chosen.size or not np.array_equal(grid.reshape(-1), chosen.reshape(-1)):
        return None
    return starts, sizes, strides, result


TRANSLATORS = {
    "Concat": concat, "Reshape": reshape, "Squeeze": squeeze, "Unsqueeze": unsqueeze, "Transpose": transpose,
    "Gather": gather, "StridedSlice": strided_slice,
}
