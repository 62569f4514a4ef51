"""§9.2 "cast" a number (an MLNumber or a double option) to an MLOperandDataType.

Shared by the builder (constant(dataType, value)) and every operator whose
options carry numbers that the spec casts to the operand's type (clamp's
bounds, pad's value, gemm's alpha and beta, normalization epsilons, ...).
"""
from __future__ import annotations

import math

import numpy as np


def cast_number(x, data_type: str):
    """Cast an MLNumber (Python int for bigint, float for double) to `data_type`."""
    if data_type in ("float32", "float16"):
        return _convert_to_float(x, 32 if data_type == "float32" else 16)
    bits, signedness = {
        "int64": (64, "signed"), "uint64": (64, "unsigned"),
        # §9.2 says ConvertToInt(x, 32, "signed") for "uint32"; that clamps
        # every uint32 value above 2**31-1, which cannot be intended: we use
        # the unsigned range, like every other unsigned type in the table.
        "int32": (32, "signed"), "uint32": (32, "unsigned"),
        "int8": (8, "signed"), "uint8": (8, "unsigned"),
    }[data_type]
    return _convert_to_int(x, bits, signedness)


def _convert_to_float(x, bits: int):
    """ConvertToFloat(x, bitLength): round to nearest even, overflow to ±Infinity."""
    if isinstance(x, float) and math.isnan(x):
        return math.nan
    dtype = np.float32 if bits == 32 else np.float16
    # Python floats are binary64; for ints beyond 2**1024 go through the sign.
    try:
        as_double = float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf
    with np.errstate(over="ignore"):
        return float(dtype(as_double))


def _convert_to_int(x, bits: int, signedness: str) -> int:
    """ConvertToInt(x, bitLength, signedness): clamp, then round half to even."""
    if signedness == "unsigned":
        lower, upper = 0, 2**bits - 1
    else:
        lower, upper = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    if isinstance(x, float):
        if math.isnan(x):
            return 0
        if math.isinf(x):
            return upper if x > 0 else lower
        # Python's round() is round-half-even; clamp again after it because a
        # double clamped to 2**63-1 is 2**63 exactly.
        return min(max(int(round(min(max(x, lower), upper))), lower), upper)
    return min(max(int(x), lower), upper)
