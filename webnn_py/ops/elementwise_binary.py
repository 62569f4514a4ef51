"""Element-wise binary operators (§8.9.13): add, sub, mul, div, max, min, pow."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..base.descriptor import OperandDescriptor
from ..base.errors import describe
from .broadcast import broadcast_bidirectional
from .registry import register

NAMES = ("add", "sub", "mul", "div", "max", "min", "pow")


def infer(name: str, inputs: Sequence[OperandDescriptor], options: dict, label: str) -> list[OperandDescriptor]:
    """§8.9.13 "create an element-wise binary operation", steps 4-6."""
    a, b = inputs
    if a.data_type != b.data_type:
        raise TypeError(describe(name, label, f"the data types of a ({a.data_type}) and b ({b.data_type}) differ"))
    shape = broadcast_bidirectional(a.shape, b.shape)
    if shape is None:
        raise TypeError(describe(name, label, f"shapes {list(a.shape)} and {list(b.shape)} are not broadcastable"))
    return [OperandDescriptor(a.data_type, shape)]


_UFUNCS = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
}


def kernel(name: str, inputs: Sequence[np.ndarray], options: dict, outputs: Sequence[OperandDescriptor]) -> list[np.ndarray]:
    a, b = inputs
    out_dtype = a.dtype
    if out_dtype == np.float16:
        # float16 is computed in float32 and rounded once, as native backends do.
        a, b = a.astype(np.float32), b.astype(np.float32)
    with np.errstate(all="ignore"):
        if name in _UFUNCS:
            result = _UFUNCS[name](a, b)
        elif name == "div":
            result = _divide(a, b)
        else:
            result = _power(a, b)
    return [np.asarray(result).astype(out_dtype, copy=False)]


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
    return np.where(zero, 0, quotient).astype(a.dtype)


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return np.power(a, b)
    # numpy refuses negative integer exponents; integer pow with a negative
    # exponent is 1/a**|b| truncated toward zero.
    a_b = np.broadcast_arrays(a, b)
    base, exp = a_b
    out = np.power(base, np.where(exp < 0, 0, exp))
    neg = exp < 0
    if np.any(neg):
        recip = np.where(base == 1, 1, np.where(base == -1, np.where(exp % 2 == 0, 1, -1), 0))
        out = np.where(neg, recip, out)
    return out


register(NAMES, infer, kernel)
