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
    if isinstance(indices, np.ndarray):
        # Gather-8: negative indices count from the end; out-of-range ones are an error here.
        idx = indices.astype(np.int64)
        if ((idx < -dim) | (idx >= dim)).any():
            raise t.malformed(f"an index lies outside [-{dim}, {dim})")
        idx = np.where(idx < 0, idx + dim, idx).astype(indices.dtype)
        if isinstance(data, np.ndarray):
            return [_batched_take(data, idx, axis, batch_dims)]
        idx = t.operand(idx)
    else:
        # Run-time indices: the same wrap-around, computed.
        idx = t.operand(indices)
        zero = t.operand(np.zeros((), dtype=np.dtype(idx.dataType)))
        size = t.operand(np.full((), dim, dtype=np.dtype(idx.dataType)))
        idx = t.b.where(t.b.lesser(idx, zero), t.b.add(idx, size), idx)
    source = t.operand(data)
    if batch_dims == 0:
        return [t.b.gather(source, idx, {"axis": axis})]
    return [_gather_batched(t, source, idx, shape, ishape, axis, batch_dims)]


def _gather_batched(t, data, idx, shape, ishape, axis: int, b: int):
    """Gather-8 with batch_dims b as WebNN gatherND: each index is prefixed with
    its batch coordinates, after moving `axis` next to the batch dimensions;
    the result's axes are then put in Gather's order
    (batch, data[b:axis], indices[b:], data[axis+1:])."""
    rank = len(shape)
    moved = data
    if axis != b:
        moved = t.b.transpose(data, {"permutation": list(range(b)) + [axis] +
                                     [d for d in range(b, rank) if d != axis]})
    rest = tuple(ishape[b:])
    grids = np.meshgrid(*[np.arange(n) for n in ishape[:b]], indexing="ij")
    batch = np.stack(grids, -1).reshape(tuple(ishape[:b]) + (1,) * len(rest) + (b,))
    batch = np.ascontiguousarray(np.broadcast_to(batch, tuple(ishape) + (b,)), dtype=np.dtype(idx.dataType))
    coordinates = t.b.concat([t.operand(batch), t.b.reshape(idx, list(ishape) + [1])], len(ishape))
    out = t.b.gatherND(moved, coordinates)
    if axis == b:
        return out
    n_rest, before = len(rest), axis - b
    order = (list(range(b)) + list(range(b + n_rest, b + n_rest + before)) + list(range(b, b + n_rest)) +
             list(range(b + n_rest + before, len(out.shape))))
    return t.b.transpose(out, {"permutation": order})


def _batched_take(data: np.ndarray, idx: np.ndarray, axis: int, batch_dims: int) -> np.ndarray:
    """Gather-8 on constants: np.take per batch entry."""
    if batch_dims == 0:
        return np.take(data, idx, axis=axis)
    batch_shape = data.shape[:batch_dims]
    parts = [np.take(data[b], idx[b], axis=axis - batch_dims) for b in np.ndindex(*batch_shape)]
    return np.stack(parts).reshape(batch_shape + parts[0].shape)


def strided_slice(t, inputs):
    """StridedSlice-1 is numpy's basic indexing, so its result is always a
    strided window of the input (reversed along axes with a negative stride),
    with axes dropped (shrink_axis_mask) or inserted (new_axis_mask): WebNN
    slice + reverse + reshape."""
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
    index = []
    for j in range(len(begin)):
        if ellipsis[j]:
            index.append(Ellipsis)
        elif new_axis[j]:
            index.append(None)
        elif shrink[j]:
            index.append(begin[j])
        else:
            index.append(slice(None if begin_mask[j] else begin[j], None if end_mask[j] else end[j], stride[j]))
    consumed = sum(1 for item in index if item is not None and item is not Ellipsis)
    if consumed > len(shape):
        raise t.malformed(f"the slice indexes {consumed} axes of a rank-{len(shape)} input")
    if isinstance(data, np.ndarray):
        try:
            return [np.array(data[tuple(index)])]
        except IndexError as exc:
            raise t.malformed(f"the slice does not fit shape {list(shape)}: {exc}") from None
    if Ellipsis not in index:
        index.append(Ellipsis)          # axes the spec does not name are taken whole
    starts, sizes, strides, reverse, out_shape = [], [], [], [], []

    def window(start, size, step):
        starts.append(start)
        sizes.append(size)
        strides.append(step)

    axis = 0
    for item in index:
        if item is Ellipsis:
            for _ in range(len(shape) - consumed):
                window(0, shape[axis], 1)
                out_shape.append(shape[axis])
                axis += 1
            continue
        if item is None:
            out_shape.append(1)
            continue
        dim = shape[axis]
        if isinstance(item, int):
            position = item + dim if item < 0 else item
            if not 0 <= position < dim:
                raise t.malformed(f"shrink index {item} lies outside axis {axis} of size {dim}")
            window(position, 1, 1)
        else:
            chosen = range(*item.indices(dim))
            if len(chosen) == 0:
                raise t.unsupported(f"the slice is empty along axis {axis}; WebNN operands cannot be empty")
            low, high = min(chosen[0], chosen[-1]), max(chosen[0], chosen[-1])
            window(low, high - low + 1, abs(chosen.step))
            if chosen.step < 0:
                reverse.append(axis)
            out_shape.append(len(chosen))
        axis += 1
    result = data
    if sizes != list(shape) or any(s != 1 for s in strides):
        result = t.b.slice(result, starts, sizes, {"strides": strides})
    if reverse:
        result = t.b.reverse(result, {"axes": reverse})
    return [_reshape(t, result, out_shape)]


TRANSLATORS = {
    "Concat": concat, "Reshape": reshape, "Squeeze": squeeze, "Unsqueeze": unsqueeze, "Transpose": transpose,
    "Gather": gather, "StridedSlice": strided_slice,
}
