"""Linear (de)quantization: dequantizeLinear (§8.9.16) and quantizeLinear (§8.9.17),
with scale and zeroPoint blockwise broadcast to the input (§9.1)."""
from __future__ import annotations

import numpy as np

from ..base.descriptor import OperandDescriptor
from .broadcast import blockwise_broadcastable
from .registry import FLOAT, BuildContext, TensorLimits, register

# The quantized types of both tables ("uint8", "int8", "uint32", "int32").
QUANTIZED_TYPES = ("uint8", "int8", "uint32", "int32")
QUANTIZED = TensorLimits(QUANTIZED_TYPES)


def _check_scale_and_zero_point(ctx: BuildContext, input_desc, scale_desc, zero_point_desc):
    """Steps 7-10, common to both operators."""
    for name, desc in (("scale", scale_desc), ("zeroPoint", zero_point_desc)):
        if desc.rank != input_desc.rank:
            ctx.fail(f"{name}'s rank {desc.rank} differs from input's rank {input_desc.rank}")
    if scale_desc.shape != zero_point_desc.shape:
        ctx.fail(f"scale's shape {list(scale_desc.shape)} differs from zeroPoint's shape {list(zero_point_desc.shape)}")
    for name, desc in (("scale", scale_desc), ("zeroPoint", zero_point_desc)):
        if not blockwise_broadcastable(desc.shape, input_desc.shape):
            ctx.fail(f"{name}'s shape {list(desc.shape)} is not blockwise broadcastable to input's shape "
                     f"{list(input_desc.shape)} (each dimension must divide input's)")


def build_dequantize_linear(ctx: BuildContext, input, scale, zero_point, options: dict):
    """§8.9.16 dequantizeLinear(input, scale, zeroPoint, options), steps 2-13."""
    input_desc = ctx.check("input", input)                       # step 3
    scale_desc = ctx.check("scale", scale)                       # step 4
    zero_point_desc = ctx.check("zeroPoint", zero_point)         # step 5
    ctx.same_type("zeroPoint", zero_point_desc, "input", input_desc)   # step 6
    _check_scale_and_zero_point(ctx, input_desc, scale_desc, zero_point_desc)   # steps 7-10
    output = OperandDescriptor(scale_desc.data_type, input_desc.shape)   # step 11
    return ctx.emit([input, scale, zero_point], [output])[0]


def build_quantize_linear(ctx: BuildContext, input, scale, zero_point, options: dict):
    """§8.9.17 quantizeLinear(input, scale, zeroPoint, options), steps 2-13."""
    input_desc = ctx.check("input", input)                       # step 3
    scale_desc = ctx.check("scale", scale)                       # step 4
    ctx.same_type("scale", scale_desc, "input", input_desc)      # step 5
    zero_point_desc = ctx.check("zeroPoint", zero_point)         # step 6
    _check_scale_and_zero_point(ctx, input_desc, scale_desc, zero_point_desc)   # steps 7-10
    output = OperandDescriptor(zero_point_desc.data_type, input_desc.shape)   # step 11
    return ctx.emit([input, scale, zero_point], [output])[0]


def _blocks(shape: tuple[int, ...], block_shape: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Shapes that make a blockwise broadcast an ordinary one (§9.1 "blockwise
    broadcast"): the input viewed as (blocks0, size0, blocks1, size1, ...) and
    the per-block operand as (blocks0, 1, blocks1, 1, ...), so each per-block
    value repeats over its block without materialising the upsampled tensor."""
    split, per_block = [], []
    for dim, blocks in zip(shape, block_shape):
        split += [blocks, dim // blocks]
        per_block += [blocks, 1]
    return tuple(split), tuple(per_block)


def dequantize_linear_kernel(inputs, attributes, outputs):
    x, scale, zero_point = inputs
    out_dtype = scale.dtype
    split, per_block = _blocks(x.shape, scale.shape)
    # output = (input - zeroPoint) * scale. The difference is taken exactly in
    # int64 (int32 and uint32 operands cannot overflow it) and the product in
    # float64, so the result is rounded once, to the scale's type; casting both
    # integers to float16 first, as the decomposition does, would overflow for
    # large int32 values.
    difference = x.reshape(split).astype(np.int64) - zero_point.reshape(per_block).astype(np.int64)
    with np.errstate(all="ignore"):   # beyond float16's range the result is ±Infinity (§9.2)
        result = difference.astype(np.float64) * scale.reshape(per_block).astype(np.float64)
        return [result.reshape(x.shape).astype(out_dtype)]


def quantize_linear_kernel(inputs, attributes, outputs):
    x, scale, zero_point = inputs
    out_dtype = zero_point.dtype
    info = np.iinfo(out_dtype)
    split, per_block = _blocks(x.shape, scale.shape)
    with np.errstate(all="ignore"):
        # roundEven(input / scale) + zeroPoint, saturated to the output type.
        # The quotient is taken in float64 (exact enough that ties round as the
        # real quotient does), and the sum is exact for every zero point.
        quotient = x.reshape(split).astype(np.float64) / scale.reshape(per_block).astype(np.float64)
        value = np.rint(quotient) + zero_point.reshape(per_block).astype(np.float64)
        # The spec's formula clamps to 0..255 for "uint8"; every type saturates
        # to its own range the same way (the decomposition's fixed 0..255 is
        # only right for uint8). NaN has no integer value; it becomes 0, as
        # §9.2's ConvertToInt does.
        value = np.clip(np.nan_to_num(value, nan=0.0, posinf=info.max, neginf=info.min), info.min, info.max)
    return [value.reshape(x.shape).astype(out_dtype)]


LIMITS_DEQUANTIZE = {"input": QUANTIZED, "scale": FLOAT, "zeroPoint": QUANTIZED, "output": FLOAT}
LIMITS_QUANTIZE = {"input": FLOAT, "scale": FLOAT, "zeroPoint": QUANTIZED, "output": QUANTIZED}

register("dequantizeLinear", build=build_dequantize_linear, kernel=dequantize_linear_kernel, limits=LIMITS_DEQUANTIZE)
register("quantizeLinear", build=build_quantize_linear, kernel=quantize_linear_kernel, limits=LIMITS_QUANTIZE)
