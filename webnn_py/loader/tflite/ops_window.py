"""Interior padding and window reductions: DILATE, STABLEHLO_PAD, REDUCE_WINDOW,
STABLEHLO_REDUCE_WINDOW.

WebNN's pad() has no interior padding; it is built per axis from reshape + pad
+ slice: [..., n, ...] -> [..., n, 1, ...], padded with d - 1 values after each
element on the new axis, flattened back to n * d and cut to (n - 1) d + 1.
A window reduction is the combination of one strided slice per window offset.
"""
from __future__ import annotations

import itertools

import numpy as np

from .ops_shape import _ints, padding_value

# BuiltinOptions2 of REDUCE_WINDOW: ReduceWindowOptions.reduce_function 0.
_REDUCE = {1: "add", 2: "mul", 3: "min", 4: "max", 5: "logicalAnd", 6: "logicalOr"}
# Window offsets one REDUCE_WINDOW may combine (one strided slice each).
MAX_WINDOW_ELEMENTS = 1024


def dilate(ctx, x, dilations: list[int], value: float):
    """x with d - 1 copies of `value` between neighbours along each axis."""
    b = ctx.b
    for axis, d in enumerate(dilations):
        n = x.shape[axis]
        if d < 1:
            raise ctx.fail(f"dilation {d} on axis {axis} must be at least 1")
        if d == 1 or n <= 1:
            continue
        shape = list(x.shape)
        rank = len(shape)
        y = b.reshape(x, shape[:axis + 1] + [1] + shape[axis + 1:])
        after = [0] * (rank + 1)
        after[axis + 1] = d - 1
        y = b.pad(y, [0] * (rank + 1), after, {"value": value})
        y = b.reshape(y, shape[:axis] + [n * d] + shape[axis + 1:])
        sizes = list(shape)
        sizes[axis] = (n - 1) * d + 1
        x = b.slice(y, [0] * rank, sizes)
    return x


def dilate_op(ctx):
    """DILATE: input, dilations (a constant), padding_value (a constant)."""
    x = ctx.input(0)
    dilations = _ints(ctx.required_const(1, "dilations"))
    if len(dilations) != len(x.shape):
        raise ctx.fail(f"dilations {dilations} do not fit rank {len(x.shape)}")
    out = dilate(ctx, x, dilations, padding_value(ctx, 2))
    ctx.set_output(0, out if out is not x else ctx.b.identity(x))


def stablehlo_pad(ctx):
    """STABLEHLO_PAD: operand, padding_value; StablehloPadOptions (builtin_options_2):
    edge_padding_low 0, edge_padding_high 1, interior_padding 2 (int64 vectors;
    negative edge padding removes elements)."""
    x = ctx.input(0)
    table = ctx.op.options_2
    rank = len(x.shape)
    low, high, interior = ([] if table is None else table.ints(slot, what, "i64")
                           for slot, what in ((0, "edge_padding_low"), (1, "edge_padding_high"),
                                              (2, "interior_padding")))
    if not (len(low) == len(high) == len(interior) == rank) or min(interior, default=0) < 0:
        raise ctx.fail(f"padding low {low}, high {high}, interior {interior} do not fit rank {rank}")
    value = padding_value(ctx, 1)
    b = ctx.b
    y = dilate(ctx, x, [i + 1 for i in interior], value)
    if any(v > 0 for v in low + high):
        y = b.pad(y, [max(v, 0) for v in low], [max(v, 0) for v in high], {"value": value})
    if any(v < 0 for v in low + high):
        starts = [max(-v, 0) for v in low]
        sizes = [d - s - max(-h, 0) for d, s, h in zip(y.shape, starts, high)]
        if min(sizes) < 1:
            raise ctx.fail("the negative padding removes every element")
        y = b.slice(y, starts, sizes)
    ctx.set_output(0, y if y is not x else b.identity(x))


def reduce_window(ctx):
    """REDUCE_WINDOW: input, init_value, window_shape, window_strides,
    window_dilations (constants); ReduceWindowOptions (builtin_options_2)
    reduce_function 0. No padding: output = floor((n - ((w - 1) d + 1)) / s) + 1."""
    window, strides, dilations = (_ints(ctx.required_const(k, what)) for k, what in
                                  ((2, "window_shape"), (3, "window_strides"), (4, "window_dilations")))
    table = ctx.op.options_2
    function = _REDUCE.get(0 if table is None else table.scalar(0, "i32"))
    if function is None:
        raise ctx.fail("its reduce_function is not ADD, MUL, MINIMUM, MAXIMUM, ALL or ANY")
    ctx.set_output(0, _window_reduce(ctx, ctx.input(0), ctx.input_like(1, 0), window, strides, dilations, function))


# The body subgraphs of STABLEHLO_REDUCE_WINDOW that are one binary operator.
_BODY = {"ADD": "add", "STABLEHLO_ADD": "add", "MUL": "mul", "STABLEHLO_MULTIPLY": "mul", "MAXIMUM": "max",
         "STABLEHLO_MAXIMUM": "max", "MINIMUM": "min", "STABLEHLO_MINIMUM": "min", "LOGICAL_AND": "logicalAnd",
         "LOGICAL_OR": "logicalOr"}


def stablehlo_reduce_window(ctx):
    """STABLEHLO_REDUCE_WINDOW with one operand: input, init_value;
    StablehloReduceWindowOptions (builtin_options_2): window_dimensions 0,
    window_strides 1, base_dilations 2, window_dilations 3, padding 4 ([rank, 2]
    flattened), body_subgraph_index 5. The body must be one of the binary operators
    above applied to its two inputs (what converters write for sum, max and min
    pooling). The input is dilated and padded with the init value, then reduced."""
    table = ctx.op.options_2
    if table is None or len(ctx.op.inputs) != 2 or len(ctx.op.outputs) != 1:
        raise ctx.fail("only the one-operand form (input, init_value) with its options is supported")
    x = ctx.input(0)
    rank = len(x.shape)
    window = table.ints(0, "window_dimensions", "i64")
    # Absent options take their defaults: strides and dilations 1, no padding.
    strides, base, dilations = (table.ints(slot, what, "i64") or [1] * rank for slot, what in
                                ((1, "window_strides"), (2, "base_dilations"), (3, "window_dilations")))
    padding = table.ints(4, "padding", "i64") or [0] * (2 * rank)
    function = _body_function(ctx, table.scalar(5, "i32"))
    if len(padding) != 2 * rank or len(base) != rank:
        raise ctx.fail(f"padding {padding} and base dilations {base} do not fit rank {rank}")
    init = ctx.input_like(1, 0)
    value = padding_value(ctx, 1) if any(padding) or any(d != 1 for d in base) else None
    x = dilate(ctx, x, base, value) if any(d != 1 for d in base) else x
    if any(padding):
        if min(padding) < 0:
            raise ctx.fail(f"negative padding {padding} is not supported")
        x = ctx.b.pad(x, padding[0::2], padding[1::2], {"value": value})
    ctx.set_output(0, _window_reduce(ctx, x, init, window, strides, dilations, function))


def _body_function(ctx, index: int) -> str:
    model = ctx.model
    if not 0 <= index < len(model.subgraphs):
        raise ctx.malformed(f"its body subgraph index {index} is out of range")
    body = model.subgraphs[index]
    ops = body.operators
    if (len(ops) != 1 or ops[0].opcode.name not in _BODY or len(body.inputs) != 2
            or sorted(ops[0].inputs) != sorted(body.inputs) or list(ops[0].outputs) != list(body.outputs)):
        raise ctx.fail(f"its body subgraph {index} is not one of {', '.join(sorted(_BODY))} of its two inputs")
    return _BODY[ops[0].opcode.name]


def _window_reduce(ctx, x, init, window: list[int], strides: list[int], dilations: list[int], function: str):
    """init combined with every window's elements by `function` (a binary builder method)."""
    b = ctx.b
    rank = len(x.shape)
    if not (len(window) == len(strides) == len(dilations) == rank) or min(window + strides + dilations) < 1:
        raise ctx.fail(f"window {window}, strides {strides} and dilations {dilations} do not fit rank {rank}")
    if int(np.prod(window)) > MAX_WINDOW_ELEMENTS:
        raise ctx.fail(f"its window has more than {MAX_WINDOW_ELEMENTS} elements")
    out = [(n - ((w - 1) * d + 1)) // s + 1 for n, w, d, s in zip(x.shape, window, dilations, strides)]
    if min(out) < 1:
        raise ctx.fail(f"the window {window} does not fit the input {list(x.shape)}")
    total = None
    for offset in itertools.product(*(range(w) for w in window)):
        starts = [o * d for o, d in zip(offset, dilations)]
        sizes = [(n - 1) * s + 1 for n, s in zip(out, strides)]
        part = b.slice(x, starts, sizes, {"strides": strides})
        total = part if total is None else getattr(b, function)(total, part)
    if init.shape:
        init = b.reshape(init, [])
    return getattr(b, function)(init, total)


TRANSLATORS = {
    "DILATE": dilate_op,
    "STABLEHLO_PAD": stablehlo_pad,
    "REDUCE_WINDOW": reduce_window,
    "STABLEHLO_REDUCE_WINDOW": stablehlo_reduce_window,
}
