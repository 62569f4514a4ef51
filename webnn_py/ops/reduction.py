"""Reductions (§8.9.39: reduceL1 … reduceSumSquare), argMin/argMax (§8.9.5)
and cumulativeSum (§8.9.12): the operators that combine values along axes."""
from __future__ import annotations

import numpy as np

from ..base.datatypes import data_type
from ..base.descriptor import OperandDescriptor
from .registry import ANY, BuildContext, TensorLimits, compute_type, register

# The allowedDataTypes each reduction method passes to "create a reduction
# operation" (§8.9.39); reduceMax and reduceMin pass none, i.e. any type.
_NUMERIC = ("float32", "float16", "int32", "uint32", "int64", "uint64")
_FLOAT = ("float32", "float16")
REDUCTION_TYPES = {
    "reduceL1": _NUMERIC, "reduceL2": _FLOAT, "reduceLogSum": _FLOAT, "reduceLogSumExp": _FLOAT,
    "reduceMax": ANY.data_types, "reduceMean": _FLOAT, "reduceMin": ANY.data_types,
    "reduceProduct": _NUMERIC, "reduceSum": _NUMERIC, "reduceSumSquare": _NUMERIC,
}


def reduction_output_sizes(input_shape, axes, keep_dimensions: bool):
    """§8.9.39 "calculate reduction output sizes": (output shape, axes), or a
    string saying why it fails. `axes` None means all axes."""
    rank = len(input_shape)
    if axes is None:
        axes = list(range(rank))                                     # step 2
    else:                                                            # step 3
        for axis in axes:
            if not 0 <= axis < rank:
                return f"axis {axis} is out of range for rank {rank}"
        if len(set(axes)) != len(axes):
            return f"axes {list(axes)} contain duplicate values"
    if keep_dimensions:                                              # step 4
        shape = [1 if index in axes else dim for index, dim in enumerate(input_shape)]
    else:                                                            # step 5
        shape = [dim for index, dim in enumerate(input_shape) if index not in axes]
    return tuple(shape), tuple(axes)


def build_reduction(ctx: BuildContext, input, options: dict):
    """§8.9.39 "create a reduction operation", steps 3-8."""
    desc = ctx.check("input", input)      # steps 3-4: validate, allowedDataTypes
    result = reduction_output_sizes(desc.shape, options.get("axes"), options.get("keepDimensions", False))
    if isinstance(result, str):           # step 5
        ctx.fail(result)
    shape, axes = result
    return ctx.emit([input], [OperandDescriptor(desc.data_type, shape)], {"axes": axes})[0]


def _reduce(op: str, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """The reduction functions over `axes` of `x` (already in its computation
    type). With axes = () numpy applies each function to every value alone,
    which is exactly the spec's "present and empty" behaviour."""
    ct = x.dtype
    if op == "reduceSum":
        return np.sum(x, axis=axes, dtype=ct)
    if op == "reduceL1":
        # abs then sum; integers wrap like native types (abs(INT_MIN) stays INT_MIN).
        return np.sum(np.abs(x), axis=axes, dtype=ct)
    if op == "reduceSumSquare":
        return np.sum(x * x, axis=axes, dtype=ct)
    if op == "reduceL2":
        return np.sqrt(np.sum(x * x, axis=axes, dtype=ct))
    if op == "reduceLogSum":
        return np.log(np.sum(x, axis=axes, dtype=ct))
    if op == "reduceLogSumExp":
        # log(sum(exp(x))) as the spec's decomposition says, evaluated with the
        # usual shift by the maximum so that exp does not overflow for inputs
        # whose log-sum-exp is representable (mathematically identical). An
        # infinite or NaN maximum is not shifted, so ±inf and NaN propagate as
        # in the unshifted formula.
        shift = np.max(x, axis=axes, keepdims=True)
        shift = np.where(np.isfinite(shift), shift, 0).astype(ct)
        summed = np.sum(np.exp(x - shift), axis=axes, dtype=ct, keepdims=True)
        return np.squeeze(np.log(summed) + shift, axis=axes)
    if op == "reduceMax":
        return np.max(x, axis=axes)
    if op == "reduceMin":
        return np.min(x, axis=axes)
    if op == "reduceMean":
        return np.mean(x, axis=axes, dtype=ct)
    if op == "reduceProduct":
        return np.prod(x, axis=axes, dtype=ct)
    raise AssertionError(op)


def reduction_kernel(op: str):
    def compute(inputs, attributes, outputs):
        (x,) = inputs
        out = outputs[0]
        with np.errstate(all="ignore"):
            result = _reduce(op, x.astype(compute_type(x.dtype), copy=False), tuple(attributes["axes"]))
        # keepDimensions only changes the shape (§8.9.39 note): reshape to the
        # descriptor's shape, rounding float16 once.
        return [np.asarray(result).astype(out.type.numpy).reshape(out.shape)]
    return compute


# -- argMin / argMax (§8.9.5) --

ARG_OUTPUT_TYPES = ("int32", "int64")


def build_arg(ctx: BuildContext, input, axis: int, options: dict):
    """§8.9.5 "create an argMin/argMax operation", steps 3-10."""
    desc = ctx.descriptor(input)                                          # step 3
    if axis >= desc.rank:                                                 # step 4
        ctx.fail(f"axis {axis} is out of range for rank {desc.rank}")
    ctx.check("input", input)             # the table: any type, rank 1 to N (implied by step 4)
    output_type = options.get("outputDataType", "int32")
    if output_type not in ARG_OUTPUT_TYPES:                               # step 5
        ctx.fail(f"outputDataType {output_type} is not allowed; allowed: {', '.join(ARG_OUTPUT_TYPES)}")
    if desc.shape[axis] > np.iinfo(data_type(output_type).numpy).max:     # step 6
        ctx.fail(f"input dimension {desc.shape[axis]} along axis {axis} exceeds the maximum of {output_type}")
    result = reduction_output_sizes(desc.shape, [axis], options.get("keepDimensions", False))
    if isinstance(result, str):                                           # step 7
        ctx.fail(result)
    shape, _ = result
    return ctx.emit([input], [OperandDescriptor(output_type, shape)], {"axis": axis})[0]


def arg_kernel(op: str):
    find = np.argmin if op == "argMin" else np.argmax

    def compute(inputs, attributes, outputs):
        (x,) = inputs
        out = outputs[0]
        # Ties are implementation-defined (§8.9.5); numpy returns the first
        # index, the most common choice (and ONNX's default). NaN counts as
        # the extreme, so a NaN's index is returned, as torch does. float16 is
        # compared as itself: widening would not change any order.
        result = find(x, axis=attributes["axis"])
        return [np.asarray(result).astype(out.type.numpy).reshape(out.shape)]
    return compute


# -- cumulativeSum (§8.9.12) --

def build_cumulative_sum(ctx: BuildContext, input, axis: int, options: dict):
    """§8.9.12 cumulativeSum(), steps 2-6."""
    desc = ctx.check("input", input)        # steps 2-3 (and the table's rank 1 to N)
    if axis >= desc.rank:                   # step 4
        ctx.fail(f"axis {axis} is out of range for rank {desc.rank}")
    attributes = {"axis": axis, "exclusive": bool(options.get("exclusive", False)),
                  "reversed": bool(options.get("reversed", False))}
    # Step 5: the output is a copy of the input's descriptor.
    return ctx.emit([input], [desc], attributes)[0]


def compute_cumulative_sum(inputs, attributes, outputs):
    (x,) = inputs
    axis = attributes["axis"]
    ct = compute_type(x.dtype)
    values = x.astype(ct, copy=False)
    if attributes["reversed"]:
        # Summing from the high coordinates down is the forward sum of the flipped axis.
        values = np.flip(values, axis)
    if attributes["exclusive"]:
        # Exclusive prefix sum: shift the values one place along the axis and
        # put 0 first, so every output is a true sum (no subtraction rounding).
        head = np.zeros_like(np.take(values, [0], axis=axis))
        values = np.concatenate([head, np.take(values, np.arange(values.shape[axis] - 1), axis=axis)], axis=axis)
    with np.errstate(all="ignore"):
        result = np.cumsum(values, axis=axis, dtype=ct)   # integers wrap like native types
    if attributes["reversed"]:
        result = np.flip(result, axis)
    return [np.ascontiguousarray(result).astype(x.dtype, copy=False)]


for _name, _types in REDUCTION_TYPES.items():
    _limits = TensorLimits(_types)
    register(_name, build=build_reduction, kernel=reduction_kernel(_name),
             limits={"input": _limits, "output": _limits})

for _name in ("argMin", "argMax"):
    register(_name, build=build_arg, kernel=arg_kernel(_name),
             limits={"input": ANY.ranks(1), "output": TensorLimits(ARG_OUTPUT_TYPES)})

_CUMSUM_LIMITS = TensorLimits(_NUMERIC, 1)
register("cumulativeSum", build=build_cumulative_sum, kernel=compute_cumulative_sum,
         limits={"input": _CUMSUM_LIMITS, "output": _CUMSUM_LIMITS})
