"""Indexed reads and writes (OpenVINO opsets 1-15): GatherND, GatherElements,
ScatterUpdate, ScatterNDUpdate, ScatterElementsUpdate, onto WebNN's gatherND,
gatherElements, scatterND and scatterElements; and OneHot and Bucketize, which
compare indices or values with constant positions.

OpenVINO's indices may be negative (counted from the end of their axis);
WebNN's are taken as they are, so negative ones are wrapped first: folded for
constant indices, computed (where(i < 0, i + size, i)) for run-time ones.
"""
from __future__ import annotations

import numpy as np


def _check_indices(t, indices) -> None:
    if t.data_type(indices) not in ("int32", "int64"):
        raise t.malformed(f"indices are {t.data_type(indices)}, not i32 or i64")


def _wrapped(t, indices, sizes):
    """Indices with negative entries wrapped; `sizes` broadcasts against them
    (one size, or one per position of the last axis)."""
    if isinstance(indices, np.ndarray):
        sizes = np.asarray(sizes, dtype=np.int64)
        wide = indices.astype(np.int64)
        if ((wide < -sizes) | (wide >= sizes)).any():
            raise t.malformed("an index lies outside its axis")
        return t.operand(np.where(wide < 0, wide + sizes, wide).astype(indices.dtype))
    idx = t.operand(indices)
    dtype = np.dtype(idx.dataType)
    zero = t.operand(np.zeros((), dtype))
    return t.b.where(t.b.lesser(idx, zero), t.b.add(idx, t.operand(np.asarray(sizes, dtype))), idx)


def gather_nd(t, inputs):
    """GatherND-5/8: the last axis of indices addresses the data's leading axes
    after `batch_dims` shared batch axes. With batch dimensions each index is
    prefixed by its batch coordinates; GatherND-5 then merges the batch axes
    into one, GatherND-8 keeps them."""
    t.arity(inputs, 2)
    data, indices = inputs
    _check_indices(t, indices)
    shape, ishape = list(t.shape(data)), list(t.shape(indices))
    b = t.attr_int("batch_dims", 0)
    if not 0 <= b < min(len(shape), len(ishape)) or shape[:b] != ishape[:b]:
        raise t.malformed(f"batch_dims {b} does not fit data {shape} and indices {ishape}")
    depth = ishape[-1]
    if depth > len(shape) - b:
        raise t.malformed(f"indices address {depth} axes of a rank-{len(shape) - b} (after batch) tensor")
    idx = _wrapped(t, indices, shape[b:b + depth])
    x = t.operand(data)
    if b:
        grids = np.meshgrid(*[np.arange(n) for n in ishape[:b]], indexing="ij")
        middle = ishape[b:-1]
        batch = np.stack(grids, -1).reshape(ishape[:b] + [1] * len(middle) + [b])
        batch = np.ascontiguousarray(np.broadcast_to(batch, ishape[:-1] + [b]), dtype=np.dtype(idx.dataType))
        idx = t.b.concat([t.operand(batch), idx], len(ishape) - 1)
    out = t.b.gatherND(x, idx)
    if b > 1 and t.layer.version == "opset5":
        merged = int(np.prod(ishape[:b]))
        out = t.b.reshape(out, [merged] + list(out.shape[b:]))
    return [out]


def gather_elements(t, inputs):
    """GatherElements-6: out[..., i, ...] = data[..., indices[..., i, ...], ...] along `axis`."""
    t.arity(inputs, 2)
    data, indices = inputs
    _check_indices(t, indices)
    shape = t.shape(data)
    axis = t.axis(t.attr_int("axis"), len(shape))
    return [t.b.gatherElements(t.operand(data), _wrapped(t, indices, shape[axis]), {"axis": axis})]


def _no_reduction(t) -> None:
    reduction = t.layer.data.get("reduction", "none").lower()
    if reduction != "none":
        raise t.unsupported(f"reduction {reduction!r} is not supported (WebNN's scatters replace: 'none')")


def scatter_update(t, inputs):
    """ScatterUpdate-3: data's slices along `axis` at `indices` replaced by
    updates (shaped data[:axis] + indices + data[axis + 1:]). Moved so that the
    indices' axes lead, it is scatterND with one-coordinate indices."""
    t.arity(inputs, 4)
    data, indices, updates, axis_value = inputs
    _check_indices(t, indices)
    shape, ishape = list(t.shape(data)), list(t.shape(indices))
    axes = t.ints(axis_value, "axis")
    if len(axes) != 1:
        raise t.malformed(f"the axis input holds {len(axes)} values, not 1")
    axis = t.axis(axes[0], len(shape))
    k = len(ishape)
    if list(t.shape(updates)) != shape[:axis] + ishape + shape[axis + 1:]:
        raise t.malformed(f"updates have shape {list(t.shape(updates))}, not {shape[:axis] + ishape + shape[axis + 1:]}")
    x, u = t.operand(data), t.operand(updates)
    rest = [d for d in range(len(shape)) if d != axis]
    if axis:
        x = t.b.transpose(x, {"permutation": [axis] + rest})
        u = t.b.transpose(u, {"permutation": list(range(axis, axis + k)) + list(range(axis)) +
                              list(range(axis + k, len(shape) - 1 + k))})
    idx = _wrapped(t, indices, shape[axis])
    idx = t.b.reshape(idx, ishape + [1])       # one coordinate per index (a scalar index: shape [1])
    out = t.b.scatterND(x, idx, u)
    if axis:
        out = t.b.transpose(out, {"permutation": list(range(1, axis + 1)) + [0] + list(range(axis + 1, len(shape)))})
    return [out]


def scatter_nd_update(t, inputs):
    """ScatterNDUpdate-3/15 (reduction none): WebNN's scatterND."""
    t.arity(inputs, 3)
    _no_reduction(t)
    data, indices, updates = inputs
    _check_indices(t, indices)
    shape, ishape = t.shape(data), t.shape(indices)
    idx = _wrapped(t, indices, list(shape[:ishape[-1]]))
    return [t.b.scatterND(t.operand(data), idx, t.operand(updates))]


def scatter_elements_update(t, inputs):
    """ScatterElementsUpdate-3/12 (reduction none): WebNN's scatterElements."""
    t.arity(inputs, 4)
    _no_reduction(t)
    data, indices, updates, axis_value = inputs
    _check_indices(t, indices)
    shape = t.shape(data)
    axes = t.ints(axis_value, "axis")
    if len(axes) != 1:
        raise t.malformed(f"the axis input holds {len(axes)} values, not 1")
    axis = t.axis(axes[0], len(shape))
    return [t.b.scatterElements(t.operand(data), _wrapped(t, indices, shape[axis]), t.operand(updates),
                                {"axis": axis})]


def one_hot(t, inputs):
    """OneHot-1: a new axis of `depth` positions, on_value where it equals the
    index, off_value elsewhere (indices outside [0, depth) give off everywhere)."""
    t.arity(inputs, 4)
    indices, depth_value, on, off = inputs
    _check_indices(t, indices)
    depths = t.ints(depth_value, "depth")
    if len(depths) != 1 or depths[0] < 1:
        raise t.malformed(f"depth {depths} is not one positive number")
    rank = len(t.shape(indices)) + 1
    axis = t.axis(t.attr_int("axis", -1), rank)
    idx = t.operand(indices)
    positions = np.arange(depths[0], dtype=np.dtype(idx.dataType)).reshape([depths[0]] + [1] * (rank - 1 - axis))
    expanded = t.b.reshape(idx, list(idx.shape[:axis]) + [1] + list(idx.shape[axis:]))
    return [t.b.where(t.b.equal(expanded, t.operand(positions)), t.operand(on), t.operand(off))]


def bucketize(t, inputs):
    """Bucketize-3: the index of each value's bucket among sorted boundaries:
    how many boundaries lie below it (with_right_bound: b < x) or at or below
    it (b <= x)."""
    t.arity(inputs, 2)
    x, boundaries = t.operand(inputs[0]), t.operand(inputs[1])
    kind = {"i32": "int32", "i64": "int64"}.get(t.layer.data.get("output_type", "i64"))
    if kind is None:
        raise t.malformed(f"output_type {t.layer.data.get('output_type')!r} is not i32 or i64")
    right = t.layer.data.get("with_right_bound", "true").strip().lower() in ("true", "1")
    if len(boundaries.shape) != 1:
        raise t.malformed(f"the boundaries have rank {len(boundaries.shape)}, not 1")
    column = t.b.reshape(x, list(x.shape) + [1])
    below = t.b.lesser(boundaries, column) if right else t.b.lesserOrEqual(boundaries, column)
    return [t.b.reduceSum(t.b.cast(below, kind), {"axes": [len(x.shape)]})]


TRANSLATORS = {"GatherND": gather_nd, "GatherElements": gather_elements, "ScatterUpdate": scatter_update,
               "ScatterNDUpdate": scatter_nd_update, "ScatterElementsUpdate": scatter_elements_update,
               "OneHot": one_hot, "Bucketize": bucketize}
