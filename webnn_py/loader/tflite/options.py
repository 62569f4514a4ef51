"""Builtin options tables: field slots of the options each translator reads
(schema.fbs field order), and TFLite's padding arithmetic."""
from __future__ import annotations

import math

# Padding enum of schema.fbs.
SAME, VALID = 0, 1


def read(ctx, slot: int, kind: str, default=0):
    table = ctx.op.options
    return default if table is None else table.scalar(slot, kind, default)


def read_ints(ctx, slot: int, what: str) -> list[int] | None:
    table = ctx.op.options
    if table is None or not table.has(slot):
        return None
    return table.ints(slot, what)


def same_padding(ctx, in_size: int, kernel: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """TFLite's SAME padding: output ceil(in / stride), the extra row/column at the end."""
    if stride < 1 or dilation < 1 or kernel < 1:
        raise ctx.fail(f"stride {stride}, dilation {dilation} and kernel size {kernel} must be positive")
    out = math.ceil(in_size / stride)
    effective = (kernel - 1) * dilation + 1
    total = max((out - 1) * stride + effective - in_size, 0)
    return total // 2, total - total // 2


def padding_2d(ctx, padding: int, in_hw, kernel_hw, strides, dilations=(1, 1)) -> list[int]:
    """WebNN's [top, bottom, left, right] for a TFLite padding mode."""
    if padding == VALID:
        return [0, 0, 0, 0]
    if padding != SAME:
        raise ctx.fail(f"padding mode {padding} is not supported")
    top, bottom = same_padding(ctx, in_hw[0], kernel_hw[0], strides[0], dilations[0])
    left, right = same_padding(ctx, in_hw[1], kernel_hw[1], strides[1], dilations[1])
    return [top, bottom, left, right]


def positive(ctx, value: int, what: str) -> int:
    if value < 1:
        raise ctx.fail(f"{what} is {value}; it must be at least 1")
    return value
