"""cast (§8.9.7): convert every element to another MLOperandDataType."""
from __future__ import annotations

import numpy as np

from ..base.datatypes import data_type
from ..base.descriptor import OperandDescriptor
from .registry import ANY, BuildContext, register


def build(ctx: BuildContext, input, data_type_name: str, options: dict):
    """§8.9.7 cast(input, dataType, options), steps 2-5."""
    desc = ctx.check("input", input)
    # Step 3: the target type must be one the output allows (every type, here;
    # WebIDL's enum conversion has already rejected unknown names).
    if data_type_name not in ANY.data_types:
        ctx.fail(f"dataType {data_type_name} is not an allowed output data type")
    return ctx.emit([input], [OperandDescriptor(data_type_name, desc.shape)], {"dataType": data_type_name})[0]


def compute(inputs, attributes, outputs):
    """The table of §8.9.7:
      * to a float type: nearest representable value, +/-Infinity out of range
        (numpy's conversions round to nearest even and overflow to infinity);
      * int to int: the lowest N bits, two's complement (numpy's C-style casts);
      * float to int: truncated toward zero in range. Out of range and NaN are
        implementation-defined; we saturate to the target's range and map NaN
        to 0, which is deterministic on every platform (numpy's own float-to-int
        casts of such values are undefined behaviour in C).
    """
    x = inputs[0]
    target = data_type(attributes["dataType"]).numpy
    if x.dtype.kind == "f" and target.kind in "iu":
        return [_float_to_int(x, target)]
    with np.errstate(all="ignore"):       # overflow to infinity is the specified result
        return [np.array(x, dtype=target, copy=True)]


def _float_to_int(x: np.ndarray, target: np.dtype) -> np.ndarray:
    info = np.iinfo(target)
    truncated = np.trunc(x.astype(np.float64))
    # The bounds as float64 are exact: 0, -2**(n-1), and one past the maximum, 2**n or
    # 2**(n-1); comparing against them avoids the float64 rounding of 2**63-1.
    lowest = float(info.min)
    past_max = float(int(info.max) + 1)
    in_range = (truncated >= lowest) & (truncated < past_max)   # False for NaN
    result = np.where(in_range, truncated, 0.0).astype(target)
    result = np.where(truncated >= past_max, np.array(info.max, target), result)
    return np.where(truncated < lowest, np.array(info.min, target), result)


register("cast", build=build, kernel=compute, limits={"input": ANY, "output": ANY})
