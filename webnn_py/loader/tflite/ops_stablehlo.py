"""The StableHLO operators of the TFLite schema that map onto WebNN operators
directly (the StableHLO specification's semantics). LiteRT runs only ADD,
MULTIPLY, MAXIMUM, MINIMUM and AND of these (the others never appear in a file
LiteRT accepts: converters lower StableHLO to TFLite builtins), so the tests of
the rest compare with numpy.

Options are in builtin_options_2 (field slots of schema.fbs); 64-bit vectors.
"""
from __future__ import annotations

import numpy as np

from . import ops_logical, ops_quant, ops_shape
from .importer import BOOL
from .ops_elementwise import _binary, _truncated_quotient, _unary, rsqrt
from .ops_layout import window_indices

# StablehloComparisonDirection: EQ, NE, GE, GT, LE, LT.
_COMPARE = {0: "equal", 1: "notEqual", 2: "greaterOrEqual", 3: "greater", 4: "lesserOrEqual", 5: "lesser"}


def _ints2(ctx, slot: int, what: str) -> list[int]:
    table = ctx.op.options_2
    if table is None or not table.has(slot):
        raise ctx.malformed(f"its {what} option is missing")
    return table.ints(slot, what, "i64")


def _logical(method: str):
    def translate(ctx):
        """Booleans only: on integers LiteRT's kernel is bitwise, which WebNN cannot express."""
        if any(ctx.input_tensor(k).type_code != BOOL for k in (0, 1)):
            raise ctx.fail("its operands are integers: a bitwise operation, which WebNN has no operator for")
        ctx.set_output(0, getattr(ctx.b, method)(ctx.input(0), ctx.input(1)))
    return translate


def remainder(ctx):
    """a - trunc(a / b) b: the sign of the dividend (C's fmod)."""
    ctx.set_output(0, _truncated_quotient(ctx, ctx.input(0), ctx.input(1))[1])


def cbrt(ctx):
    """sign(x) |x|^(1/3)."""
    b = ctx.b
    x = ctx.input(0)
    ctx.set_output(0, b.mul(b.sign(x), b.pow(b.abs(x), ctx.scalar(1 / 3, x))))


def clamp(ctx):
    """clamp(min, operand, max): min and max are tensors (scalars broadcast)."""
    b = ctx.b
    ctx.set_output(0, b.max(b.min(ctx.input(1), ctx.input(2)), ctx.input(0)))


def compare(ctx):
    """StablehloCompareOptions: comparison_direction 0, compare_type 1."""
    table = ctx.op.options_2
    method = _COMPARE.get(0 if table is None else table.scalar(0, "u32"))
    if method is None:
        raise ctx.fail("its comparison direction is not EQ, NE, GE, GT, LE or LT")
    ctx.set_output(0, getattr(ctx.b, method)(ctx.input(0), ctx.input(1)))


def transpose(ctx):
    """StablehloTransposeOptions: permutation 0."""
    ctx.set_output(0, ctx.b.transpose(ctx.input(0), {"permutation": _ints2(ctx, 0, "permutation")}))


def concatenate(ctx):
    """StablehloConcatenateOptions: dimension 0."""
    table = ctx.op.options_2
    values = [ctx.input(k) for k in range(len(ctx.op.inputs))]
    ctx.set_output(0, ctx.b.concat(values, 0 if table is None else table.scalar(0, "i64")))


def slice_(ctx):
    """StablehloSliceOptions: start_indices 0, limit_indices 1, strides 2."""
    start, limit, strides = (_ints2(ctx, slot, what) for slot, what in
                             ((0, "start_indices"), (1, "limit_indices"), (2, "strides")))
    sizes = [hi - lo for lo, hi in zip(start, limit)]
    ctx.set_output(0, ctx.b.slice(ctx.input(0), start, sizes, {"strides": strides}))


def broadcast_in_dim(ctx):
    """StablehloBroadcastInDimOptions: broadcast_dimensions 0 (operand dimension i
    becomes output dimension dims[i]); the output shape is the declared one."""
    b = ctx.b
    x = ctx.input(0)
    dims = _ints2(ctx, 0, "broadcast_dimensions")
    shape = list(ctx.output_tensor(0).shape)
    if len(dims) != len(x.shape) or len(set(dims)) != len(dims) or any(not 0 <= d < len(shape) for d in dims):
        raise ctx.fail(f"broadcast_dimensions {dims} do not fit {list(x.shape)} -> {shape}")
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    if order != list(range(len(dims))):
        x = b.transpose(x, {"permutation": order})
    placed = [1] * len(shape)
    for i in order:
        placed[dims[i]] = ctx.input(0).shape[i]
    ctx.set_output(0, b.expand(b.reshape(x, placed), shape))


def iota(ctx):
    """StablehloIotaOptions: iota_dimension 0. A constant: 0, 1, 2, … along that dimension."""
    t = ctx.output_tensor(0)
    table = ctx.op.options_2
    axis = 0 if table is None else table.scalar(0, "i64")
    shape = list(t.shape)
    if not 0 <= axis < len(shape) or t.numpy_type is None:
        raise ctx.fail(f"iota dimension {axis} or type {t.type_name} does not fit {shape}")
    ctx.check_made(shape, "its output")
    along = [1] * len(shape)
    along[axis] = shape[axis]
    values = np.broadcast_to(np.arange(shape[axis]).reshape(along), shape).astype(t.numpy_type)
    ctx.set_const(ctx.op.outputs[0], values)


def _start(ctx, first: int, rank: int):
    """The start indices given as `rank` scalar inputs from input `first` on, as one [rank] operand."""
    b = ctx.b
    parts = [b.reshape(b.cast(ctx.input(first + k), "int32"), [1]) for k in range(rank)]
    return parts[0] if rank == 1 else b.concat(parts, 0)


def dynamic_slice(ctx):
    """operand, one start index per dimension (run-time scalars);
    StablehloDynamicSliceOptions: slice_sizes 0. Starts are clamped to fit."""
    x = ctx.input(0)
    sizes = _ints2(ctx, 0, "slice_sizes")
    if len(sizes) != len(x.shape) or len(ctx.op.inputs) != 1 + len(x.shape):
        raise ctx.fail(f"slice_sizes {sizes} and {len(ctx.op.inputs) - 1} start indices do not fit {list(x.shape)}")
    ctx.set_output(0, ctx.b.gatherND(x, window_indices(ctx, x, _start(ctx, 1, len(x.shape)), sizes)))


def dynamic_update_slice(ctx):
    """operand, update, one start index per dimension (run-time scalars, clamped)."""
    x, update = ctx.input(0), ctx.input(1)
    if len(update.shape) != len(x.shape) or len(ctx.op.inputs) != 2 + len(x.shape):
        raise ctx.fail(f"update {list(update.shape)} and {len(ctx.op.inputs) - 2} start indices do not fit "
                       f"{list(x.shape)}")
    indices = window_indices(ctx, x, _start(ctx, 2, len(x.shape)), list(update.shape))
    ctx.set_output(0, ctx.b.scatterND(x, indices, update))


def gather(ctx):
    """operand, start_indices; StablehloGatherOptions: offset_dims 0,
    collapsed_slice_dims 1, start_index_map 2, index_vector_dim 3, slice_sizes 4
    (the StableHLO specification's gather without batching dimensions). Every output
    element's operand index is computed: each batch position's start (its index
    vector scattered onto start_index_map, clamped into [0, dim - slice size]) plus
    every offset within the slice, then gatherND, the collapsed dimensions dropped
    and the offset dimensions moved to offset_dims."""
    b = ctx.b
    operand, starts = ctx.input(0), b.cast(ctx.input(1), "int32")
    table = ctx.op.options_2
    if table is None:
        raise ctx.malformed("it has no StablehloGatherOptions")
    offset_dims, collapsed, index_map, sizes = (table.ints(slot, what, "i64") for slot, what in
                                                ((0, "offset_dims"), (1, "collapsed_slice_dims"),
                                                 (2, "start_index_map"), (4, "slice_sizes")))
    vector_dim = table.scalar(3, "i64")
    rank = len(operand.shape)
    if (len(sizes) != rank or any(not 0 <= d < rank for d in collapsed + index_map)
            or any(sizes[d] != 1 for d in collapsed) or not 0 <= vector_dim <= len(starts.shape)):
        raise ctx.fail(f"its dimension numbers (offset {offset_dims}, collapsed {collapsed}, start map "
                       f"{index_map}, index vector {vector_dim}, slice sizes {sizes}) do not fit operand "
                       f"{list(operand.shape)} and indices {list(starts.shape)}")
    if vector_dim == len(starts.shape):
        starts = b.reshape(starts, list(starts.shape) + [1])
    elif vector_dim != len(starts.shape) - 1:
        order = [d for d in range(len(starts.shape)) if d != vector_dim] + [vector_dim]
        starts = b.transpose(starts, {"permutation": order})
    batch = list(starts.shape[:-1])
    if starts.shape[-1] != len(index_map):
        raise ctx.fail(f"index vectors of {starts.shape[-1]} do not fit start_index_map {index_map}")
    # The full start of each slice: [batch..., rank].
    zero = ctx.constant_operand(np.zeros(batch + [1], np.int32))
    parts = []
    for d in range(rank):
        if d in index_map:
            k = index_map.index(d)
            parts.append(b.slice(starts, [0] * len(batch) + [k], batch + [1]))
        else:
            parts.append(zero)
    full = parts[0] if rank == 1 else b.concat(parts, len(batch))
    indices = window_indices(ctx, operand, full, sizes)
    gathered = b.gatherND(operand, indices)                              # [batch..., sizes...]
    kept = [d for d in range(rank) if d not in collapsed]
    gathered = b.reshape(gathered, batch + [sizes[d] for d in kept])
    out_rank = len(batch) + len(kept)
    if sorted(offset_dims) != offset_dims or len(offset_dims) != len(kept) or \
            any(not 0 <= d < out_rank for d in offset_dims):
        raise ctx.fail(f"offset_dims {offset_dims} do not fit an output of rank {out_rank}")
    batch_sources = iter(range(len(batch)))
    order = [len(batch) + offset_dims.index(p) if p in offset_dims else next(batch_sources) for p in range(out_rank)]
    if order != list(range(out_rank)):
        gathered = b.transpose(gathered, {"permutation": order})
    ctx.set_output(0, gathered)


TRANSLATORS = {
    "STABLEHLO_ADD": _binary("add", None),
    "STABLEHLO_MULTIPLY": _binary("mul", None),
    "STABLEHLO_MAXIMUM": _binary("max", None),
    "STABLEHLO_MINIMUM": _binary("min", None),
    "STABLEHLO_SUBTRACT": _binary("sub", None),
    # Integer div() truncates toward zero, as StableHLO's divide does.
    "STABLEHLO_DIVIDE": _binary("div", None),
    "STABLEHLO_POWER": _binary("pow", None),
    "STABLEHLO_REMAINDER": remainder,
    "STABLEHLO_AND": _logical("logicalAnd"),
    "STABLEHLO_OR": _logical("logicalOr"),
    "STABLEHLO_ABS": _unary("abs"),
    "STABLEHLO_NEGATE": _unary("neg"),
    "STABLEHLO_EXPONENTIAL": _unary("exp"),
    "STABLEHLO_LOG": _unary("log"),
    "STABLEHLO_LOGISTIC": _unary("sigmoid"),
    "STABLEHLO_TANH": _unary("tanh"),
    "STABLEHLO_COSINE": _unary("cos"),
    "STABLEHLO_FLOOR": _unary("floor"),
    "STABLEHLO_RSQRT": rsqrt,
    "STABLEHLO_CBRT": cbrt,
    "STABLEHLO_CLAMP": clamp,
    "STABLEHLO_SELECT": ops_logical.select,
    "STABLEHLO_COMPARE": compare,
    "STABLEHLO_CONVERT": ops_quant.cast,
    "STABLEHLO_RESHAPE": ops_shape._reshape_to_output,
    "STABLEHLO_TRANSPOSE": transpose,
    "STABLEHLO_CONCATENATE": concatenate,
    "STABLEHLO_SLICE": slice_,
    "STABLEHLO_BROADCAST_IN_DIM": broadcast_in_dim,
    "STABLEHLO_IOTA": iota,
    "STABLEHLO_DYNAMIC_SLICE": dynamic_slice,
    "STABLEHLO_DYNAMIC_UPDATE_SLICE": dynamic_update_slice,
    "STABLEHLO_GATHER": gather,
}
