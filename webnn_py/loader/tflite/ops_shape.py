"""Data movement: RESHAPE, SQUEEZE, EXPAND_DIMS, CONCATENATION, STRIDED_SLICE, SLICE,
TRANSPOSE, PAD, PADV2, GATHER, DEPTH_TO_SPACE, SPACE_TO_DEPTH, and the reductions MEAN,
SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, REDUCE_ANY, REDUCE_ALL."""
from __future__ import annotations

import numpy as np

from . import options as opt


def _ints(value: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1)]


def _axis(ctx, axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise ctx.fail(f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def _reshape_to_output(ctx):
    """RESHAPE/SQUEEZE/EXPAND_DIMS: every shape here is static, and the model
    usually declares the output's; the element counts must agree (reshape checks).
    Inside WHILE subgraphs TF's converter may leave tensors unranked (declared
    shape []): then the output shape follows from the operator's own parameters."""
    x = ctx.input(0)
    shape = list(ctx.output_tensor(0).shape)
    if not shape:
        # A declared [] is a scalar or an unranked tensor: the parameters tell which.
        shape = _implied_shape(ctx, list(x.shape), int(np.prod(x.shape, dtype=np.int64)))
    if any(d < 0 for d in shape):
        raise ctx.fail(f"the output shape {shape} is dynamic")
    ctx.set_output(0, ctx.b.reshape(x, shape))


def _implied_shape(ctx, in_shape: list[int], count: int) -> list[int]:
    """The output shape of RESHAPE (input 1 or ReshapeOptions.new_shape, one -1
    inferred), EXPAND_DIMS (input 1: the axis) or SQUEEZE (SqueezeOptions.squeeze_dims,
    empty: every size-1 axis)."""
    name = ctx.op.opcode.name
    if name == "EXPAND_DIMS":
        axis = _ints(ctx.required_const(1, "axis"))
        if len(axis) != 1 or not -len(in_shape) - 1 <= axis[0] <= len(in_shape):
            raise ctx.fail(f"axis {axis} is out of range for rank {len(in_shape)}")
        at = axis[0] % (len(in_shape) + 1)
        return in_shape[:at] + [1] + in_shape[at:]
    if name == "SQUEEZE":
        dims = opt.read_ints(ctx, 0, "squeeze_dims") or []
        rank = len(in_shape)
        axes = {_axis(ctx, d, rank) for d in dims} if dims else {k for k, d in enumerate(in_shape) if d == 1}
        return [d for k, d in enumerate(in_shape) if k not in axes]
    shape = _ints(ctx.required_const(1, "new shape")) if ctx.has_input(1) else opt.read_ints(ctx, 0, "new_shape")
    if shape is None:
        return []       # nothing else to go by: the declared scalar
    if shape.count(-1) == 1:
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if known <= 0 or count % known:
            raise ctx.fail(f"the new shape {shape} does not fit {count} elements")
        shape[shape.index(-1)] = count // known
    return shape


def concatenation(ctx):
    """ConcatenationOptions: axis 0, fused_activation 1. LiteRT's float kernel
    ignores fused_activation (converters never set it); so do we, to compute
    what the reference runtime computes."""
    inputs = [ctx.input(k) for k in range(len(ctx.op.inputs))]
    if not inputs:
        raise ctx.fail("it has no inputs")
    axis = _axis(ctx, opt.read(ctx, 0, "i32"), len(inputs[0].shape))
    ctx.set_output(0, ctx.b.concat(inputs, axis))


def transpose(ctx):
    perm = _ints(ctx.required_const(1, "permutation"))
    ctx.set_output(0, ctx.b.transpose(ctx.input(0), {"permutation": perm}))


def _paddings(ctx, k: int, rank: int) -> np.ndarray:
    """Input k, a constant [rank, 2] of non-negative (before, after) paddings."""
    paddings = np.asarray(ctx.required_const(k, "paddings")).astype(np.int64)
    if paddings.shape != (rank, 2) or (paddings < 0).any():
        raise ctx.fail(f"paddings {paddings.tolist()} do not fit rank {rank}")
    return paddings


def pad(ctx):
    """PAD (zeros) and PADV2 (input 2: the constant value)."""
    x = ctx.input(0)
    paddings = _paddings(ctx, 1, len(x.shape))
    options = {"value": padding_value(ctx, 2)} if ctx.has_input(2) else {}
    ctx.set_output(0, ctx.b.pad(x, _ints(paddings[:, 0]), _ints(paddings[:, 1]), options))


def padding_value(ctx, k: int) -> float:
    """Input k, a constant scalar, as the float pad() takes. An integer value of a
    quantized operand is in its storage domain: dequantized with its own parameters,
    or without any, with the operand's (input 0), as LiteRT's kernels read it."""
    value = np.asarray(ctx.required_const(k, "padding value")).reshape(-1)
    if value.size != 1:
        raise ctx.fail("the padding value must be a scalar")
    q = ctx.input_tensor(k).quantization
    if q is None and value.dtype.kind in "iu":
        q = ctx.input_tensor(0).quantization
    if q is not None:
        value = (value.astype(np.float64) - q.zero_point[0]) * q.scale[0]
    return float(value[0])


def slice_(ctx):
    x = ctx.input(0)
    shape = x.shape
    begin = _ints(ctx.required_const(1, "begin"))
    size = _ints(ctx.required_const(2, "size"))
    if len(begin) != len(shape) or len(size) != len(shape):
        raise ctx.fail(f"begin {begin} and size {size} do not fit rank {len(shape)}")
    size = [d - b if s == -1 else s for s, b, d in zip(size, begin, shape)]
    ctx.set_output(0, ctx.b.slice(x, begin, size))


def strided_slice(ctx):
    """StridedSliceOptions: begin_mask 0, end_mask 1, ellipsis_mask 2, new_axis_mask 3,
    shrink_axis_mask 4, offset 5. Negative strides become reverse() + a positive slice."""
    x = ctx.input(0)
    shape = list(x.shape)
    rank = len(shape)
    begin = _ints(ctx.required_const(1, "begin"))
    end = _ints(ctx.required_const(2, "end"))
    strides = _ints(ctx.required_const(3, "strides")) if ctx.has_input(3) else [1] * len(begin)
    begin_mask, end_mask = opt.read(ctx, 0, "i32"), opt.read(ctx, 1, "i32")
    if opt.read(ctx, 2, "i32") or opt.read(ctx, 3, "i32"):
        raise ctx.fail("ellipsis_mask and new_axis_mask are not supported")
    if opt.read(ctx, 5, "bool", False):
        raise ctx.fail("offset=true is not supported")
    if not (len(begin) == len(end) == len(strides)) or len(begin) > rank:
        raise ctx.fail(f"begin {begin}, end {end} and strides {strides} do not fit rank {rank}")
    shrink = opt.read(ctx, 4, "i32")
    starts, sizes, steps, reversed_axes = [], [], [], []
    for axis in range(rank):
        dim = shape[axis]
        if axis >= len(begin):
            starts.append(0), sizes.append(dim), steps.append(1)
            continue
        stride = strides[axis]
        if stride == 0:
            raise ctx.fail("a stride is 0")
        b, e = begin[axis], end[axis]
        if shrink >> axis & 1:
            b = b + dim if b < 0 else b
            if not 0 <= b < dim:
                raise ctx.fail(f"begin {begin[axis]} is out of range on axis {axis}")
            e, stride = b + 1, 1
        else:
            # Python-style clamping, which is what TFLite's strided slice does.
            lo, hi = (0, dim) if stride > 0 else (-1, dim - 1)
            b = (lo if stride > 0 else hi) if begin_mask >> axis & 1 else min(max(b + dim if b < 0 else b, lo), hi)
            e = (hi if stride > 0 else lo) if end_mask >> axis & 1 else min(max(e + dim if e < 0 else e, lo), hi)
        if stride < 0:
            # On the reversed axis, index i is dim - 1 - i.
            reversed_axes.append(axis)
            b, e, stride = dim - 1 - b, dim - 1 - e, -stride
        count = max(0, -(-(e - b) // stride))
        # WebNN's slice sizes are extents in the input (§8.9 slice: the output
        # has ceil(size / stride) elements), so `count` elements span this much.
        starts.append(b if count else 0), sizes.append((count - 1) * stride + 1 if count else 0), steps.append(stride)
    if reversed_axes:
        x = ctx.b.reverse(x, {"axes": reversed_axes})
    if any(s == 0 for s in sizes):
        raise ctx.fail("the slice is empty, which WebNN cannot represent")
    out = ctx.b.slice(x, starts, sizes, {"strides": steps})
    out_shape = list(ctx.output_tensor(0).shape)
    if list(out.shape) != out_shape:
        out = ctx.b.reshape(out, out_shape)
    ctx.set_output(0, out)


def gather(ctx):
    """GatherOptions: axis 0, batch_dims 1."""
    x = ctx.input(0)
    if opt.read(ctx, 1, "i32"):
        raise ctx.fail("batch_dims is not supported")
    axis = _axis(ctx, opt.read(ctx, 0, "i32"), len(x.shape))
    ctx.set_output(0, ctx.b.gather(x, ctx.input(1), {"axis": axis}))


def _block(ctx, x, what: str):
    """SpaceToDepthOptions / DepthToSpaceOptions: block_size 0."""
    if len(x.shape) != 4:
        raise ctx.fail(f"its input must be 4-D (NHWC), it is {list(x.shape)}")
    return opt.positive(ctx, opt.read(ctx, 0, "i32"), "block_size")


def depth_to_space(ctx):
    """NHWC, channels split as (row offset, column offset, depth), TFLite's order."""
    x = ctx.input(0)
    bs = _block(ctx, x, "depth_to_space")
    n, h, w, c = x.shape
    if c % (bs * bs):
        raise ctx.fail(f"{c} channels are not divisible by block_size² = {bs * bs}")
    depth = c // (bs * bs)
    y = ctx.b.reshape(x, [n, h, w, bs, bs, depth])
    y = ctx.b.transpose(y, {"permutation": [0, 1, 3, 2, 4, 5]})
    ctx.set_output(0, ctx.b.reshape(y, [n, h * bs, w * bs, depth]))


def space_to_depth(ctx):
    x = ctx.input(0)
    bs = _block(ctx, x, "space_to_depth")
    n, h, w, c = x.shape
    if h % bs or w % bs:
        raise ctx.fail(f"height {h} and width {w} must be divisible by block_size {bs}")
    y = ctx.b.reshape(x, [n, h // bs, bs, w // bs, bs, c])
    y = ctx.b.transpose(y, {"permutation": [0, 1, 3, 2, 4, 5]})
    ctx.set_output(0, ctx.b.reshape(y, [n, h // bs, w // bs, bs * bs * c]))


def _reduce(method: str):
    def translate(ctx):
        """ReducerOptions: keep_dims 0."""
        x = ctx.input(0)
        rank = len(x.shape)
        axes = sorted({_axis(ctx, a, rank) for a in _ints(ctx.required_const(1, "axes"))})
        keep = bool(opt.read(ctx, 0, "bool", False))
        out = getattr(ctx.b, method)(x, {"axes": axes, "keepDimensions": keep})
        out_shape = list(ctx.output_tensor(0).shape)
        if list(out.shape) != out_shape:
            out = ctx.b.reshape(out, out_shape)
        ctx.set_output(0, out)
    return translate


TRANSLATORS = {
    "RESHAPE": _reshape_to_output,
    "SQUEEZE": _reshape_to_output,
    "EXPAND_DIMS": _reshape_to_output,
    "CONCATENATION": concatenation,
    "TRANSPOSE": transpose,
    "PAD": pad,
    "PADV2": pad,
    "SLICE": slice_,
    "STRIDED_SLICE": strided_slice,
    "GATHER": gather,
    "DEPTH_TO_SPACE": depth_to_space,
    "SPACE_TO_DEPTH": space_to_depth,
    "MEAN": _reduce("reduceMean"),
    "SUM": _reduce("reduceSum"),
    "REDUCE_MAX": _reduce("reduceMax"),
    "REDUCE_MIN": _reduce("reduceMin"),
    "REDUCE_PROD": _reduce("reduceProduct"),
    # Booleans are uint8 0/1 (ops_logical.py): any is their maximum, all their minimum.
    "REDUCE_ANY": _reduce("reduceMax"),
    "REDUCE_ALL": _reduce("reduceMin"),
}
