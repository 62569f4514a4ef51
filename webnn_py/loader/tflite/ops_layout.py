"""Splitting, stacking, tiling, reordering and indexing: SPLIT, SPLIT_V, PACK, UNPACK,
TILE, BROADCAST_TO, REVERSE_V2, REVERSE_SEQUENCE, MIRROR_PAD, SPACE_TO_BATCH_ND,
BATCH_TO_SPACE_ND, GATHER_ND, SCATTER_ND, SPARSE_TO_DENSE, DYNAMIC_UPDATE_SLICE,
EMBEDDING_LOOKUP, ONE_HOT, MATRIX_DIAG, MATRIX_SET_DIAG, ARG_MAX, ARG_MIN, CUMSUM,
BATCH_MATMUL; and the shape queries, folded to constants because every WebNN
shape is static: SHAPE, RANK, FILL, RANGE, BROADCAST_ARGS."""
from __future__ import annotations

import numpy as np

from . import options as opt
from .importer import NUMPY_TYPES
from .ops_shape import _axis, _ints, _paddings

# TensorType codes of ArgMaxOptions/ArgMinOptions.output_type and ShapeOptions.out_type.
_INDEX_TYPES = {2: ("int32", np.int32), 4: ("int64", np.int64)}


def _index_type(ctx, code: int):
    if code not in _INDEX_TYPES:
        raise ctx.fail(f"output type {code} is not INT32 or INT64")
    return _INDEX_TYPES[code]


def _outputs(ctx, values) -> None:
    if len(values) != len(ctx.op.outputs):
        raise ctx.malformed(f"it makes {len(values)} values but has {len(ctx.op.outputs)} outputs")
    for k, value in enumerate(values):
        ctx.set_output(k, value)


def split(ctx):
    """SPLIT: input 0 the axis (a constant), input 1 the value; SplitOptions num_splits 0."""
    x = ctx.input(1)
    axis = _axis(ctx, _ints(ctx.required_const(0, "axis"))[0], len(x.shape))
    count = opt.positive(ctx, opt.read(ctx, 0, "i32"), "num_splits")
    _outputs(ctx, ctx.b.split(x, count, {"axis": axis}))


def split_v(ctx):
    """SPLIT_V: value, size_splits (one may be -1: the rest), axis."""
    x = ctx.input(0)
    axis = _axis(ctx, _ints(ctx.required_const(2, "axis"))[0], len(x.shape))
    sizes = _ints(ctx.required_const(1, "size_splits"))
    if sizes.count(-1) > 1:
        raise ctx.fail(f"size_splits {sizes} has more than one -1")
    if -1 in sizes:
        sizes[sizes.index(-1)] = x.shape[axis] - (sum(sizes) + 1)
    _outputs(ctx, ctx.b.split(x, sizes, {"axis": axis}))


def pack(ctx):
    """PackOptions: values_count 0, axis 1. Each value gains a size-1 axis, then concat."""
    values = [ctx.input(k) for k in range(len(ctx.op.inputs))]
    if not values:
        raise ctx.fail("it has no inputs")
    shape = list(values[0].shape)
    axis = _axis(ctx, opt.read(ctx, 1, "i32"), len(shape) + 1)
    new_shape = shape[:axis] + [1] + shape[axis:]
    ctx.set_output(0, ctx.b.concat([ctx.b.reshape(v, new_shape) for v in values], axis))


def unpack(ctx):
    """UnpackOptions: num 0, axis 1. split along the axis, then drop it."""
    x = ctx.input(0)
    shape = list(x.shape)
    axis = _axis(ctx, opt.read(ctx, 1, "i32"), len(shape))
    parts = ctx.b.split(x, shape[axis], {"axis": axis})
    _outputs(ctx, [ctx.b.reshape(p, shape[:axis] + shape[axis + 1:]) for p in parts])


def tile(ctx):
    ctx.set_output(0, ctx.b.tile(ctx.input(0), _ints(ctx.required_const(1, "multiples"))))


def broadcast_to(ctx):
    ctx.set_output(0, ctx.b.expand(ctx.input(0), _ints(ctx.required_const(1, "shape"))))


def reverse_v2(ctx):
    x = ctx.input(0)
    axes = sorted({_axis(ctx, a, len(x.shape)) for a in _ints(ctx.required_const(1, "axes"))})
    ctx.set_output(0, ctx.b.reverse(x, {"axes": axes}))


def reverse_sequence(ctx):
    """ReverseSequenceOptions: seq_dim 0, batch_dim 1. Row b's first lengths[b]
    elements along seq_dim are reversed: gatherElements with the source index
    where(j < L, L - 1 - j, j), computed from the run-time lengths."""
    x, lengths = ctx.input(0), ctx.input(1)
    b = ctx.b
    rank = len(x.shape)
    seq_dim = _axis(ctx, opt.read(ctx, 0, "i32"), rank)
    batch_dim = _axis(ctx, opt.read(ctx, 1, "i32"), rank)
    if seq_dim == batch_dim or list(lengths.shape) != [x.shape[batch_dim]]:
        raise ctx.fail(f"seq_dim {seq_dim}, batch_dim {batch_dim} and lengths {list(lengths.shape)} do not fit "
                       f"an input of shape {list(x.shape)}")
    along = [1] * rank
    along[seq_dim] = x.shape[seq_dim]
    j = ctx.constant_operand(np.arange(x.shape[seq_dim], dtype=np.int32).reshape(along))
    per_batch = [1] * rank
    per_batch[batch_dim] = x.shape[batch_dim]
    length = b.reshape(b.cast(lengths, "int32"), per_batch)
    source = b.where(b.lesser(j, length), b.sub(b.sub(length, ctx.scalar(1, length)), j), j)
    ctx.set_output(0, b.gatherElements(x, b.expand(source, list(x.shape)), {"axis": seq_dim}))


def mirror_pad(ctx):
    """MirrorPadOptions: mode 0 (REFLECT 0: the edge is not repeated, WebNN's
    "reflection"; SYMMETRIC 1: it is, built from reversed slices and concat)."""
    x = ctx.input(0)
    b = ctx.b
    paddings = _paddings(ctx, 1, len(x.shape))
    mode = opt.read(ctx, 0, "i8")
    if mode == 0:
        ctx.set_output(0, b.pad(x, _ints(paddings[:, 0]), _ints(paddings[:, 1]), {"mode": "reflection"}))
        return
    if mode != 1:
        raise ctx.fail(f"mirror pad mode {mode} is not REFLECT or SYMMETRIC")
    out = x
    for axis, (before, after) in enumerate(paddings.tolist()):
        dim = out.shape[axis]
        if before > dim or after > dim:
            raise ctx.fail(f"SYMMETRIC padding {before, after} is larger than dimension {axis} ({dim})")
        parts = []
        for start, size in ((0, before), (None, 0), (dim - after, after)):
            if start is None:
                parts.append(out)
            elif size:
                begin, sizes = [0] * len(out.shape), list(out.shape)
                begin[axis], sizes[axis] = start, size
                parts.append(b.reverse(b.slice(out, begin, sizes), {"axes": [axis]}))
        if len(parts) > 1:
            out = b.concat(parts, axis)
    ctx.set_output(0, out if out is not x else b.identity(x))


def _block_shape(ctx, x):
    """block_shape (input 1) and the [M, 2] paddings or crops (input 2), constants."""
    block = _ints(ctx.required_const(1, "block_shape"))
    m = len(block)
    if m < 1 or len(x.shape) < m + 1 or min(block) < 1:
        raise ctx.fail(f"block_shape {block} does not fit an input of shape {list(x.shape)}")
    return block, _paddings(ctx, 2, m).tolist()


def space_to_batch_nd(ctx):
    """Pad the M spatial dimensions, split each into (blocks, block), move the block
    factors in front of the batch: [prod(block) * N, padded / block ..., rest]."""
    x = ctx.input(0)
    b = ctx.b
    block, pads = _block_shape(ctx, x)
    shape = list(x.shape)
    m, rest = len(block), shape[len(block) + 1:]
    if any(pads):
        begin = [0] + [p[0] for p in pads] + [0] * len(rest)
        end = [0] + [p[1] for p in pads] + [0] * len(rest)
        x = b.pad(x, begin, end)
    padded = list(x.shape)
    for k in range(m):
        if padded[1 + k] % block[k]:
            raise ctx.fail(f"padded dimension {1 + k} ({padded[1 + k]}) is not divisible by its block {block[k]}")
    split = [padded[0]] + [v for k in range(m) for v in (padded[1 + k] // block[k], block[k])] + rest
    y = b.reshape(x, split)
    perm = [2 + 2 * k for k in range(m)] + [0] + [1 + 2 * k for k in range(m)] + list(range(1 + 2 * m, len(split)))
    y = b.transpose(y, {"permutation": perm})
    ctx.set_output(0, b.reshape(y, [padded[0] * int(np.prod(block))] + [padded[1 + k] // block[k] for k in range(m)]
                                + rest))


def batch_to_space_nd(ctx):
    """The inverse: [prod(block) * N, s ..., rest] -> [N, s * block ..., rest], then crop."""
    x = ctx.input(0)
    b = ctx.b
    block, crops = _block_shape(ctx, x)
    shape = list(x.shape)
    m, rest = len(block), shape[len(block) + 1:]
    blocks = int(np.prod(block))
    if shape[0] % blocks:
        raise ctx.fail(f"batch {shape[0]} is not divisible by the block size product {blocks}")
    n = shape[0] // blocks
    y = b.reshape(x, block + [n] + shape[1:])
    perm = [m] + [v for k in range(m) for v in (m + 1 + k, k)] + list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    y = b.transpose(y, {"permutation": perm})
    full = [shape[1 + k] * block[k] for k in range(m)]
    y = b.reshape(y, [n] + full + rest)
    if any(c for pair in crops for c in pair):
        sizes = [n] + [full[k] - crops[k][0] - crops[k][1] for k in range(m)] + rest
        if min(sizes) < 1:
            raise ctx.fail(f"crops {crops} leave nothing of {full}")
        y = b.slice(y, [0] + [c[0] for c in crops] + [0] * len(rest), sizes)
    ctx.set_output(0, y)


def gather_nd(ctx):
    ctx.set_output(0, ctx.b.gatherND(ctx.input(0), ctx.input(1)))


def _no_duplicate_indices(ctx, k: int) -> None:
    """TFLite's SCATTER_ND adds updates that land on one element; WebNN's scatterND
    keeps one of them. Constant indices are checked here; run-time ones cannot be."""
    indices = ctx.const(ctx.input_index(k))
    if indices is not None:
        rows = np.asarray(indices).reshape(-1, indices.shape[-1] if indices.ndim else 1)
        if len({tuple(r) for r in rows.tolist()}) != len(rows):
            raise ctx.fail("its indices repeat an element; TFLite sums such updates, WebNN's scatterND does not")


def scatter_nd(ctx):
    """SCATTER_ND: indices, updates, shape (a constant): updates scattered into zeros."""
    indices, updates = ctx.input(0), ctx.input(1)
    shape = _ints(ctx.required_const(2, "shape"))
    _no_duplicate_indices(ctx, 0)
    ctx.check_made(shape, "its output")
    zeros = ctx.constant_operand(np.zeros(shape, dtype=NUMPY_TYPES[updates.dataType]))
    ctx.set_output(0, ctx.b.scatterND(zeros, indices, updates))


def sparse_to_dense(ctx):
    """SPARSE_TO_DENSE: indices ([N, rank], [N] or a scalar), output_shape (a
    constant), values ([N] or a scalar), default_value: the values scattered into
    an output filled with the default."""
    b = ctx.b
    indices, values, default = ctx.input(0), ctx.input(2), ctx.input(3)
    shape = _ints(ctx.required_const(1, "output_shape"))
    rank = len(shape)
    if len(indices.shape) < 2:
        count = indices.shape[0] if indices.shape else 1
        indices = b.reshape(indices, [count, 1] if rank == 1 else [1, rank])
    count = indices.shape[0]
    if list(values.shape) != [count]:
        values = b.expand(b.reshape(values, []) if values.shape else values, [count])
    _no_duplicate_indices(ctx, 0)
    filled = b.expand(b.reshape(default, []) if default.shape else default, shape)
    ctx.set_output(0, b.scatterND(filled, indices, values))


def dynamic_update_slice(ctx):
    """operand, update, start_indices (run-time): the update written at the start,
    which LiteRT clamps into [0, dim - update dim] per axis. The written elements'
    indices are start + every index of the update, then scatterND."""
    x, update, start = ctx.input(0), ctx.input(1), ctx.input(2)
    if len(update.shape) != len(x.shape) or list(start.shape) != [len(x.shape)]:
        raise ctx.fail(f"update {list(update.shape)} and start {list(start.shape)} do not fit {list(x.shape)}")
    ctx.set_output(0, ctx.b.scatterND(x, window_indices(ctx, x, start, update.shape), update))


def window_indices(ctx, x, start, window: list[int]):
    """The indices [batch..., *window, rank] of windows of x at run-time starts
    [batch..., rank] (one start: [rank]), each clamped into [0, dim - window dim]
    per axis (LiteRT's and StableHLO's rule)."""
    b = ctx.b
    rank = len(x.shape)
    limit = np.array([d - u for d, u in zip(x.shape, window)], np.int32)
    if (limit < 0).any() or min(window, default=1) < 1:
        raise ctx.fail(f"the window {list(window)} does not fit the operand {list(x.shape)}")
    ctx.check_made([*window, rank], "its index grid")
    batch = list(start.shape[:-1])
    if start.dataType != "int32":
        start = b.cast(start, "int32")
    start = b.min(b.max(start, ctx.constant_operand(np.zeros(rank, np.int32))), ctx.constant_operand(limit))
    grid = np.stack(np.meshgrid(*[np.arange(u, dtype=np.int32) for u in window], indexing="ij"), -1)
    return b.add(ctx.constant_operand(grid), b.reshape(start, batch + [1] * rank + [rank]))


def embedding_lookup(ctx):
    """ids (input 0) pick rows of the table (input 1); a quantized table is
    dequantized like any constant (LiteRT's hybrid kernel scales the rows it copies)."""
    ctx.set_output(0, ctx.b.gather(ctx.input(1), ctx.input(0), {"axis": 0}))


def one_hot(ctx):
    """indices, depth (a constant), on_value, off_value; OneHotOptions axis 0
    (-1: last; the schema's default is 0, TensorFlow's converter writes -1). where(indices == k, on, off) for k in 0..depth-1 along the new axis;
    out-of-range indices match no k and give off everywhere, as in LiteRT."""
    b = ctx.b
    indices = ctx.input(0)
    depth = _ints(ctx.required_const(1, "depth"))
    if len(depth) != 1 or depth[0] < 1:
        raise ctx.fail(f"depth {depth} must be one positive number")
    depth = depth[0]
    ctx.check_made([depth], "its depth")
    rank = len(indices.shape) + 1
    axis = _axis(ctx, opt.read(ctx, 0, "i32"), rank)
    along = [1] * rank
    along[axis] = depth
    expanded = b.reshape(indices, list(indices.shape[:axis]) + [1] + list(indices.shape[axis:]))
    ks = ctx.constant_operand(np.arange(depth, dtype=NUMPY_TYPES[indices.dataType]).reshape(along))
    on, off = ctx.input(2), ctx.input(3)
    ctx.set_output(0, b.where(b.equal(expanded, ks), on, off))


def matrix_diag(ctx):
    """[..., N] -> [..., N, N] with the input on the diagonal and zeros elsewhere."""
    b = ctx.b
    x = ctx.input(0)
    n = x.shape[-1]
    ctx.check_made([n, n], "its diagonal mask")
    row = b.reshape(x, list(x.shape[:-1]) + [1, n])
    zero = ctx.constant_operand(np.zeros((), NUMPY_TYPES[x.dataType]))
    ctx.set_output(0, b.where(ctx.constant_operand(np.eye(n, dtype=np.uint8)), row, zero))


def matrix_set_diag(ctx):
    """input [..., M, N], diagonal [..., min(M, N)]: element (i, i) replaced by diagonal[i]."""
    b = ctx.b
    x, diagonal = ctx.input(0), ctx.input(1)
    if len(x.shape) < 2:
        raise ctx.fail(f"its input must have rank 2 or more, it is {list(x.shape)}")
    m, n = x.shape[-2:]
    ctx.check_made([m, n], "its diagonal mask")
    batch = list(x.shape[:-2])
    # Element (i, j) is on the diagonal when i == j: its value is diagonal[i] (= diagonal[j]).
    values = b.reshape(diagonal, batch + ([m, 1] if m <= n else [1, n]))
    ctx.set_output(0, b.where(ctx.constant_operand(np.eye(m, n, dtype=np.uint8)), values, x))


def _arg(method: str):
    def translate(ctx):
        """ArgMaxOptions / ArgMinOptions: output_type 0. LiteRT takes the first of equal values, as we do."""
        x = ctx.input(0)
        axis = _axis(ctx, _ints(ctx.required_const(1, "axis"))[0], len(x.shape))
        data_type, _ = _index_type(ctx, opt.read(ctx, 0, "i8", 4))
        ctx.set_output(0, getattr(ctx.b, method)(x, axis, {"keepDimensions": False, "outputDataType": data_type}))
    return translate


def cumsum(ctx):
    """CumsumOptions: exclusive 0, reverse 1."""
    x = ctx.input(0)
    axis = _axis(ctx, _ints(ctx.required_const(1, "axis"))[0], len(x.shape))
    ctx.set_output(0, ctx.b.cumulativeSum(x, axis, {"exclusive": bool(opt.read(ctx, 0, "bool", False)),
                                                    "reversed": bool(opt.read(ctx, 1, "bool", False))}))


def batch_matmul(ctx):
    """BatchMatMulOptions: adj_x 0, adj_y 1 (transpose the last two axes first)."""
    b = ctx.b
    operands = []
    for k, slot in ((0, 0), (1, 1)):
        v = ctx.input(k)
        if len(v.shape) < 2:
            raise ctx.fail(f"input {k} must have rank 2 or more, it is {list(v.shape)}")
        if opt.read(ctx, slot, "bool", False):
            rank = len(v.shape)
            v = b.transpose(v, {"permutation": list(range(rank - 2)) + [rank - 1, rank - 2]})
        operands.append(v)
    out = b.matmul(*operands)
    out_shape = list(ctx.output_tensor(0).shape)
    if out_shape and list(out.shape) != out_shape:
        out = b.reshape(out, out_shape)
    ctx.set_output(0, out)


# -- shape queries: constants ------------------------------------------------------------------

def shape(ctx):
    """ShapeOptions: out_type 0."""
    _, dtype = _index_type(ctx, opt.read(ctx, 0, "i8", 2))
    ctx.set_const(ctx.op.outputs[0], np.array(ctx.input(0).shape, dtype=dtype))


def rank(ctx):
    ctx.set_const(ctx.op.outputs[0], np.array(len(ctx.input(0).shape), dtype=np.int32))


def fill(ctx):
    """dims (a constant), value: a constant when the value is one, else expand()."""
    dims = _ints(ctx.required_const(0, "dims"))
    value = ctx.const(ctx.input_index(1))
    if value is not None and ctx.input_tensor(1).quantization is None:
        ctx.check_made(dims, "its output")
        ctx.set_const(ctx.op.outputs[0], np.full(dims, np.asarray(value).reshape(()), dtype=value.dtype))
        return
    v = ctx.input(1)
    ctx.set_output(0, ctx.b.expand(ctx.b.reshape(v, []) if v.shape else v, dims))


def range_(ctx):
    """start, limit, delta: all constants (the output's length depends on them)."""
    start, limit, delta = (np.asarray(ctx.required_const(k, what)).reshape(())
                           for k, what in ((0, "start"), (1, "limit"), (2, "delta")))
    if delta == 0:
        raise ctx.fail("delta is 0")
    count = np.ceil((np.float64(limit) - np.float64(start)) / np.float64(delta))
    if not np.isfinite(count):
        raise ctx.fail(f"start {start}, limit {limit} and delta {delta} give no finite length")
    ctx.check_made([max(int(count), 0)], "its output")
    ctx.set_const(ctx.op.outputs[0], np.arange(start, limit, delta).astype(start.dtype))


def broadcast_args(ctx):
    shapes = [_ints(ctx.required_const(k, "shape")) for k in (0, 1)]
    try:
        result = np.broadcast_shapes(tuple(shapes[0]), tuple(shapes[1]))
    except ValueError:
        raise ctx.fail(f"shapes {shapes[0]} and {shapes[1]} do not broadcast") from None
    ctx.set_const(ctx.op.outputs[0], np.array(result, dtype=ctx.required_const(0, "shape").dtype))


TRANSLATORS = {
    "SPLIT": split,
    "SPLIT_V": split_v,
    "PACK": pack,
    "UNPACK": unpack,
    "TILE": tile,
    "BROADCAST_TO": broadcast_to,
    "REVERSE_V2": reverse_v2,
    "REVERSE_SEQUENCE": reverse_sequence,
    "MIRROR_PAD": mirror_pad,
    "SPACE_TO_BATCH_ND": space_to_batch_nd,
    "BATCH_TO_SPACE_ND": batch_to_space_nd,
    "GATHER_ND": gather_nd,
    "SCATTER_ND": scatter_nd,
    "SPARSE_TO_DENSE": sparse_to_dense,
    "DYNAMIC_UPDATE_SLICE": dynamic_update_slice,
    "EMBEDDING_LOOKUP": embedding_lookup,
    "ONE_HOT": one_hot,
    "MATRIX_DIAG": matrix_diag,
    "MATRIX_SET_DIAG": matrix_set_diag,
    "ARG_MAX": _arg("argMax"),
    "ARG_MIN": _arg("argMin"),
    "CUMSUM": cumsum,
    "BATCH_MATMUL": batch_matmul,
    "SHAPE": shape,
    "RANK": rank,
    "FILL": fill,
    "RANGE": range_,
    "BROADCAST_ARGS": broadcast_args,
}
