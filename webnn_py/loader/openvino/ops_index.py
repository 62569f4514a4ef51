"""Indexed reads and writes (OpenVINO opsets 1-15): GatherND, GatherElements,
ScatterUpdate, ScatterNDUpdate, ScatterElementsUpdate, onto WebNN's gatherND,
gatherElements, scatterND and scatterElements; ReverseSequence and SliceScatter
with constant positions; the EmbeddingBag* and EmbeddingSegmentsSum bags
(gathers and a membership-matrix product); and OneHot, Bucketize and
SearchSorted, which compare indices or values with positions or boundaries.

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
    axis = t.axis(t.one_int(axis_value, "the axis input"), len(shape))
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
    axis = t.axis(t.one_int(axis_value, "the axis input"), len(shape))
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
    t.check_extent(list(t.shape(indices)) + depths, "the output shape")
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
    right = t.attr_flag("with_right_bound", True)
    if len(boundaries.shape) != 1:
        raise t.malformed(f"the boundaries have rank {len(boundaries.shape)}, not 1")
    column = t.b.reshape(x, list(x.shape) + [1])
    below = t.b.lesser(boundaries, column) if right else t.b.lesserOrEqual(boundaries, column)
    return [t.b.reduceSum(t.b.cast(below, kind), {"axes": [len(x.shape)]})]


def reverse_sequence(t, inputs):
    """ReverseSequence-1 with constant seq_lengths: along seq_axis, the first
    seq_lengths[b] elements of batch entry b reversed, the rest kept; a
    gatherElements with constant indices."""
    t.arity(inputs, 2)
    x = t.operand(inputs[0])
    shape = list(x.shape)
    lengths = t.ints(inputs[1], "seq_lengths")
    batch_axis = t.axis(t.attr_int("batch_axis", 0), len(shape), "batch_axis")
    seq_axis = t.axis(t.attr_int("seq_axis", 1), len(shape), "seq_axis")
    if batch_axis == seq_axis or len(lengths) != shape[batch_axis]:
        raise t.malformed(f"batch_axis {batch_axis}, seq_axis {seq_axis} and seq_lengths {lengths} do not fit "
                          f"shape {shape}")
    if any(not 0 <= n <= shape[seq_axis] for n in lengths):
        raise t.malformed(f"seq_lengths {lengths} exceed the sequence axis' {shape[seq_axis]}")
    positions = np.arange(shape[seq_axis])
    table = np.stack([np.where(positions < n, n - 1 - positions, positions) if n else positions for n in lengths])
    # table[b, s]: broadcast over the other axes of x.
    view = [1] * len(shape)
    view[batch_axis], view[seq_axis] = len(lengths), shape[seq_axis]
    table = table if batch_axis < seq_axis else table.T
    index = np.ascontiguousarray(np.broadcast_to(table.reshape(view), shape), dtype=np.int32)
    return [t.b.gatherElements(x, t.operand(index), {"axis": seq_axis})]


def search_sorted(t, inputs):
    """SearchSorted-15: for each value, the number of sequence entries below it
    (right_mode false: the first position it could take) or at or below it
    (right_mode true), the sequence's leading axes matching the values'."""
    t.arity(inputs, 2)
    sequence, values = t.operand(inputs[0]), t.operand(inputs[1])
    if list(sequence.shape[:-1]) != list(values.shape[:-1]) and len(sequence.shape) != 1:
        raise t.malformed(f"sorted_sequence {list(sequence.shape)} and values {list(values.shape)} differ before "
                          "the last axis")
    right = t.attr_flag("right_mode")
    kind = {"i32": "int32", "i64": "int64"}.get(t.layer.data.get("output_type", "i64"))
    if kind is None:
        raise t.malformed(f"output_type {t.layer.data.get('output_type')!r} is not i32 or i64")
    rank = len(values.shape)
    column = t.b.reshape(values, list(values.shape) + [1])                      # [..., K, 1]
    row = t.b.reshape(sequence, list(sequence.shape[:-1]) + [1, sequence.shape[-1]])   # [..., 1, M]
    before = t.b.lesserOrEqual(row, column) if right else t.b.lesser(row, column)
    return [t.b.reduceSum(t.b.cast(before, kind), {"axes": [rank]})]


def embedding_bag_packed(t, inputs):
    """EmbeddingBagPackedSum-3 and EmbeddingBagPacked-15 (reduction sum or
    mean): each row of indices [B, K] gathers K rows of the table, weighted
    (per_sample_weights, sum only) and summed or averaged."""
    t.arity(inputs, 2, 3)
    table, indices = inputs[0], inputs[1]
    _check_indices(t, indices)
    rows = t.b.gather(t.operand(table), _wrapped(t, indices, t.shape(table)[0]), {"axis": 0})   # [B, K, ...]
    weights = inputs[2] if len(inputs) == 3 else None
    if weights is not None:
        weights = t.operand(weights)
        rows = t.b.mul(rows, t.b.reshape(weights, list(weights.shape) + [1] * (len(rows.shape) - 2)))
    reduce = t.b.reduceMean if _reduction(t, weights) else t.b.reduceSum
    return [reduce(rows, {"axes": [1]})]


def _bag_rows(t, table, indices, weights):
    """The table rows indices pick, flattened to [N, D] and weighted; and D's shape."""
    _check_indices(t, indices)
    if len(t.shape(indices)) != 1:
        raise t.malformed(f"indices have shape {list(t.shape(indices))}, not [N]")
    table = t.operand(table)
    rows = t.b.gather(table, _wrapped(t, indices, table.shape[0]), {"axis": 0})
    if weights is not None:
        weights = t.operand(weights)
        rows = t.b.mul(rows, t.b.reshape(weights, list(weights.shape) + [1] * (len(rows.shape) - 1)))
    inner = list(table.shape[1:])
    return t.b.reshape(rows, [rows.shape[0], int(np.prod(inner, dtype=np.int64))]), inner, table


def _bags(t, member, rows, inner, table, default, mean: bool):
    """sum (or mean) of the rows each bag's membership row (0/1, [B, N]) picks,
    as a product of the membership matrix and the rows; an empty bag gives the
    default_index row (zeros without one, or with a negative one)."""
    dtype = rows.dataType
    weights = t.b.cast(member, dtype)
    counts = t.b.reduceSum(weights, {"axes": [1], "keepDimensions": True})        # [B, 1]
    if mean:
        weights = t.b.div(weights, t.b.max(counts, t.operand(np.ones((), np.dtype(dtype)))))
    out = t.b.matmul(weights, rows)                                                 # [B, D]
    if default is not None:
        index = t.one_int(default, "default_index")
        if index >= 0:
            if index >= table.shape[0]:
                raise t.malformed(f"default_index {index} lies outside the table's {table.shape[0]} rows")
            row = t.b.reshape(t.b.slice(table, [index] + [0] * len(inner), [1] + inner), [1, rows.shape[1]])
            empty = t.b.equal(counts, t.operand(np.zeros((), np.dtype(dtype))))
            out = t.b.where(empty, row, out)
    return t.b.reshape(out, [out.shape[0]] + inner)


def embedding_bag_offsets(t, inputs):
    """EmbeddingBagOffsetsSum-3 and EmbeddingBagOffsets-15: bag b holds
    indices[offsets[b]:offsets[b + 1]] (the last one up to N); the membership
    matrix is computed from the (run-time) offsets by comparisons."""
    t.arity(inputs, 3, 4, 5)
    table, indices, offsets = inputs[:3]
    default = inputs[3] if len(inputs) >= 4 else None
    weights = inputs[4] if len(inputs) == 5 else None
    mean = _reduction(t, weights)
    rows, inner, table_operand = _bag_rows(t, table, indices, weights)
    count = rows.shape[0]
    starts = t.operand(offsets)
    if len(starts.shape) != 1:
        raise t.malformed(f"offsets have shape {list(starts.shape)}, not [B]")
    bags = starts.shape[0]
    total = t.operand(np.array([count], np.dtype(starts.dataType)))
    ends = t.b.concat([t.b.slice(starts, [1], [bags - 1]), total], 0) if bags > 1 else total
    position = t.operand(np.arange(count, dtype=np.dtype(starts.dataType)).reshape(1, count))
    column = [bags, 1]
    member = t.b.logicalAnd(t.b.greaterOrEqual(position, t.b.reshape(starts, column)),
                            t.b.lesser(position, t.b.reshape(ends, column)))
    return [_bags(t, member, rows, inner, table_operand, default, mean)]


def embedding_segments_sum(t, inputs):
    """EmbeddingSegmentsSum-3: segment s sums the rows whose segment_ids entry
    is s, for s < num_segments (a constant: it sizes the output). The
    membership comparison does not need the ids sorted (the tests give sorted
    ones: OpenVINO's CPU plugin gave other sums for unsorted ids)."""
    t.arity(inputs, 4, 5, 6)
    table, indices, segment_ids, num = inputs[:4]
    default = inputs[4] if len(inputs) >= 5 else None
    weights = inputs[5] if len(inputs) == 6 else None
    rows, inner, table_operand = _bag_rows(t, table, indices, weights)
    segments = t.ints(num, "num_segments")
    if len(segments) != 1 or segments[0] < 1:
        raise t.malformed(f"num_segments {segments} is not one positive number")
    t.check_extent([segments[0], rows.shape[0]], "the segment matrix")
    ids = t.operand(segment_ids)
    wanted = t.operand(np.arange(segments[0], dtype=np.dtype(ids.dataType)).reshape(segments[0], 1))
    member = t.b.equal(t.b.reshape(ids, [1, ids.shape[0]]), wanted)
    return [_bags(t, member, rows, inner, table_operand, default, False)]


def _reduction(t, weights) -> bool:
    """True for reduction mean (EmbeddingBag*-15), which takes no per-sample weights."""
    reduction = t.layer.data.get("reduction", "sum").lower()
    if reduction not in ("sum", "mean"):
        raise t.malformed(f"reduction {reduction!r} is not sum or mean")
    if reduction == "mean" and weights is not None:
        raise t.malformed("per_sample_weights go with reduction sum only")
    return reduction == "mean"


def slice_scatter(t, inputs):
    """SliceScatter-15: the Slice-8 window of data (start, stop, step, axes)
    replaced by updates; a scatterND at the window's positions (constant)."""
    t.arity(inputs, 5, 6)
    data, updates = t.operand(inputs[0]), t.operand(inputs[1])
    shape = list(data.shape)
    start, stop, step = (t.ints(v, what) for v, what in zip(inputs[2:5], ("start", "stop", "step")))
    axes = [t.axis(a, len(shape), "axes item") for a in t.ints(inputs[5], "axes")] if len(inputs) == 6 \
        else list(range(len(start)))
    if not len(start) == len(stop) == len(step) == len(axes) or 0 in step:
        raise t.malformed(f"start {start}, stop {stop}, step {step} and axes {axes} do not match")
    ranges = [np.arange(d) for d in shape]
    for a, b, e, s in zip(axes, start, stop, step):
        ranges[a] = np.arange(shape[a])[slice(b, e, s)]
    window = [len(r) for r in ranges]
    if window != list(updates.shape):
        raise t.malformed(f"updates have shape {list(updates.shape)}, the slice {window}")
    if 0 in window:
        return [data]
    grids = np.meshgrid(*ranges, indexing="ij")
    index = np.ascontiguousarray(np.stack(grids, -1), dtype=np.int32)
    return [t.b.scatterND(data, t.operand(index), updates)]


TRANSLATORS = {"GatherND": gather_nd, "GatherElements": gather_elements, "ScatterUpdate": scatter_update,
               "ScatterNDUpdate": scatter_nd_update, "ScatterElementsUpdate": scatter_elements_update,
               "OneHot": one_hot, "Bucketize": bucketize, "ReverseSequence": reverse_sequence,
               "SearchSorted": search_sorted, "EmbeddingBagPackedSum": embedding_bag_packed,
               "EmbeddingBagPacked": embedding_bag_packed, "SliceScatter": slice_scatter,
               "EmbeddingBagOffsetsSum": embedding_bag_offsets, "EmbeddingBagOffsets": embedding_bag_offsets,
               "EmbeddingSegmentsSum": embedding_segments_sum}
