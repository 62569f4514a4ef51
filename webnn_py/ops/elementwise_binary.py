"""Element-wise binary operators (§8.9.13): add, sub, mul, div, max, min, pow."""
from __future__ import annotations

import numpy as np

from .. import kernels
from ..base.descriptor import OperandDescriptor
from .broadcast import broadcast_bidirectional
from .registry import ANY, BuildContext, register

NAMES = ("add", "sub", "mul", "div", "max", "min", "pow")


def build(ctx: BuildContext, a, b, options: dict):
    """§8.9.13 "create an element-wise binary operation", steps 3-7."""
    a_desc = ctx.check("a", a)
    b_desc = ctx.check("b", b)
    ctx.same_type("b", b_desc, "a", a_desc)
    shape = broadcast_bidirectional(a_desc.shape, b_desc.shape)
    if shape is None:
        ctx.fail(f"shapes {list(a_desc.shape)} and {list(b_desc.shape)} are not broadcastable")
    return ctx.emit([a, b], [OperandDescriptor(a_desc.data_type, shape)])[0]


_UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def kernel(op: str):
    def compute(inputs, attributes, outputs):
        a, b = inputs
        # IEEE results (x / 0, overflow, inf - inf), no warnings; numpy's error state set
        # directly (kernels.quietly), not np.errstate's ~1.3 µs per step.
        if a.dtype == np.float16:
            return [kernels.quietly(in_float32, a, b)]
        return [np.asarray(kernels.quietly(function, a, b)).astype(a.dtype, copy=False)]

    def in_float32(a, b):
        # float16 is computed in float32 and rounded once (overflowing to inf), as native
        # backends do.
        return np.asarray(function(a.astype(np.float32), b.astype(np.float32))).astype(np.float16)
    function = _UFUNCS.get(op) or (_divide if op == "div" else _power)
    return compute


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return np.true_divide(a, b)
    # Integer division truncates toward zero (C semantics, as native backends do);
    # division by zero yields 0 rather than trapping.
    zero = b == 0
    safe_b = np.where(zero, 1, b)
    quotient = np.floor_divide(a, safe_b)
    # floor and trunc differ where the remainder is non-zero and the signs differ.
    quotient += ((np.remainder(a, safe_b) != 0) & ((a < 0) != (safe_b < 0))).astype(quotient.dtype)
    return np.where(zero, 0, quotient)


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return np.power(a, b)
    # numpy refuses negative integer exponents; integer pow with a negative
    # exponent is 1 / a**|b| truncated toward zero: ±1 for a = ±1, else 0.
    base, exp = np.broadcast_arrays(a, b)
    out = np.power(base, np.where(exp < 0, 0, exp))
    negative = exp < 0
    if np.any(negative):
        odd = (exp % 2) != 0
        reciprocal = np.where(base == 1, 1, np.where(base == -1, np.where(odd, -1, 1), 0))
        out = np.where(negative, reciprocal, out)
    return out


for _name in NAMES:
    register(_name, build=build, kernel=kernel(_name), limits={"a": ANY, "b": ANY, "output": ANY})
