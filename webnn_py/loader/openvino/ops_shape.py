"""Data-movement IR operations: Concat, Reshape, Squeeze, Unsqueeze, Transpose,
Gather, StridedSlice, Slice, Pad, Broadcast, Tile, Split, VariadicSplit,
DepthToSpace, SpaceToDepth, SpaceToBatch, BatchToSpace, ShuffleChannels, Roll, ReorgYolo,
and ShapeOf, Range and Eye
(folded: static shapes).

OpenVINO passes shapes, axes, permutations and slice bounds as (usually i64)
tensors; WebNN takes them as plain numbers, so they must be constants at load
time (they are, in IR that has been through OpenVINO's constant folding). When
the data is a constant too, the operation is done here in numpy, so constant
shape arithmetic stays constant.
"""
from __future__ import annotations

import math

import numpy as np

from .translate import NUMPY_TO_WEBNN, Empty


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
    t.arity(inputs, 2)
    data, target = inputs
    shape_in = t.shape(data)
    wanted = t.ints(target, "the target shape")
    special_zero = t.attr_flag("special_zero", False)
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
    t.arity(inputs, 1, 2)
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
    t.arity(inputs, 2)
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
    t.arity(inputs, 2)
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
    t.arity(inputs, 3)
    data, indices, axis_value = inputs
    shape, ishape = t.shape(data), t.shape(indices)
    batch_dims = t.attr_int("batch_dims", 0)
    if batch_dims < 0:
        batch_dims += len(ishape)
    axis = t.axis(t.one_int(axis_value, "the axis input"), len(shape))
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
    t.arity(inputs, 3, 4)
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
    return [_basic_index(t, data, index)]


def _basic_index(t, data, index: list):
    """numpy basic indexing (ints, slices, None, one Ellipsis) of a value:
    folded for constants, else WebNN slice + reverse + reshape."""
    shape = t.shape(data)
    consumed = sum(1 for item in index if item is not None and item is not Ellipsis)
    if consumed > len(shape):
        raise t.malformed(f"the slice indexes {consumed} axes of a rank-{len(shape)} input")
    if isinstance(data, np.ndarray):
        try:
            return np.array(data[tuple(index)])
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
    return _reshape(t, result, out_shape)


def slice_(t, inputs):
    """Slice-8: start, stop, step (and optional axes) per sliced axis, numpy's
    slicing semantics (negative positions from the end, clamped)."""
    t.arity(inputs, 4, 5)
    data = inputs[0]
    rank = len(t.shape(data))
    start, stop, step = (t.ints(v, what) for v, what in zip(inputs[1:4], ("start", "stop", "step")))
    axes = [t.axis(a, rank, "axes item") for a in t.ints(inputs[4], "axes")] if len(inputs) == 5 \
        else list(range(len(start)))
    if not len(start) == len(stop) == len(step) == len(axes) or len(set(axes)) != len(axes):
        raise t.malformed(f"start {start}, stop {stop}, step {step} and axes {axes} do not match")
    if 0 in step:
        raise t.malformed(f"step {step} contains 0")
    index = [slice(None)] * rank
    for a, b, e, s in zip(axes, start, stop, step):
        index[a] = slice(b, e, s)
    return [_basic_index(t, data, index)]


def pad(t, inputs):
    """Pad-1/12: constant (pad_value, default 0), edge and reflect modes; Pad-12's
    negative pads crop first. WebNN has no symmetric mode."""
    t.arity(inputs, 3, 4)
    data = inputs[0]
    shape = t.shape(data)
    begin, end = t.ints(inputs[1], "pads_begin"), t.ints(inputs[2], "pads_end")
    if len(begin) != len(shape) or len(end) != len(shape):
        raise t.malformed(f"pads_begin {begin} and pads_end {end} need {len(shape)} items each")
    mode = t.layer.data.get("pad_mode", "constant").lower()
    modes = {"constant": "constant", "edge": "edge", "reflect": "reflection"}
    if mode not in modes:
        raise t.unsupported(f"pad_mode {mode!r} is not supported (constant, edge and reflect are; WebNN has no "
                            "symmetric padding)")
    if any(v < 0 for v in begin + end):
        if t.layer.version == "opset1":
            raise t.malformed(f"Pad-1 takes no negative pads ({begin}, {end})")
        index = [slice(max(-b, 0), d - max(-e, 0)) for b, e, d in zip(begin, end, shape)]
        if any(s.start >= s.stop for s in index):
            raise t.unsupported("the negative pads crop an axis away; WebNN operands cannot be empty")
        data = _basic_index(t, data, index)
        begin, end = [max(b, 0) for b in begin], [max(e, 0) for e in end]
    x = t.operand(data)
    if not any(begin + end):
        return [x]
    options = {"mode": modes[mode]}
    if len(inputs) == 4 and mode == "constant":
        array = t.const(inputs[3], "pad_value")
        options["value"] = array.reshape(-1)[0].item()
    return [t.b.pad(x, begin, end, options)]


def broadcast(t, inputs):
    """Broadcast-1/3: numpy (the target shape, the data broadcast to it),
    bidirectional (both broadcast to each other) and explicit (axes_mapping
    places the data's axes in the target shape)."""
    t.arity(inputs, 2, 3)
    data = inputs[0]
    shape = list(t.shape(data))
    target = t.ints(inputs[1], "target_shape")
    mode = t.layer.data.get("mode", "numpy").lower()
    if mode == "explicit":
        if len(inputs) != 3:
            raise t.malformed("explicit Broadcast needs the axes_mapping input")
        mapping = t.ints(inputs[2], "axes_mapping")
        if len(mapping) != len(shape) or sorted(mapping) != mapping or any(not 0 <= a < len(target) for a in mapping):
            raise t.malformed(f"axes_mapping {mapping} does not place a rank-{len(shape)} input in {target}")
        placed = [1] * len(target)
        for a, d in zip(mapping, shape):
            placed[a] = d
        data, shape = _reshape(t, data, placed), placed
    elif mode == "bidirectional":
        try:
            target = list(np.broadcast_shapes(tuple(shape), tuple(target)))
        except ValueError:
            raise t.malformed(f"shapes {shape} and {target} do not broadcast") from None
    elif mode not in ("numpy", "pdpd"):
        raise t.malformed(f"mode {mode!r} is not numpy, explicit or bidirectional")
    if mode == "pdpd":
        raise t.unsupported("mode 'pdpd' is not supported")
    if any(d < 1 for d in target):
        raise t.unsupported(f"target shape {target} is empty; WebNN operands cannot be empty")
    if isinstance(data, np.ndarray) and _small(target):
        try:
            return [np.array(np.broadcast_to(data, target))]
        except ValueError:
            raise t.malformed(f"shape {shape} does not broadcast to {target}") from None
    x = t.operand(data)
    return [x if list(x.shape) == target else t.b.expand(x, target)]


FOLD_LIMIT = 1 << 16      # elements a fold may create (shape arithmetic is small; data stays in the graph)


def _small(shape) -> bool:
    return int(np.prod(shape, dtype=np.float64)) <= FOLD_LIMIT


def tile(t, inputs):
    """Tile-1: repeats shorter than the rank repeat the last axes; longer ones
    first give the data leading 1s."""
    t.arity(inputs, 2)
    data = inputs[0]
    shape = list(t.shape(data))
    repeats = t.ints(inputs[1], "repeats")
    if any(r < 0 for r in repeats):
        raise t.malformed(f"repeats {repeats} has a negative count")
    if 0 in repeats:
        raise t.unsupported(f"repeats {repeats} empties the tensor; WebNN operands cannot be empty")
    rank = max(len(shape), len(repeats))
    shape = [1] * (rank - len(shape)) + shape
    repeats = [1] * (rank - len(repeats)) + repeats
    data = _reshape(t, data, shape)
    if isinstance(data, np.ndarray) and _small([d * r for d, r in zip(shape, repeats)]):
        return [np.tile(data, repeats)]
    return [t.b.tile(t.operand(data), repeats)]


def split(t, inputs):
    """Split-1 (num_splits equal parts) and VariadicSplit-1 (split_lengths, one
    of them -1 for the rest; a 0 length gives an empty output, which may only
    reach a Result)."""
    t.arity(inputs, 2 if t.layer.type == "Split" else 3)
    data = inputs[0]
    shape = list(t.shape(data))
    axis = t.axis(t.one_int(inputs[1], "the axis input"), len(shape))
    dim = shape[axis]
    if t.layer.type == "Split":
        parts = t.attr_int("num_splits")
        if parts < 1 or dim % parts:
            raise t.malformed(f"num_splits {parts} does not divide axis {axis} of size {dim}")
        lengths = [dim // parts] * parts
    else:
        lengths = t.ints(inputs[2], "split_lengths")
        if lengths.count(-1) > 1 or any(v < -1 for v in lengths):
            raise t.malformed(f"split_lengths {lengths} has more than one -1 or a negative length")
        if -1 in lengths:
            lengths[lengths.index(-1)] = dim - sum(v for v in lengths if v != -1)
        if sum(lengths) != dim or min(lengths) < 0:
            raise t.malformed(f"split_lengths {lengths} do not add up to axis {axis} of size {dim}")
    if isinstance(data, np.ndarray):
        return list(np.split(data, np.cumsum(lengths)[:-1], axis=axis))
    nonzero = [v for v in lengths if v]
    pieces = iter(t.b.split(t.operand(data), nonzero, {"axis": axis}) if len(nonzero) > 1 else [t.operand(data)])
    out = []
    for v in lengths:
        if v:
            out.append(next(pieces))
        else:
            empty = list(shape)
            empty[axis] = 0
            out.append(Empty(t.data_type(data), tuple(empty)))
    return out


def shape_of(t, inputs):
    """ShapeOf-1/3: the (static, after specialisation) shape as a constant."""
    t.arity(inputs, 1)
    output_type = t.layer.data.get("output_type", "i64")
    dtype = {"i64": np.int64, "i32": np.int32}.get(output_type)
    if dtype is None:
        raise t.malformed(f"output_type {output_type!r} is not i32 or i64")
    return [np.array(t.shape(inputs[0]), dtype=dtype)]


def range_(t, inputs):
    """Range-1/4 on constants: numpy's arange, folded (output_type of Range-4;
    Range-1 keeps the inputs' type)."""
    from .ir import ELEMENT_TYPES
    t.arity(inputs, 3)
    start, stop, step = (t.const(v, what).reshape(-1) for v, what in zip(inputs, ("start", "stop", "step")))
    if not start.size == stop.size == step.size == 1:
        raise t.malformed("start, stop and step must be scalars")
    if t.layer.version == "opset1" or "output_type" not in t.layer.data:
        dtype = start.dtype
    else:
        kind = t.layer.data["output_type"]
        if kind not in ELEMENT_TYPES:
            raise t.unsupported(f"output_type {kind!r} is not supported")
        dtype = np.dtype(ELEMENT_TYPES[kind][0])
    a, b, c = start[0].item(), stop[0].item(), step[0].item()
    if c == 0:
        raise t.malformed("step is 0")
    count = max(math.ceil((b - a) / c), 0)
    if count > FOLD_LIMIT:
        raise t.unsupported(f"Range gives {count} elements; at most {FOLD_LIMIT} are folded")
    if count == 0:
        return [Empty(NUMPY_TO_WEBNN[dtype], (0,))]
    return [(a + np.arange(count, dtype=np.float64 if dtype.kind == "f" else np.int64) * c).astype(dtype)]


def depth_to_space(t, inputs):
    """DepthToSpace-1 / SpaceToDepth-1 (4-D): a reshape to 6-D, a transpose, a
    reshape back; mode blocks_first or depth_first orders the channel's parts."""
    t.arity(inputs, 1)
    x = t.operand(inputs[0])
    if len(x.shape) != 4:
        raise t.unsupported(f"{t.layer.type} of rank {len(x.shape)} is not supported (4-D is)")
    n, c, h, w = x.shape
    bs = t.attr_int("block_size", 1)
    mode = t.layer.data.get("mode", "blocks_first").lower()
    if mode not in ("blocks_first", "depth_first") or bs < 1:
        raise t.malformed(f"mode {mode!r} / block_size {bs} are not valid")
    blocks_first = mode == "blocks_first"
    if t.layer.type == "DepthToSpace":
        if c % (bs * bs):
            raise t.malformed(f"channels {c} are not a multiple of block_size^2 = {bs * bs}")
        depth = c // (bs * bs)
        split = [n, bs, bs, depth, h, w] if blocks_first else [n, depth, bs, bs, h, w]
        order = [0, 3, 4, 1, 5, 2] if blocks_first else [0, 1, 4, 2, 5, 3]
        final = [n, depth, h * bs, w * bs]
    else:
        if h % bs or w % bs:
            raise t.malformed(f"spatial size {[h, w]} is not a multiple of block_size {bs}")
        split = [n, c, h // bs, bs, w // bs, bs]
        order = [0, 3, 5, 1, 2, 4] if blocks_first else [0, 1, 3, 5, 2, 4]
        final = [n, c * bs * bs, h // bs, w // bs]
    moved = t.b.transpose(t.b.reshape(x, split), {"permutation": order})
    return [t.b.reshape(moved, final)]


def shuffle_channels(t, inputs):
    """ShuffleChannels-1: axis split into [group, size / group], the two swapped."""
    t.arity(inputs, 1)
    x = t.operand(inputs[0])
    shape = list(x.shape)
    axis = t.axis(t.attr_int("axis", 1), len(shape))
    group = t.attr_int("group", 1)
    if group < 1 or shape[axis] % group:
        raise t.malformed(f"group {group} does not divide axis {axis} of size {shape[axis]}")
    split = shape[:axis] + [group, shape[axis] // group] + shape[axis + 1:]
    order = list(range(len(split)))
    order[axis], order[axis + 1] = axis + 1, axis
    return [t.b.reshape(t.b.transpose(t.b.reshape(x, split), {"permutation": order}), shape)]


def roll(t, inputs):
    """Roll-7: each listed axis rotated by its shift (toward higher indices;
    shifts and axes broadcast, repeated axes add up): two slices joined."""
    t.arity(inputs, 3)
    data = inputs[0]
    shape = list(t.shape(data))
    shifts, axes = t.ints(inputs[1], "shift"), t.ints(inputs[2], "axes")
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise t.malformed(f"shift {shifts} and axes {axes} differ in length")
    total = {}
    for s, a in zip(shifts, axes):
        a = t.axis(a, len(shape), "axes item")
        total[a] = total.get(a, 0) + s
    if isinstance(data, np.ndarray):
        return [np.roll(data, list(total.values()), list(total))]
    x = t.operand(data)
    for axis, s in total.items():
        s %= shape[axis]
        if not s:
            continue
        starts = [0] * len(shape)
        tail_sizes, head_sizes = list(shape), list(shape)
        tail_sizes[axis], head_sizes[axis] = s, shape[axis] - s
        tail_starts = list(starts)
        tail_starts[axis] = shape[axis] - s
        x = t.b.concat([t.b.slice(x, tail_starts, tail_sizes), t.b.slice(x, starts, head_sizes)], axis)
    return [x]


def eye(t, inputs):
    """Eye-9: ones on diagonal diagonal_index of a num_rows x num_columns
    matrix (repeated over batch_shape), folded."""
    from .ir import ELEMENT_TYPES
    t.arity(inputs, 3, 4)
    rows, columns, diagonal = (t.ints(v, what) for v, what in zip(inputs[:3], ("num_rows", "num_columns",
                                                                                "diagonal_index")))
    batch = t.ints(inputs[3], "batch_shape") if len(inputs) == 4 else []
    kind = t.layer.data.get("output_type", "f32")
    if kind not in ELEMENT_TYPES:
        raise t.unsupported(f"output_type {kind!r} is not supported")
    if len(rows) != 1 or len(columns) != 1 or len(diagonal) != 1 or rows[0] < 1 or columns[0] < 1:
        raise t.malformed(f"num_rows {rows} / num_columns {columns} / diagonal_index {diagonal} are not valid")
    shape = batch + [rows[0], columns[0]]
    if not _small(shape):
        raise t.unsupported(f"Eye of shape {shape} is larger than the {FOLD_LIMIT} elements folded")
    matrix = np.eye(rows[0], columns[0], diagonal[0], dtype=ELEMENT_TYPES[kind][0])
    return [np.array(np.broadcast_to(matrix, shape))]


def _block_attributes(t, inputs, edges: tuple[str, str]):
    """block_shape and the two edge lists of SpaceToBatch / BatchToSpace, checked."""
    t.arity(inputs, 4)
    rank = len(t.shape(inputs[0]))
    block, begin, end = (t.ints(v, what) for v, what in zip(inputs[1:], ("block_shape",) + edges))
    if not len(block) == len(begin) == len(end) == rank or block[0] != 1 or min(block) < 1:
        raise t.malformed(f"block_shape {block} / {edges[0]} {begin} / {edges[1]} {end} do not fit a rank-{rank} "
                          "input (block 0 is 1)")
    if 2 * rank - 1 > 8:
        raise t.unsupported(f"a rank-{rank} input needs a rank-{2 * rank - 1} reshape; WebNN's limit is 8")
    return block, begin, end


def space_to_batch(t, inputs):
    """SpaceToBatch-2: pad, then move each axis' block of block_shape[i]
    positions into the batch (the blocks' offsets leading the new batch axis):
    a reshape to [N, D1/b1, b1, ...], a transpose putting the b's first, a
    reshape to [N * prod(b), D1/b1, ...]. block_shape[0] must be 1."""
    x = t.operand(inputs[0])
    block, begin, end = _block_attributes(t, inputs, ("pads_begin", "pads_end"))
    rank = len(x.shape)
    if any(begin) or any(end):
        x = t.b.pad(x, begin, end)
    padded = list(x.shape)
    if any(d % b for d, b in zip(padded, block)):
        raise t.malformed(f"the padded shape {padded} is not a multiple of block_shape {block}")
    split = [padded[0]]
    for d, b in zip(padded[1:], block[1:]):
        split += [d // b, b]
    order = [2 * k for k in range(1, rank)] + [0] + [2 * k - 1 for k in range(1, rank)]
    out = [padded[0] * int(np.prod(block))] + [d // b for d, b in zip(padded[1:], block[1:])]
    return [t.b.reshape(t.b.transpose(t.b.reshape(x, split), {"permutation": order}), out)]


def batch_to_space(t, inputs):
    """BatchToSpace-2, SpaceToBatch's inverse: the batch split into
    [b1, ..., N / prod(b)], each block interleaved after its axis, then cropped."""
    x = t.operand(inputs[0])
    shape = list(x.shape)
    block, begin, end = _block_attributes(t, inputs, ("crops_begin", "crops_end"))
    rank = len(shape)
    product = int(np.prod(block))
    if shape[0] % product:
        raise t.malformed(f"batch {shape[0]} is not a multiple of prod(block_shape) = {product}")
    split = block[1:] + [shape[0] // product] + shape[1:]
    order = [rank - 1]
    for k in range(1, rank):
        order += [rank - 1 + k, k - 1]
    full = [shape[0] // product] + [d * b for d, b in zip(shape[1:], block[1:])]
    y = t.b.reshape(t.b.transpose(t.b.reshape(x, split), {"permutation": order}), full)
    sizes = [d - b - e for d, b, e in zip(full, begin, end)]
    if min(sizes) < 1 or min(begin + end) < 0:
        raise t.malformed(f"crops {begin}, {end} do not fit shape {full}")
    return [y if sizes == full else t.b.slice(y, begin, sizes)]


def reorg_yolo(t, inputs):
    """ReorgYolo-2 (Darknet's reorg, stride s): the data read as
    [N, C / s^2, H, s, W, s] (a reinterpretation of the flat buffer, as the
    reference indexes it), transposed to [N, s, s, C / s^2, H, W], and read
    back as [N, C s^2, H / s, W / s]."""
    t.arity(inputs, 1)
    x = t.operand(inputs[0])
    if len(x.shape) != 4:
        raise t.unsupported(f"ReorgYolo of rank {len(x.shape)} is not supported (4-D is)")
    strides = t.attr_ints("stride")
    if len(strides) not in (1, 2) or len(set(strides)) != 1 or strides[0] < 1:
        raise t.malformed(f"stride {strides} is not one positive stride")
    s = strides[0]
    n, c, h, w = x.shape
    if c % (s * s) or h % s or w % s:
        raise t.malformed(f"shape {list(x.shape)} does not divide by stride {s}")
    viewed = t.b.reshape(x, [n, c // (s * s), h, s, w, s])
    moved = t.b.transpose(viewed, {"permutation": [0, 3, 5, 1, 2, 4]})
    return [t.b.reshape(moved, [n, c * s * s, h // s, w // s])]


TRANSLATORS = {
    "Concat": concat, "Reshape": reshape, "Squeeze": squeeze, "Unsqueeze": unsqueeze, "Transpose": transpose,
    "Gather": gather, "StridedSlice": strided_slice, "Slice": slice_, "Pad": pad, "Broadcast": broadcast,
    "Tile": tile, "Split": split, "VariadicSplit": split, "ShapeOf": shape_of, "Range": range_,
    "DepthToSpace": depth_to_space, "SpaceToDepth": depth_to_space, "ShuffleChannels": shuffle_channels,
    "Roll": roll, "Eye": eye, "SpaceToBatch": space_to_batch, "BatchToSpace": batch_to_space,
    "ReorgYolo": reorg_yolo,
}
