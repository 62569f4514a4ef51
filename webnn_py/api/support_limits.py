"""opSupportLimits() (§8.3.7), derived from the operator tables."""
from __future__ import annotations

from ..base.datatypes import DATA_TYPES
from ..base.descriptor import MAX_RANK, MAX_TENSOR_BYTE_LENGTH
from ..ops import OPERATORS

ALL_TYPES = list(DATA_TYPES)


def _limits(types=None, min_rank=0, max_rank=MAX_RANK) -> dict:
    return {"dataTypes": list(types or ALL_TYPES), "rankRange": {"min": min_rank, "max": max_rank}}


def op_support_limits() -> dict:
    result = {
        "preferredInputLayout": "nchw",
        "maxTensorByteLength": MAX_TENSOR_BYTE_LENGTH,
        "input": _limits(),
        "constant": _limits(),
        "output": _limits(),
    }
    # The element-wise binary family accepts every data type at every rank.
    for name in ("add", "sub", "mul", "div", "max", "min", "pow"):
        if name in OPERATORS:
            result[name] = {"a": _limits(), "b": _limits(), "output": _limits()}
    return result
