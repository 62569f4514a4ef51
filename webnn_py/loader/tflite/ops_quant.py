"""DEQUANTIZE, QUANTIZE, DENSIFY, CAST.

Constant folding here is limited to what is exact and must happen anyway:
fp16 weights behind DEQUANTIZE widen to float32 exactly, and DENSIFY turns a
sparse constant into the dense one it stands for. Quantized data goes through
dequantizeLinear/quantizeLinear (see importer.py).
"""
from __future__ import annotations

import numpy as np

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
    "CAST": cast,
    "DENSIFY": densify,
}
