"""Gather and scatter operators: gather (§8.9.20), gatherElements (§8.9.21),
gatherND (§8.9.22), scatterElements (§8.9.44) and scatterND (§8.9.45).

Run-time indices. The spec allows index values in [-N, N) for a dimension of
size N, a negative value counting from the end of the dimension, and notes that
indices cannot be clamped to that range at build time, so the compiled graph
clamps them. The kernels therefore clamp every index into [-N, N - 1] and then
map negative ones to N + index: an out-of-range index never crashes and never
reads or writes outside the tensor.

Duplicate indices in scatter. The spec text does not define which update wins
when several address the same output element; these kernels make it
deterministic: the update that comes last in the row-major order of `updates`
wins (what a sequential loop over the updates would produce).

Like the other data-movement operators, these only move elements, so every
data type passes through bit-exactly.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ..base.descriptor import OperandDescriptor, check_dimensions
from .registry import ANY, INDEX_TYPES, BuildContext, TensorLimits, register

INDICES = TensorLimits(INDEX_TYPES)
RANK_1_OR_MORE = ANY.ranks(min_rank=1)


def _descriptor(ctx: BuildContext, data_type: str, shape) -> OperandDescriptor:
    """The output descriptor, refused (TypeError) when §8.5 "check dimensions"
    fails, e.g. a gather whose output rank exceeds the supported maximum."""
    desc = OperandDescriptor(data_type, tuple(int(d) for d in shape))
    problem = check_dimensions(desc)
    if problem is not None:
        ctx.fail(f"output shape {list(desc.shape)} is not supported: {problem}")
    return desc


def _indices_type(ctx: BuildContext, indices_desc: OperandDescriptor) -> None:
    if indices_desc.data_type not in INDEX_TYPES:
        ctx.fail(f"indices has data type {indices_desc.data_type}; allowed: {', '.join(INDEX_TYPES)}")


def normalize_indices(indices: np.ndarray, size) -> np.ndarray:
    """Indices in [0, size): clamped into [-size, size - 1], negatives counted
    from the end. `size` may be an array broadcasting against indices.

    The result has numpy's index type intp, which is 32 bits wide in Pyodide
    (wasm32), where np.take refuses int64 indices; every result is below a
    valid dimension (< 2**31), so the narrowing is exact."""
    # int32/uint32/int64 all fit in int64 exactly, so clamping there is exact.
    index = indices.astype(np.int64)
    size = np.asarray(size, dtype=np.int64)
    index = np.clip(index, -size, size - 1)
    return np.where(index < 0, index + size, index).astype(np.intp)


# -- gather (§8.9.20) ---------------------------------------------------------------------------

def build_gather(ctx: BuildContext, input, indices, options: dict):
    # Step 2: validate both operands; step 3: the indices' data type.
    input_desc = ctx.descriptor(input)
    indices_desc = ctx.descriptor(indices)
    _indices_type(ctx, indices_desc)
    input_desc = ctx.check("input", input)
    ctx.check("indices", indices)
    # Step 7.
    axis = ctx.axis("axis", options.get("axis", 0), input_desc.rank)
    # Steps 8-17: input dims before axis, then the indices' dims, then input dims after axis.
    shape = input_desc.shape[:axis] + indices_desc.shape + input_desc.shape[axis + 1:]
    return ctx.emit([input, indices], [_descriptor(ctx, input_desc.data_type, shape)], {"axis": axis})[0]


def kernel_gather(inputs, attributes, outputs):
    data, indices = inputs
    axis = attributes["axis"]
    return [np.take(data, normalize_indices(indices, data.shape[axis]), axis=axis)]


# -- gatherElements (§8.9.21) -------------------------------------------------------------------

def _check_elements_shapes(ctx: BuildContext, input_desc, indices_desc, axis_option) -> int:
    """gatherElements steps 6-9 / scatterElements steps 7-10: the indices have the
    input's shape except along axis."""
    if indices_desc.rank != input_desc.rank:
        ctx.fail(f"indices has rank {indices_desc.rank}; it must equal the input's rank {input_desc.rank}")
    axis = ctx.axis("axis", axis_option, input_desc.rank)
    expected = list(input_desc.shape)
    expected[axis] = indices_desc.shape[axis]
    if list(indices_desc.shape) != expected:
        ctx.fail(f"indices shape {list(indices_desc.shape)} must equal the input shape "
                 f"{list(input_desc.shape)} except along axis {axis}, i.e. {expected}")
    return axis


def build_gather_elements(ctx: BuildContext, input, indices, options: dict):
    ctx.descriptor(input)
    indices_desc = ctx.descriptor(indices)
    # Step 3.
    _indices_type(ctx, indices_desc)
    # Step 4: ranks (input 1 to N, indices the input's rank).
    input_desc = ctx.check("input", input)
    axis = _check_elements_shapes(ctx, input_desc, indices_desc, options.get("axis", 0))
    # Step 10: the output has the input's type and the indices' shape (which
    # differs from the input's only along axis). The spec says "copy input",
    # but its own example 2 (input [4,3], indices [4,1] -> output [4,1]) and the
    # operation's meaning give the indices' shape.
    desc = _descriptor(ctx, input_desc.data_type, indices_desc.shape)
    return ctx.emit([input, indices], [desc], {"axis": axis})[0]


def kernel_gather_elements(inputs, attributes, outputs):
    data, indices = inputs
    axis = attributes["axis"]
    return [np.take_along_axis(data, normalize_indices(indices, data.shape[axis]), axis=axis)]


# -- gatherND (§8.9.22) -------------------------------------------------------------------------

def _check_nd(ctx: BuildContext, input_desc, indices_desc) -> int:
    """gatherND steps 8-10 / scatterND steps 8-10: the coordinate size."""
    coordinate_size = indices_desc.shape[-1]
    if coordinate_size > input_desc.rank:
        ctx.fail(f"indices' last dimension {coordinate_size} exceeds the input's rank {input_desc.rank}")
    return coordinate_size


def build_gather_nd(ctx: BuildContext, input, indices, options: dict):
    ctx.descriptor(input)
    indices_desc = ctx.descriptor(indices)
    # Step 3.
    _indices_type(ctx, indices_desc)
    # Steps 4 and 7: input and indices both of rank 1 to N.
    input_desc = ctx.check("input", input)
    ctx.check("indices", indices)
    k = _check_nd(ctx, input_desc, indices_desc)
    # Steps 11-13.
    shape = indices_desc.shape[:-1] + input_desc.shape[k:]
    return ctx.emit([input, indices], [_descriptor(ctx, input_desc.data_type, shape)], {})[0]


def _row_major_strides(shape) -> np.ndarray:
    """Element strides of a C-ordered array of `shape`."""
    return np.array([prod(shape[j + 1:]) for j in range(len(shape))], dtype=np.int64)


def _flat_coordinates(data_shape, indices: np.ndarray) -> np.ndarray:
    """Row-major offsets, into the first k = indices.shape[-1] dimensions of
    data_shape, of each (normalised) coordinate tuple in indices."""
    k = indices.shape[-1]
    dims = np.array(data_shape[:k], dtype=np.int64)
    coords = normalize_indices(indices, dims)
    strides = _row_major_strides(data_shape[:k])
    # Offsets stay below the element count (< 2**31), so intp holds them.
    return (coords.astype(np.int64) @ strides).astype(np.intp)


def kernel_gather_nd(inputs, attributes, outputs):
    data, indices = inputs
    k = indices.shape[-1]
    # View the first k dimensions as one, then gather whole slices of the rest.
    blocks = data.reshape((prod(data.shape[:k]),) + data.shape[k:])
    return [blocks[_flat_coordinates(data.shape, indices)]]


# -- scatterElements (§8.9.44) and scatterND (§8.9.45) -----------------------------------------

def _scatter_last_wins(data: np.ndarray, positions: np.ndarray, updates: np.ndarray) -> np.ndarray:
    """A copy of data with updates written at flat positions; where positions
    repeat, the update that comes last in row-major order wins."""
    out = np.array(data, copy=True, order="C")
    flat = out.reshape(-1)
    # Positions are below the element count (< 2**31): exact in intp, which
    # is what indexing wants in wasm32 as well.
    positions = positions.reshape(-1).astype(np.intp)
    values = updates.reshape(-1)
    # np.unique on the reversed list finds each position's last occurrence.
    _, first_in_reversed = np.unique(positions[::-1], return_index=True)
    last = positions.size - 1 - first_in_reversed
    flat[positions[last]] = values[last]
    return out


def build_scatter_elements(ctx: BuildContext, input, indices, updates, options: dict):
    ctx.descriptor(input)
    indices_desc = ctx.descriptor(indices)
    updates_desc = ctx.descriptor(updates)
    # Steps 3-4.
    _indices_type(ctx, indices_desc)
    input_desc = ctx.check("input", input)
    ctx.same_type("updates", updates_desc, "input", input_desc)
    # Step 5: ranks (input 1 to N; indices and updates the input's rank).
    if updates_desc.rank != input_desc.rank:
        ctx.fail(f"updates has rank {updates_desc.rank}; it must equal the input's rank {input_desc.rank}")
    axis = _check_elements_shapes(ctx, input_desc, indices_desc, options.get("axis", 0))
    # Step 11.
    if updates_desc.shape != indices_desc.shape:
        ctx.fail(f"updates shape {list(updates_desc.shape)} differs from indices shape {list(indices_desc.shape)}")
    desc = _descriptor(ctx, input_desc.data_type, input_desc.shape)
    return ctx.emit([input, indices, updates], [desc], {"axis": axis})[0]


def kernel_scatter_elements(inputs, attributes, outputs):
    data, indices, updates = inputs
    axis = attributes["axis"]
    # The flat output position of every update: its own coordinates, except
    # along axis where the (normalised) index is used. Computed with explicit
    # int64 strides rather than np.ravel_multi_index, which wants intp (32 bits
    # in Pyodide's wasm32).
    strides = _row_major_strides(data.shape)
    positions = np.zeros(indices.shape, dtype=np.int64)
    for dim in range(indices.ndim):
        if dim == axis:
            coord = normalize_indices(indices, data.shape[axis])
        else:
            coord = np.arange(indices.shape[dim], dtype=np.int64).reshape(
                [-1 if d == dim else 1 for d in range(indices.ndim)])
        positions = positions + coord.astype(np.int64) * strides[dim]
    return [_scatter_last_wins(data, positions, updates)]


def build_scatter_nd(ctx: BuildContext, input, indices, updates, options: dict):
    ctx.descriptor(input)
    indices_desc = ctx.descriptor(indices)
    updates_desc = ctx.descriptor(updates)
    # Steps 3-5.
    _indices_type(ctx, indices_desc)
    input_desc = ctx.check("input", input)
    ctx.same_type("updates", updates_desc, "input", input_desc)
    ctx.check("indices", indices)
    ctx.check("updates", updates)
    k = _check_nd(ctx, input_desc, indices_desc)
    # Steps 11-14.
    expected = indices_desc.shape[:-1] + input_desc.shape[k:]
    if updates_desc.shape != expected:
        ctx.fail(f"updates shape {list(updates_desc.shape)} must be indices.shape[:-1] + input.shape[{k}:] "
                 f"= {list(expected)}")
    # Step 15: the output has the input's shape (the "Returns" line's rank
    # formula is gatherND's, copied by mistake; the steps are normative).
    desc = _descriptor(ctx, input_desc.data_type, input_desc.shape)
    return ctx.emit([input, indices, updates], [desc], {})[0]


def kernel_scatter_nd(inputs, attributes, outputs):
    data, indices, updates = inputs
    k = indices.shape[-1]
    block = prod(data.shape[k:])
    # Each coordinate tuple addresses one contiguous block of `block` elements.
    starts = _flat_coordinates(data.shape, indices).reshape(-1, 1) * block
    positions = starts + np.arange(block, dtype=np.int64)
    return [_scatter_last_wins(data, positions, updates)]


register("gather", build=build_gather, kernel=kernel_gather,
         limits={"input": RANK_1_OR_MORE, "indices": INDICES, "output": ANY})
register("gatherElements", build=build_gather_elements, kernel=kernel_gather_elements,
         limits={"input": RANK_1_OR_MORE, "indices": INDICES.ranks(min_rank=1), "output": RANK_1_OR_MORE})
register("gatherND", build=build_gather_nd, kernel=kernel_gather_nd,
         limits={"input": RANK_1_OR_MORE, "indices": INDICES.ranks(min_rank=1), "output": ANY})
register("scatterElements", build=build_scatter_elements, kernel=kernel_scatter_elements,
         limits={"input": RANK_1_OR_MORE, "indices": INDICES.ranks(min_rank=1),
                 "updates": RANK_1_OR_MORE, "output": RANK_1_OR_MORE})
register("scatterND", build=build_scatter_nd, kernel=kernel_scatter_nd,
         limits={"input": RANK_1_OR_MORE, "indices": INDICES.ranks(min_rank=1),
                 "updates": ANY, "output": RANK_1_OR_MORE})
