"""Normalizations: batchNormalization (§8.9.6), instanceNormalization (§8.9.29)
and layerNormalization (§8.9.30)."""
from __future__ import annotations

import numpy as np

from .. import kernels
from ..base.casting import cast_number
from ..base.descriptor import OperandDescriptor
from .registry import FLOAT, BuildContext, compute_type, register

_F32 = np.dtype(np.float32)


def _check_per_feature(ctx: BuildContext, name: str, operand, input_desc: OperandDescriptor, size: int, axis_text: str):
    """The steps shared by mean/variance/scale/bias: same data type as input, shape « size »."""
    desc = ctx.descriptor(operand)
    ctx.same_type(name, desc, "input", input_desc)
    if desc.shape != (size,):
        ctx.fail(f"{name}'s shape {list(desc.shape)} must be [{size}], the size of input's {axis_text}")
    return desc


def _normalize(x: np.ndarray, mean: np.ndarray, variance: np.ndarray, epsilon: float,
               scale: np.ndarray | None, bias: np.ndarray | None) -> np.ndarray:
    """scale * (x - mean) / sqrt(variance + epsilon) + bias, the formula every
    decomposition in this family ends with; absent scale is 1, absent bias 0."""
    work = x.dtype
    with np.errstate(all="ignore"):
        out = (x - mean) / np.sqrt(variance + work.type(epsilon))
        if scale is not None:
            out = scale * out
        if bias is not None:
            out = out + bias
    return out


# -- batchNormalization --------------------------------------------------------------------

def build_batch_normalization(ctx: BuildContext, input, mean, variance, options: dict):
    """§8.9.6 batchNormalization(input, mean, variance, options), steps 2-13."""
    input_desc = ctx.check("input", input)                       # step 3 (and the rank table)
    axis = ctx.axis("axis", options.get("axis", 1), input_desc.rank)   # step 4
    size = input_desc.shape[axis]
    where = f"dimension {axis} (axis)"
    _check_per_feature(ctx, "mean", mean, input_desc, size, where)           # steps 5-6
    _check_per_feature(ctx, "variance", variance, input_desc, size, where)   # steps 7-8
    epsilon = cast_number(options.get("epsilon", 1e-5), input_desc.data_type)   # step 9
    scale, bias = options.get("scale"), options.get("bias")
    if scale is not None:
        _check_per_feature(ctx, "scale", scale, input_desc, size, where)     # step 10
    if bias is not None:
        _check_per_feature(ctx, "bias", bias, input_desc, size, where)       # step 11
    return ctx.emit([input, mean, variance, scale, bias], [input_desc],
                    {"axis": axis, "epsilon": epsilon})[0]


def batch_normalization_kernel(inputs, attributes, outputs):
    x, mean, variance, scale, bias = inputs
    out_dtype = x.dtype
    work = compute_type(out_dtype)
    # The 1-D operands line up with `axis` (the decomposition's reshape to
    # [1, C, 1, 1], generalised to any rank and axis).
    shape = [1] * x.ndim
    shape[attributes["axis"]] = x.shape[attributes["axis"]]

    def per_feature(a):
        return None if a is None else a.astype(work, copy=False).reshape(shape)

    out = _normalize(x.astype(work, copy=False), per_feature(mean), per_feature(variance),
                     attributes["epsilon"], per_feature(scale), per_feature(bias))
    return [out.astype(out_dtype, copy=False)]


# -- instanceNormalization -----------------------------------------------------------------

def build_instance_normalization(ctx: BuildContext, input, options: dict):
    """§8.9.29 instanceNormalization(input, options), steps 2-10."""
    input_desc = ctx.check("input", input)                       # steps 3-4
    epsilon = cast_number(options.get("epsilon", 1e-5), input_desc.data_type)   # step 5
    layout = options.get("layout", "nchw")
    axis = 1 if layout == "nchw" else 3                          # step 6
    size = input_desc.shape[axis]
    where = f"feature dimension {axis} (layout {layout})"
    scale, bias = options.get("scale"), options.get("bias")
    if scale is not None:
        _check_per_feature(ctx, "scale", scale, input_desc, size, where)     # step 7
    if bias is not None:
        _check_per_feature(ctx, "bias", bias, input_desc, size, where)       # step 8
    return ctx.emit([input, scale, bias], [input_desc], {"epsilon": epsilon, "layout": layout})[0]


def instance_normalization_kernel(inputs, attributes, outputs):
    x, scale, bias = inputs
    out_dtype = x.dtype
    work = compute_type(out_dtype)
    x = x.astype(work, copy=False)
    # Mean and variance per sample and feature, over the spatial dimensions.
    if attributes["layout"] == "nchw":
        spatial, shape = (2, 3), (1, x.shape[1], 1, 1)
    else:
        spatial, shape = (1, 2), (1, 1, 1, x.shape[3])
    with np.errstate(all="ignore"):
        mean = x.mean(axis=spatial, keepdims=True)
        variance = np.square(x - mean).mean(axis=spatial, keepdims=True)

    def per_feature(a):
        return None if a is None else a.astype(work, copy=False).reshape(shape)

    out = _normalize(x, mean, variance, attributes["epsilon"], per_feature(scale), per_feature(bias))
    return [out.astype(out_dtype, copy=False)]


# -- layerNormalization --------------------------------------------------------------------

def build_layer_normalization(ctx: BuildContext, input, options: dict):
    """§8.9.30 layerNormalization(input, options), steps 2-11."""
    input_desc = ctx.check("input", input)                       # step 3
    rank = input_desc.rank
    axes = options.get("axes")
    if axes is None:
        # Step 4: every dimension but the first (none for rank 0 or 1).
        axes = list(range(1, rank)) if rank > 1 else []
    else:
        # Step 5.
        axes = [int(a) for a in axes]
        if len(set(axes)) != len(axes):
            ctx.fail(f"axes {axes} contain duplicate values")
        for axis in axes:
            ctx.axis("axes item", axis, rank)
    epsilon = cast_number(options.get("epsilon", 1e-5), input_desc.data_type)   # step 6
    scale, bias = options.get("scale"), options.get("bias")
    operands = [(name, operand, ctx.descriptor(operand)) for name, operand in (("scale", scale), ("bias", bias))
                if operand is not None]
    for name, _, desc in operands:                                # steps 7-8
        ctx.same_type(name, desc, "input", input_desc)
        if desc.rank != len(axes):
            ctx.fail(f"{name}'s rank {desc.rank} differs from the number of axes {len(axes)} (axes {axes})")
    for index, axis in enumerate(axes):                           # step 9
        for name, _, desc in operands:
            if desc.shape[index] != input_desc.shape[axis]:
                ctx.fail(f"{name}'s dimension {index} is {desc.shape[index]}, but input's dimension {axis} "
                         f"(axes[{index}]) is {input_desc.shape[axis]}")
    return ctx.emit([input, scale, bias], [input_desc], {"axes": tuple(axes), "epsilon": epsilon})[0]


def layer_normalization_kernel(inputs, attributes, outputs):
    x, scale, bias = inputs
    out_dtype = x.dtype
    axes = attributes["axes"]
    if x.dtype == _F32 and x.ndim and tuple(axes) == (x.ndim - 1,) and x.flags.c_contiguous:
        fast = kernels.simd()     # the C row kernel: one pass instead of ~8 numpy passes (1.6x on the host)
        if fast is not None:
            def vector(a):
                return None if a is None else np.ascontiguousarray(a, _F32)
            return [fast.layernorm_rows(x, vector(scale), vector(bias), float(np.float32(attributes["epsilon"])))]
    # Other axes: in float64 like the row kernel, rounded once. In float32 the rounded mean,
    # deviation and normalised value each carry ~1 ULP into `scale * normalised + bias`,
    # which partial cancellation between the two terms magnifies past WPT's 14 ULP.
    work = np.dtype(np.float64)
    x = x.astype(work, copy=False)
    axes = attributes["axes"]
    with np.errstate(all="ignore"):
        # With no axes nothing is reduced: mean is x itself and variance 0.
        mean = x.mean(axis=axes, keepdims=True) if axes else x
        variance = np.square(x - mean).mean(axis=axes, keepdims=True) if axes else np.zeros_like(x)
    # scale and bias have one dimension per item of axes, in the order of axes
    # (not necessarily increasing): move their dimensions into increasing axis
    # order, then give them the input's rank with size 1 elsewhere.
    order = sorted(range(len(axes)), key=lambda i: axes[i])
    shape = [1] * x.ndim
    for axis in axes:
        shape[axis] = x.shape[axis]

    def aligned(a):
        return None if a is None else np.transpose(a.astype(work, copy=False), order).reshape(shape)

    out = _normalize(x, mean, variance, attributes["epsilon"], aligned(scale), aligned(bias))
    return [np.asarray(out).astype(out_dtype, copy=False)]


register("batchNormalization", build=build_batch_normalization, kernel=batch_normalization_kernel,
         limits={"input": FLOAT.ranks(1), "mean": FLOAT.rank(1), "variance": FLOAT.rank(1),
                 "scale": FLOAT.rank(1), "bias": FLOAT.rank(1), "output": FLOAT.ranks(1)})
register("instanceNormalization", build=build_instance_normalization, kernel=instance_normalization_kernel,
         limits={"input": FLOAT.rank(4), "scale": FLOAT.rank(1), "bias": FLOAT.rank(1), "output": FLOAT.rank(4)})
register("layerNormalization", build=build_layer_normalization, kernel=layer_normalization_kernel,
         limits={"input": FLOAT, "scale": FLOAT, "bias": FLOAT, "output": FLOAT})
