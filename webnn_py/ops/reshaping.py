"""Tensor manipulation operators: concat (§8.9.9), expand (§8.9.19), reshape
(§8.9.42), reverse (§8.9.43), slice (§8.9.47), split (§8.9.51), tile (§8.9.53),
transpose (§8.9.54) and triangular (§8.9.55).

None of them does arithmetic: every kernel only moves elements, so each data
type (float16 bit patterns included) passes through bit-exactly. Kernels may
return numpy views of their inputs; the runtime copies graph outputs into their
MLTensors, so a view never escapes.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ..base.descriptor import MAX_RANK, OperandDescriptor, check_dimensions
from .broadcast import broadcast_unidirectional
from .registry import ANY, BuildContext, TensorLimits, register

# §8.5 "a valid tensor count is an integer greater than 0 and at most 8192".
MAX_TENSOR_COUNT = 8192
# §8.5 "a valid dimension is an integer greater than 0 and in the range of long".
MAX_DIMENSION = 2**31 - 1


def _descriptor(ctx: BuildContext, data_type: str, shape, what: str = "output") -> OperandDescriptor:
    """An output descriptor, refused when this implementation cannot hold it.

    The spec's steps only create the descriptor, but an output whose shape fails
    §8.5 "check dimensions" (rank above our MAX_RANK, element count or byte
    length too large) could never be allocated, so it is a TypeError at build
    time rather than a failure at dispatch."""
    desc = OperandDescriptor(data_type, tuple(int(d) for d in shape))
    problem = check_dimensions(desc)
    if problem is not None:
        ctx.fail(f"{what} shape {list(desc.shape)} is not supported: {problem}")
    return desc


def _one(ctx: BuildContext, inputs, desc: OperandDescriptor, attributes: dict):
    return ctx.emit(inputs, [desc], attributes)[0]


# -- concat (§8.9.9) ----------------------------------------------------------------------------

def build_concat(ctx: BuildContext, inputs: list, axis: int, options: dict):
    # Step 2: validate every operand (and the table's "inputs" row: any type, rank 1 to N).
    descs = [ctx.check("inputs", operand) for operand in inputs]
    # Step 3.
    if not 0 < len(inputs) <= MAX_TENSOR_COUNT:
        ctx.fail(f"the number of inputs {len(inputs)} is not a valid tensor count (1 to {MAX_TENSOR_COUNT})")
    first = descs[0]
    # Step 5.
    if axis >= first.rank:
        ctx.fail(f"axis {axis} is out of range for rank {first.rank}")
    shape = list(first.shape)
    # Step 8.
    for index in range(1, len(descs)):
        desc = descs[index]
        if desc.data_type != first.data_type:
            ctx.fail(f"inputs[{index}]'s data type {desc.data_type} differs from inputs[0]'s {first.data_type}")
        if desc.rank != first.rank:
            ctx.fail(f"inputs[{index}]'s rank {desc.rank} differs from inputs[0]'s {first.rank}")
        for dim in range(desc.rank):
            if dim != axis and desc.shape[dim] != first.shape[dim]:
                ctx.fail(f"inputs[{index}]'s shape {list(desc.shape)} differs from inputs[0]'s "
                         f"{list(first.shape)} in dimension {dim}, which is not the axis {axis}")
            if dim == axis:
                size = shape[axis] + desc.shape[dim]
                if not 0 < size <= MAX_DIMENSION:
                    ctx.fail(f"the concatenated size {size} along axis {axis} is not a valid dimension")
                shape[axis] = size
    return _one(ctx, inputs, _descriptor(ctx, first.data_type, shape), {"axis": axis})


def kernel_concat(inputs, attributes, outputs):
    return [np.concatenate(inputs, axis=attributes["axis"])]


# -- expand (§8.9.19) ---------------------------------------------------------------------------

def build_expand(ctx: BuildContext, input, new_shape: list, options: dict):
    desc = ctx.check("input", input)
    # Step 3: §9.1 unidirectional broadcasting from the input's shape to newShape.
    shape = broadcast_unidirectional(desc.shape, new_shape)
    if shape is None:
        ctx.fail(f"input shape {list(desc.shape)} cannot be broadcast to the new shape {list(new_shape)}")
    # Step 4.
    if len(shape) > MAX_RANK:
        ctx.fail(f"the new shape's rank {len(shape)} exceeds the output's maximum rank {MAX_RANK}")
    return _one(ctx, [input], _descriptor(ctx, desc.data_type, shape), {})


def kernel_expand(inputs, attributes, outputs):
    # A read-only broadcast view; the runtime copies it where it must be materialised.
    return [np.broadcast_to(inputs[0], outputs[0].shape)]


# -- reshape (§8.9.42) --------------------------------------------------------------------------

def build_reshape(ctx: BuildContext, input, new_shape: list, options: dict):
    desc = ctx.check("input", input)
    # Step 3.
    if len(new_shape) > MAX_RANK:
        ctx.fail(f"the new shape's rank {len(new_shape)} exceeds the output's maximum rank {MAX_RANK}")
    # Step 6.
    for dim in new_shape:
        if not 0 < dim <= MAX_DIMENSION:
            ctx.fail(f"new shape {list(new_shape)} has {dim}, which is not a valid dimension")
    # Steps 7-8: an empty shape (a scalar) has one element, as prod(()) does.
    if prod(new_shape) != desc.element_count:
        ctx.fail(f"new shape {list(new_shape)} has {prod(new_shape)} elements; "
                 f"the input shape {list(desc.shape)} has {desc.element_count}")
    return _one(ctx, [input], _descriptor(ctx, desc.data_type, new_shape), {})


def kernel_reshape(inputs, attributes, outputs):
    return [inputs[0].reshape(outputs[0].shape)]


# -- reverse (§8.9.43) --------------------------------------------------------------------------

def build_reverse(ctx: BuildContext, input, options: dict):
    desc = ctx.check("input", input)
    # Step 5: absent axes reverse every dimension; an explicit [] reverses none.
    axes = options.get("axes")
    if axes is None:
        axes = list(range(desc.rank))
    # Step 6 says "return failure", which a method cannot do; like the sibling
    # checks of every other operator (e.g. §8.9.41 reduce), it throws a TypeError.
    elif len(set(axes)) != len(axes):
        ctx.fail(f"axes {list(axes)} contain duplicate values")
    else:
        for axis in axes:
            ctx.axis("axes item", axis, desc.rank)
    return _one(ctx, [input], _descriptor(ctx, desc.data_type, desc.shape), {"axes": tuple(axes)})


def kernel_reverse(inputs, attributes, outputs):
    return [np.flip(inputs[0], axis=attributes["axes"]) if attributes["axes"] else inputs[0]]


# -- slice (§8.9.47) ----------------------------------------------------------------------------

def build_slice(ctx: BuildContext, input, starts: list, sizes: list, options: dict):
    desc = ctx.check("input", input)
    # Step 3.
    if any(size == 0 for size in sizes):
        ctx.fail(f"sizes {list(sizes)} contain 0")
    # Step 4: both lists must match the rank.
    if len(starts) != desc.rank or len(sizes) != desc.rank:
        ctx.fail(f"starts has {len(starts)} and sizes {len(sizes)} items; both must equal the input rank {desc.rank}")
    # Step 6.
    strides = options.get("strides")
    if strides is not None and len(strides) != desc.rank:
        ctx.fail(f"strides has {len(strides)} items; it must equal the input rank {desc.rank}")
    strides = list(strides) if strides else [1] * desc.rank
    # Step 9.
    shape = []
    for index in range(desc.rank):
        input_size, slice_size, stride, start = desc.shape[index], sizes[index], strides[index], starts[index]
        if slice_size == 0:
            ctx.fail(f"sizes[{index}] is 0")
        if stride < 1:
            ctx.fail(f"strides[{index}] is {stride}; strides must be at least 1")
        if start > input_size:
            ctx.fail(f"starts[{index}] {start} exceeds the input dimension {input_size}")
        if start + slice_size > input_size:
            ctx.fail(f"starts[{index}] + sizes[{index}] = {start + slice_size} exceeds the input dimension {input_size}")
        # ceil(size / stride): the elements start, start+stride, ... below start+size.
        shape.append(slice_size // stride + (1 if slice_size % stride else 0))
    attributes = {"starts": tuple(starts), "sizes": tuple(sizes), "strides": tuple(strides)}
    return _one(ctx, [input], _descriptor(ctx, desc.data_type, shape), attributes)


def kernel_slice(inputs, attributes, outputs):
    index = tuple(slice(start, start + size, stride) for start, size, stride
                  in zip(attributes["starts"], attributes["sizes"], attributes["strides"]))
    return [inputs[0][index]]


# -- split (§8.9.51) ----------------------------------------------------------------------------

def build_split(ctx: BuildContext, input, splits, options: dict):
    desc = ctx.check("input", input)
    # Step 4.
    axis = ctx.axis("axis", options.get("axis", 0), desc.rank)
    length = desc.shape[axis]
    if isinstance(splits, int):
        # Step 5: an equal split into `splits` pieces.
        if not 0 < splits <= MAX_TENSOR_COUNT:
            ctx.fail(f"splits {splits} is not a valid tensor count (1 to {MAX_TENSOR_COUNT})")
        if length % splits != 0:
            ctx.fail(f"the input dimension {length} along axis {axis} is not divisible by splits {splits}")
        sizes = [length // splits] * splits
    else:
        # Step 6: explicit sizes.
        if not 0 < len(splits) <= MAX_TENSOR_COUNT:
            ctx.fail(f"splits has {len(splits)} items, which is not a valid tensor count (1 to {MAX_TENSOR_COUNT})")
        if any(size == 0 for size in splits):
            ctx.fail(f"splits {list(splits)} contain 0")
        if sum(splits) != length:
            ctx.fail(f"splits {list(splits)} sum to {sum(splits)}, not the input dimension {length} along axis {axis}")
        sizes = list(splits)
    # Step 7.
    outputs = []
    for size in sizes:
        shape = list(desc.shape)
        shape[axis] = size
        outputs.append(OperandDescriptor(desc.data_type, tuple(shape)))
    return ctx.emit([input], outputs, {"axis": axis, "sizes": tuple(sizes)})


def kernel_split(inputs, attributes, outputs):
    # Views of the input, as np.split gives them, by basic slicing: np.split's own Python
    # (cumsum, swapaxes, array_split) costs more than the slices in Pyodide.
    x = inputs[0]
    index = [slice(None)] * x.ndim
    parts, start = [], 0
    for size in attributes["sizes"]:
        index[attributes["axis"]] = slice(start, start + size)
        parts.append(x[tuple(index)])
        start += size
    return parts


# -- tile (§8.9.53) -----------------------------------------------------------------------------

def build_tile(ctx: BuildContext, input, repetitions: list, options: dict):
    desc = ctx.check("input", input)
    # Step 3.
    if len(repetitions) != desc.rank:
        ctx.fail(f"repetitions has {len(repetitions)} items; it must equal the input rank {desc.rank}")
    # Step 4.
    if any(r == 0 for r in repetitions):
        ctx.fail(f"repetitions {list(repetitions)} contain 0")
    shape = [dim * r for dim, r in zip(desc.shape, repetitions)]
    return _one(ctx, [input], _descriptor(ctx, desc.data_type, shape), {"repetitions": tuple(repetitions)})


def kernel_tile(inputs, attributes, outputs):
    return [np.tile(inputs[0], attributes["repetitions"]) if inputs[0].ndim else inputs[0]]


# -- transpose (§8.9.54) ------------------------------------------------------------------------

def build_transpose(ctx: BuildContext, input, options: dict):
    desc = ctx.check("input", input)
    permutation = options.get("permutation")
    if permutation is None:
        # Step 3: the default reverses the dimensions.
        permutation = list(range(desc.rank - 1, -1, -1))
    else:
        # Step 4.
        if len(permutation) != desc.rank:
            ctx.fail(f"permutation has {len(permutation)} items; it must equal the input rank {desc.rank}")
        for item in permutation:
            ctx.axis("permutation item", item, desc.rank)
        if len(set(permutation)) != len(permutation):
            ctx.fail(f"permutation {list(permutation)} contains duplicate values")
    # Step 5 says "copy an MLOperand given input", which would keep the input's
    # shape; the operator's result ("the permuted or transposed tensor") has the
    # permuted shape, so the output descriptor is permuted.
    shape = [desc.shape[p] for p in permutation]
    return _one(ctx, [input], _descriptor(ctx, desc.data_type, shape), {"permutation": tuple(permutation)})


def kernel_transpose(inputs, attributes, outputs):
    return [np.transpose(inputs[0], attributes["permutation"])]


# -- triangular (§8.9.55) -----------------------------------------------------------------------

def build_triangular(ctx: BuildContext, input, options: dict):
    # Step 3: the table's rank 2 to N.
    desc = ctx.check("input", input)
    attributes = {"upper": bool(options.get("upper", True)), "diagonal": int(options.get("diagonal", 0))}
    return _one(ctx, [input], _descriptor(ctx, desc.data_type, desc.shape), attributes)


def kernel_triangular(inputs, attributes, outputs):
    x = inputs[0]
    rows, cols = x.shape[-2:]
    # Element (i, j) of each matrix lies on diagonal j - i; upper keeps the
    # diagonals at or above `diagonal`, lower those at or below it (§8.9.55 examples).
    offset = np.arange(cols, dtype=np.int64)[None, :] - np.arange(rows, dtype=np.int64)[:, None]
    keep = offset >= attributes["diagonal"] if attributes["upper"] else offset <= attributes["diagonal"]
    return [np.where(keep, x, np.zeros((), dtype=x.dtype))]


def _single(limits: TensorLimits = ANY) -> dict[str, TensorLimits]:
    """MLSingleInputSupportLimits: the output has the input's type."""
    return {"input": limits, "output": limits}


register("concat", build=build_concat, kernel=kernel_concat,
         limits={"inputs": ANY.ranks(min_rank=1), "output": ANY.ranks(min_rank=1)})
register("expand", build=build_expand, kernel=kernel_expand, limits=_single())
register("reshape", build=build_reshape, kernel=kernel_reshape, limits=_single())
register("reverse", build=build_reverse, kernel=kernel_reverse, limits=_single())
register("slice", build=build_slice, kernel=kernel_slice, limits=_single())
register("split", build=build_split, kernel=kernel_split,
         limits={"input": ANY.ranks(min_rank=1), "outputs": ANY.ranks(min_rank=1)})
register("tile", build=build_tile, kernel=kernel_tile, limits=_single())
register("transpose", build=build_transpose, kernel=kernel_transpose, limits=_single())
register("triangular", build=build_triangular, kernel=kernel_triangular, limits=_single(ANY.ranks(min_rank=2)))
