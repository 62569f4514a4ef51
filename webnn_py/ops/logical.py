"""Element-wise logical operators (§8.9.14) and where (§8.9.56).

Both families produce or consume the spec's "uint8" boolean convention:
logical results are 0 or 1, and a condition/logical input counts as true when
it is non-zero.
"""
from __future__ import annotations

import numpy as np

from ..base.descriptor import OperandDescriptor
from .broadcast import broadcast_bidirectional
from .registry import ANY, FLOATS, BuildContext, TensorLimits, register

COMPARISONS = ("equal", "notEqual", "greater", "greaterOrEqual", "lesser", "lesserOrEqual")
LOGICAL_BINARY = ("logicalAnd", "logicalOr", "logicalXor")
# The single-operand operations (MLLogicalNotSupportLimits: a, output).
LOGICAL_UNARY = ("logicalNot", "isNaN", "isInfinite")

UINT8 = TensorLimits(("uint8",))
# Step 4 restricts the logical operators to uint8, step 5 isNaN/isInfinite to
# float types; the comparisons accept any type.
_A_LIMITS = {**{op: ANY for op in COMPARISONS},
             **{op: UINT8 for op in LOGICAL_BINARY + ("logicalNot",)},
             "isNaN": TensorLimits(FLOATS), "isInfinite": TensorLimits(FLOATS)}


def _build(ctx: BuildContext, a, b, options: dict):
    """§8.9.14 "create an element-wise logical operation", steps 3-10
    (step 2, "can build", is the builder's)."""
    a_desc = ctx.check("a", a)            # steps 3-5: validate a, its allowed data types
    if b is not None:
        b_desc = ctx.descriptor(b)        # step 6.1: validate b
        # Step 6.2: b's data type must equal a's (the table's "same as a").
        ctx.same_type("b", b_desc, "a", a_desc)
        shape = broadcast_bidirectional(a_desc.shape, b_desc.shape)   # step 6.3
        if shape is None:
            ctx.fail(f"shapes {list(a_desc.shape)} and {list(b_desc.shape)} are not broadcastable")
        inputs = [a, b]
    else:
        shape = a_desc.shape               # step 7
        inputs = [a]
    # Step 8: the output is always uint8.
    return ctx.emit(inputs, [OperandDescriptor("uint8", tuple(shape))])[0]


def build_binary(ctx: BuildContext, a, b, options: dict):
    return _build(ctx, a, b, options)


def build_unary(ctx: BuildContext, a, options: dict):
    return _build(ctx, a, None, options)


_COMPARE = {"equal": np.equal, "notEqual": np.not_equal, "greater": np.greater,
            "greaterOrEqual": np.greater_equal, "lesser": np.less, "lesserOrEqual": np.less_equal}
_LOGIC = {"logicalAnd": np.logical_and, "logicalOr": np.logical_or, "logicalXor": np.logical_xor}


def kernel(op: str):
    def compute(inputs, attributes, outputs):
        a = inputs[0]
        if op in _COMPARE:
            # IEEE comparisons: any comparison with NaN is false except notEqual,
            # which is why greaterOrEqual is not logicalNot(lesser) (§8.9.14 note).
            # float16 compares exactly as itself (widening cannot change an order).
            # Mixed signed/unsigned never meet here (b has a's type), so numpy
            # compares in the type itself, exactly, even for int64/uint64.
            result = _COMPARE[op](a, inputs[1])
        elif op in _LOGIC:
            # uint8 inputs: non-zero is true.
            result = _LOGIC[op](a != 0, inputs[1] != 0)
        elif op == "logicalNot":
            result = a == 0
        elif op == "isNaN":
            result = np.isnan(a)
        else:
            result = np.isinf(a)
        return [np.asarray(result).astype(np.uint8).reshape(outputs[0].shape)]
    return compute


def build_where(ctx: BuildContext, condition, true_value, false_value, options: dict):
    """§8.9.56 where(), steps 2-8."""
    # Step 2: validate all three operands before any data type check.
    for operand in (condition, true_value, false_value):
        ctx.descriptor(operand)
    # Step 3: data types per the table (condition uint8, trueValue any,
    # falseValue the same as trueValue).
    c_desc = ctx.check("condition", condition)
    t_desc = ctx.check("trueValue", true_value)
    f_desc = ctx.check("falseValue", false_value)
    ctx.same_type("falseValue", f_desc, "trueValue", t_desc)
    # Step 4: trueValue with falseValue, then step 5: the condition with that.
    shape = broadcast_bidirectional(t_desc.shape, f_desc.shape)
    if shape is None:
        ctx.fail(f"trueValue shape {list(t_desc.shape)} and falseValue shape {list(f_desc.shape)} "
                 "are not broadcastable")
    value_shape = shape
    shape = broadcast_bidirectional(c_desc.shape, value_shape)
    if shape is None:
        ctx.fail(f"condition shape {list(c_desc.shape)} is not broadcastable with {list(value_shape)}")
    # Step 6: the output has trueValue's data type.
    return ctx.emit([condition, true_value, false_value],
                    [OperandDescriptor(t_desc.data_type, tuple(shape))])[0]


def compute_where(inputs, attributes, outputs):
    condition, true_value, false_value = inputs
    # Selection copies values, so no computation type is involved; non-zero is true.
    result = np.where(condition != 0, true_value, false_value)
    return [np.broadcast_to(result, outputs[0].shape).astype(true_value.dtype, copy=True)]


for _name in COMPARISONS + LOGICAL_BINARY:
    register(_name, build=build_binary, kernel=kernel(_name),
             limits={"a": _A_LIMITS[_name], "b": _A_LIMITS[_name], "output": UINT8})
for _name in LOGICAL_UNARY:
    register(_name, build=build_unary, kernel=kernel(_name),
             limits={"a": _A_LIMITS[_name], "output": UINT8})

register("where", build=build_where, kernel=compute_where,
         limits={"condition": UINT8, "trueValue": ANY, "falseValue": ANY, "output": ANY})
