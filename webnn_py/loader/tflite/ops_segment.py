"""Reductions, lookups and selections by id or rank: UNSORTED_SEGMENT_SUM/PROD/
MAX/MIN, SEGMENT_SUM, HASHTABLE_LOOKUP, TOPK_V2.

Each compares the ids with every segment (or key, or rank) number at once: a
[segments, rows] mask from equal(), then where() fills the rows outside a segment
with the reduction's identity and a reduction over the rows finishes (argMax of
the mask for a lookup). Run-time ids work; only the number of segments must be
known at load time (it is the output's first dimension).
"""
from __future__ import annotations

import numpy as np

from .importer import NUMPY_TYPES
from .ops_shape import _ints

# Rows x segments one mask may hold (a hostile num_segments must not allocate without bound).
MAX_MASK_ELEMENTS = 1 << 24


def _identity(method: str, data_type: str):
    """What an empty segment holds: LiteRT's kernels start from 0, 1, the lowest and the highest value."""
    dtype = NUMPY_TYPES[data_type]
    info = np.finfo(dtype) if np.dtype(dtype).kind == "f" else np.iinfo(dtype)
    return {"reduceSum": 0, "reduceProduct": 1, "reduceMax": info.min, "reduceMin": info.max}[method]


def _segment_reduce(ctx, method: str, data, ids, segments: int):
    """out[s] = reduce(data[i] for the rows i whose id is s); ids cover data's first
    len(ids.shape) dimensions."""
    b = ctx.b
    id_rank = len(ids.shape)
    if list(data.shape[:id_rank]) != list(ids.shape):
        raise ctx.fail(f"segment ids {list(ids.shape)} do not match the data's leading dimensions "
                       f"{list(data.shape)}")
    rows = int(np.prod(ids.shape, dtype=np.int64))
    inner = list(data.shape[id_rank:])
    if segments < 1 or segments * rows > MAX_MASK_ELEMENTS:
        raise ctx.fail(f"{segments} segments over {rows} rows is out of range")
    flat = b.reshape(data, [1, rows] + inner)
    numbers = ctx.constant_operand(np.arange(segments, dtype=NUMPY_TYPES[ids.dataType]).reshape(segments, 1))
    mask = b.equal(b.reshape(ids, [1, rows]), numbers)                       # [segments, rows]
    mask = b.reshape(mask, [segments, rows] + [1] * len(inner))
    fill = ctx.constant_operand(np.full((), _identity(method, data.dataType), NUMPY_TYPES[data.dataType]))
    masked = b.where(mask, flat, fill)                                       # [segments, rows, inner...]
    return getattr(b, method)(masked, {"axes": [1], "keepDimensions": False})


def _unsorted(method: str):
    def translate(ctx):
        """data, segment_ids, num_segments (a constant)."""
        segments = _ints(ctx.required_const(2, "num_segments"))
        if len(segments) != 1:
            raise ctx.fail("num_segments must be a scalar")
        ctx.set_output(0, _segment_reduce(ctx, method, ctx.input(0), ctx.input(1), segments[0]))
    return translate


def segment_sum(ctx):
    """data, segment_ids: the output has max(id) + 1 segments, so the ids must be a
    constant (with run-time ids its shape would depend on their values)."""
    ids = np.asarray(ctx.required_const(1, "segment ids"))
    if ids.ndim != 1 or ids.size == 0 or ids.min() < 0 or (np.diff(ids) < 0).any():
        raise ctx.fail("its segment ids must be a sorted, non-negative 1-D constant")
    ctx.set_output(0, _segment_reduce(ctx, "reduceSum", ctx.input(0), ctx.input(1), int(ids.max()) + 1))


def hashtable_lookup(ctx):
    """lookup [n] (int32), keys [k] (int32), values [k, ...]; outputs the values of
    the matching keys (zeros where none matches) and hits (uint8 0/1)."""
    b = ctx.b
    lookup, keys, values = ctx.input(0), ctx.input(1), ctx.input(2)
    if ctx.input_tensor(2).ml_type is None and ctx.input_tensor(2).quantization is None:
        raise ctx.fail(f"its values are {ctx.input_tensor(2).type_name}, which WebNN has no data type for")
    if len(lookup.shape) != 1 or len(keys.shape) != 1 or not values.shape or values.shape[0] != keys.shape[0]:
        raise ctx.fail(f"lookup {list(lookup.shape)}, keys {list(keys.shape)} and values {list(values.shape)} "
                       "do not fit")
    zero = ctx.constant_operand(np.zeros((), NUMPY_TYPES[values.dataType]))
    found, hits = _lookup(ctx, lookup, keys, values, zero)
    ctx.set_output(0, found)
    ctx.set_output(1, hits)


def _lookup(ctx, queries, keys, values, default):
    """(values of the keys equal to each query, else `default`; hits as uint8 0/1):
    queries [...], keys [k], values [k, ...] -> [..., ...]."""
    b = ctx.b
    lead, k = list(queries.shape), keys.shape[0]
    ctx.check_made([int(np.prod(lead, dtype=np.int64)), k], "its key comparison")
    matches = b.equal(b.reshape(queries, lead + [1]), b.reshape(keys, [1] * len(lead) + [k]))   # [..., k]
    hits = b.reduceMax(matches, {"axes": [len(lead)], "keepDimensions": False})
    position = b.argMax(matches, len(lead), {"keepDimensions": False, "outputDataType": "int32"})
    found = b.gather(values, position, {"axis": 0})
    hit_rows = b.reshape(hits, lead + [1] * (len(values.shape) - 1))
    return b.where(hit_rows, found, default), hits


def topk_v2(ctx):
    """input [..., n], k (a constant); outputs the k largest values along the last
    axis, largest first, and their indices (int32), equal values in index order as
    LiteRT gives them. WebNN has no sort: each element's rank is the number of
    elements before it in that order (greater, or equal with a lower index), from
    one [..., n, n] comparison; output slot r takes the element of rank r."""
    b = ctx.b
    x = ctx.input(0)
    k = _ints(ctx.required_const(1, "k"))
    if len(x.shape) < 1 or len(k) != 1 or not 0 < k[0] <= x.shape[-1]:
        raise ctx.fail(f"k {k} does not fit an input of shape {list(x.shape)}")
    k, n, lead = k[0], x.shape[-1], list(x.shape[:-1])
    if n * n * max(int(np.prod(lead, dtype=np.int64)), 1) > MAX_MASK_ELEMENTS:
        raise ctx.fail(f"ranking {n} values per row needs more than {MAX_MASK_ELEMENTS} comparisons")
    other = b.reshape(x, lead + [1, n])              # element i, along the last axis
    this = b.reshape(x, lead + [n, 1])               # element j, along the one before
    before = np.tril(np.ones((n, n), np.uint8), -1)   # [j, i]: i < j
    ahead = b.logicalOr(b.greater(other, this),
                        b.logicalAnd(b.equal(other, this), ctx.constant_operand(before)))
    rank = b.reduceSum(b.cast(ahead, "int32"), {"axes": [len(lead) + 1], "keepDimensions": False})   # [..., n]
    slots = ctx.constant_operand(np.arange(k, dtype=np.int32).reshape(k, 1))
    picked = b.equal(b.reshape(rank, lead + [1, n]), slots)                                   # [..., k, n]
    indices = b.argMax(picked, len(lead) + 1, {"keepDimensions": False, "outputDataType": "int32"})
    ctx.set_output(0, b.gatherElements(x, indices, {"axis": len(lead)}))
    ctx.set_output(1, indices)


TRANSLATORS = {
    "TOPK_V2": topk_v2,
    "UNSORTED_SEGMENT_SUM": _unsorted("reduceSum"),
    "UNSORTED_SEGMENT_PROD": _unsorted("reduceProduct"),
    "UNSORTED_SEGMENT_MAX": _unsorted("reduceMax"),
    "UNSORTED_SEGMENT_MIN": _unsorted("reduceMin"),
    "SEGMENT_SUM": segment_sum,
    "HASHTABLE_LOOKUP": hashtable_lookup,
}
