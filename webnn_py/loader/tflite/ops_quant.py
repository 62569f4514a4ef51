"""DEQUANTIZE, QUANTIZE, FAKE_QUANT, DENSIFY, CAST.

Constant folding here is limited to what is exact and must happen anyway:
fp16 weights behind DEQUANTIZE widen to float32 exactly, and DENSIFY turns a
sparse constant into the dense one it stands for. Quantized data goes through
dequantizeLinear/quantizeLinear (see importer.py).
"""
from __future__ import annotations

import numpy as np

from . import options as opt
from .importer import BOOL


def dequantize(ctx):
    index = ctx.input_index(0)
    t = ctx.tensor(index)
    value = ctx.const(index)
    if value is not None and value.dtype == np.float16:
        ctx.set_const(ctx.op.outputs[0], value.astype(np.float32))
        return
    x = ctx.operand(index)      # quantized tensors already are in the float domain
    if x.dataType == "float16":
        x = ctx.b.cast(x, "float32")
    elif t.quantization is None and x.dataType != "float32":
        raise ctx.fail(f"dequantizing {t.type_name} without quantization parameters is not supported")
    ctx.set_output(0, x if x._value.producer is not None else ctx.b.identity(x))


def quantize(ctx):
    t = ctx.output_tensor(0)
    if t.quantization is None:
        raise ctx.fail(f"its output {t.name!r} has no quantization parameters")
    ctx.set_output(0, ctx.input(0))       # set_output rounds onto the output's grid


def fake_quant(ctx):
    """FakeQuantOptions: min 0, max 1, num_bits 2, narrow_range 3. TensorFlow's
    FakeQuantWithMinMaxArgs: the range is nudged so that 0.0 is on the grid, x is
    clamped to it and rounded to the nearest step."""
    b = ctx.b
    x = ctx.input(0)
    low, high = opt.read(ctx, 0, "f32", 0.0), opt.read(ctx, 1, "f32", 0.0)
    bits, narrow = opt.read(ctx, 2, "i32", 8), bool(opt.read(ctx, 3, "bool", False))
    if not 2 <= bits <= 16 or not low < high:
        raise ctx.fail(f"num_bits {bits} or the range [{low}, {high}] is not valid")
    quant_min, quant_max = float(1 if narrow else 0), float((1 << bits) - 1)
    scale = np.float32((np.float32(high) - np.float32(low)) / np.float32(quant_max - quant_min))
    zero_from_min = np.float32(quant_min) - np.float32(low) / scale
    zero = quant_min if zero_from_min < quant_min else quant_max if zero_from_min > quant_max else \
        float(np.floor(zero_from_min + np.float32(0.5)))      # std::round: halves away from zero
    nudged_min = np.float32((quant_min - zero) * scale)
    nudged_max = np.float32((quant_max - zero) * scale)
    clamped = b.clamp(x, {"minValue": float(nudged_min), "maxValue": float(nudged_max)})
    # LiteRT multiplies by the inverse scale; the shifted values are >= 0, so
    # floor(v + 0.5) is its std::round.
    inverse = np.float32(1.0) / scale
    steps = b.floor(b.add(b.mul(b.sub(clamped, ctx.scalar(nudged_min, x)), ctx.scalar(inverse, x)),
                          ctx.scalar(0.5, x)))
    ctx.set_output(0, b.add(b.mul(steps, ctx.scalar(scale, x)), ctx.scalar(nudged_min, x)))


def cast(ctx):
    t = ctx.output_tensor(0)
    if t.type_code == BOOL:
        # To BOOL: non-zero is true. Booleans are uint8 0/1 operands (ops_logical.py),
        # so a cast from BOOL below is an ordinary cast from uint8.
        x = ctx.input(0)
        ctx.set_output(0, ctx.b.notEqual(x, ctx.scalar(0, x)))
        return
    if t.ml_type is None:
        raise ctx.fail(f"casting to {t.type_name} is not supported")
    ctx.set_output(0, ctx.b.cast(ctx.input(0), t.ml_type))


def densify(ctx):
    index = ctx.input_index(0)
    t = ctx.tensor(index)
    if t.sparsity is None or t.buffer == 0 or ctx.model.buffers[t.buffer] is None:
        raise ctx.fail("its input is not a sparse constant")
    out = ctx.output_tensor(0)
    ctx.set_const(ctx.op.outputs[0], sparse_to_dense(ctx, t, ctx.model.buffers[t.buffer], tuple(out.shape)))


def sparse_to_dense(ctx, t, data, dense_shape: tuple[int, ...]) -> np.ndarray:
    """TFLite's sparse tensor format: the dimensions are walked in traversal_order
    (the first `rank` entries permute the original dimensions, the rest are block
    dimensions of the original dimensions named by block_map); a dense level
    enumerates all its indices, a sparse (CSR) level those listed in
    array_indices between array_segments[parent] and array_segments[parent + 1];
    the stored values are the leaves in that order."""
    s = t.sparsity
    rank = len(dense_shape)
    levels = len(s.traversal_order)
    if t.numpy_type is None or any(d < 1 for d in dense_shape):
        raise ctx.fail("the sparse tensor's type or dense shape is not supported")
    if (len(s.dims) != levels or levels != rank + len(s.block_map)
            or sorted(s.traversal_order) != list(range(levels))
            or any(not 0 <= d < rank for d in s.block_map)):
        raise ctx.fail("its sparsity parameters are inconsistent")
    values = np.frombuffer(data, dtype=np.dtype(t.numpy_type).newbyteorder("<"),
                           count=len(data) // np.dtype(t.numpy_type).itemsize)
    total = int(np.prod(dense_shape, dtype=np.int64))
    block_sizes = [s.dims[rank + i].dense_size for i in range(len(s.block_map))]

    parents = np.zeros(1, np.int64)                 # one entry per partial path
    coords = np.zeros((1, 0), np.int64)
    for level in range(levels):
        dim = s.dims[level]
        if dim.dense:
            size = dim.dense_size
            if size < 1 or len(parents) * size > total:
                raise ctx.fail(f"sparsity level {level} has dense size {size}, more than the tensor holds")
            child = np.arange(size, dtype=np.int64)
            coords = np.concatenate([np.repeat(coords, size, axis=0), np.tile(child, len(parents))[:, None]], 1)
            parents = (parents[:, None] * size + child[None, :]).reshape(-1)
        else:
            seg, idx = dim.segments, dim.indices
            if seg is None or idx is None or len(seg) < 2 or parents.size and parents.max() + 1 >= len(seg):
                raise ctx.fail(f"sparsity level {level}'s segments do not cover its parents")
            begin, end = seg[parents], seg[parents + 1]
            counts = end - begin
            if (counts < 0).any() or (begin < 0).any() or (end > len(idx)).any() or counts.sum() > total:
                raise ctx.fail(f"sparsity level {level}'s segments are out of range")
            owner = np.repeat(np.arange(len(parents)), counts)
            position = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts) + begin[owner]
            coords = np.concatenate([coords[owner], idx[position][:, None]], 1)
            parents = position
    if len(parents) > len(values):
        raise ctx.fail(f"the sparse tensor lists {len(parents)} values but stores {len(values)}")
    original = np.zeros((len(parents), rank), np.int64)
    for level in range(rank):
        original[:, s.traversal_order[level]] = coords[:, level]
    for level in range(rank, levels):
        block = s.traversal_order[level] - rank
        d = s.block_map[block]
        original[:, d] = original[:, d] * block_sizes[block] + coords[:, level]
    if ((original < 0) | (original >= np.array(dense_shape))).any():
        raise ctx.fail("a sparse index lies outside the dense shape")
    dense = np.zeros(dense_shape, dtype=t.numpy_type)
    dense[tuple(original.T)] = values[:len(parents)]
    return dense


TRANSLATORS = {
    "DEQUANTIZE": dequantize,
    "QUANTIZE": quantize,
    "FAKE_QUANT": fake_quant,
    "CAST": cast,
    "DENSIFY": densify,
}
