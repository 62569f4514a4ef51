"""Comparisons, logical operators and selection: LESS, LESS_EQUAL, GREATER,
GREATER_EQUAL, EQUAL, NOT_EQUAL, LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT, SELECT,
SELECT_V2.

TFLite's BOOL tensors are uint8 operands holding 0 or 1 (WebNN has no boolean
type; §8.9.14 element-wise logical operations produce uint8 0/1, and
logicalAnd/Or/Not and where() (§8.9.56) read non-zero as true), which is what a WHILE
condition needs too.
"""
from __future__ import annotations


def _compare(method: str):
    def translate(ctx):
        ctx.set_output(0, getattr(ctx.b, method)(ctx.input(0), ctx.input(1)))
    translate.__name__ = method
    return translate


def logical_not(ctx):
    ctx.set_output(0, ctx.b.logicalNot(ctx.input(0)))


def select(ctx):
    """SELECT: the condition has the values' shape, or is 1-D and picks along
    their first axis; SELECT_V2: all three broadcast (numpy rules, as where())."""
    condition, x, y = ctx.input(0), ctx.input(1), ctx.input(2)
    if condition.dataType != "uint8":
        raise ctx.fail(f"its condition is {condition.dataType}, not a boolean tensor")
    rank = max(len(x.shape), len(y.shape))
    if ctx.op.opcode.name == "SELECT" and len(condition.shape) == 1 and rank > 1:
        condition = ctx.b.reshape(condition, [condition.shape[0]] + [1] * (rank - 1))
    ctx.set_output(0, ctx.b.where(condition, x, y))


TRANSLATORS = {
    "LESS": _compare("lesser"),
    "LESS_EQUAL": _compare("lesserOrEqual"),
    "GREATER": _compare("greater"),
    "GREATER_EQUAL": _compare("greaterOrEqual"),
    "EQUAL": _compare("equal"),
    "NOT_EQUAL": _compare("notEqual"),
    "LOGICAL_AND": _compare("logicalAnd"),
    "LOGICAL_OR": _compare("logicalOr"),
    "LOGICAL_NOT": logical_not,
    "SELECT": select,
    "SELECT_V2": select,
}
