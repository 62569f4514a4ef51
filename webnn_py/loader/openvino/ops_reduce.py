"""Reductions and normalizations (OpenVINO opsets 1-15): Reduce*, MVN,
BatchNormInference, NormalizeL2, LRN, GRN, GroupNormalization, CumSum, TopK
with k = 1.

Axes come as a (constant) input; WebNN takes them as non-negative numbers.
Reductions of constants are folded in numpy, so shape arithmetic written
with them (e.g. ReduceProd of a ShapeOf) stays constant.
"""
from __future__ import annotations

import numpy as np

FLOATS = ("float32", "float16")

# IR type -> (WebNN method, numpy fold for constants or None).
_REDUCTIONS = {
    "ReduceMax": ("reduceMax", np.max), "ReduceMin": ("reduceMin", np.min), "ReduceSum": ("reduceSum", np.sum),
    "ReduceProd": ("reduceProduct", np.prod), "ReduceMean": ("reduceMean", None), "ReduceL1": ("reduceL1", None),
    "ReduceL2": ("reduceL2", None),
    # Booleans are uint8 0/1: "all" is the minimum, "any" the maximum.
    "ReduceLogicalAnd": ("reduceMin", np.min), "ReduceLogicalOr": ("reduceMax", np.max),
}


def _axes(t, value, rank: int) -> list[int]:
    axes = sorted({t.axis(a, rank, "axes item") for a in t.ints(value, "axes")})
    return axes


def reduce(t, inputs):
    """Reduce*-1 (ReduceL1/L2-4, ReduceLogical*-1): keep_dims keeps the reduced
    axes as 1s; an empty axes list reduces nothing."""
    t.arity(inputs, 2)
    data, axes_value = inputs
    method, fold = _REDUCTIONS[t.layer.type]
    axes = _axes(t, axes_value, len(t.shape(data)))
    keep = t.attr_flag("keep_dims")
    if t.layer.type.startswith("ReduceLogical") and t.data_type(data) != "uint8":
        raise t.malformed(f"{t.layer.type} needs boolean data, not {t.data_type(data)}")
    if isinstance(data, np.ndarray) and fold is not None:
        return [np.asarray(fold(data, axis=tuple(axes), keepdims=keep)).astype(data.dtype)]
    x = t.operand(data)
    if method in ("reduceMean", "reduceL2") and x.dataType not in FLOATS:
        raise t.unsupported(f"{t.layer.type} of {x.dataType} is not supported (WebNN's {method} takes floats)")
    if not axes:
        return [x]
    return [getattr(t.b, method)(x, {"axes": axes, "keepDimensions": keep})]


def _eps_mode(t, key: str, values: tuple[str, str]) -> str:
    mode = t.layer.data.get(key, values[0]).lower()
    if mode not in values:
        raise t.malformed(f"{key} {mode!r} is not one of {', '.join(values)}")
    return mode


def mvn(t, inputs):
    """MVN-6 (data, axes; normalize_variance, eps, eps_mode) and MVN-1 (data;
    across_channels or reduction_axes, normalize_variance, eps added to the
    variance): (x - mean) / sqrt(var + eps) is WebNN's
    layerNormalization over the axes; the other forms are spelled out."""
    x = t.operand(inputs[0])
    if x.dataType not in FLOATS:
        raise t.unsupported(f"MVN of {x.dataType} is not supported (floats only)")
    rank = len(x.shape)
    if t.layer.version == "opset1" or len(inputs) == 1:
        t.arity(inputs, 1)
        if "reduction_axes" in t.layer.data:
            axes = sorted({t.axis(a, rank, "reduction_axes item") for a in t.attr_ints("reduction_axes")})
        else:
            axes = list(range(1 if t.attr_flag("across_channels") else 2, rank))
        mode = "inside_sqrt"
    else:
        t.arity(inputs, 2)
        axes = _axes(t, inputs[1], rank)
        mode = _eps_mode(t, "eps_mode", ("inside_sqrt", "outside_sqrt"))
    eps = t.attr_float("eps")
    if not axes:
        raise t.unsupported("MVN over no axes is not supported")
    normalize = t.attr_flag("normalize_variance", True)
    if normalize and mode == "inside_sqrt":
        return [t.b.layerNormalization(x, {"axes": axes, "epsilon": eps})]
    options = {"axes": axes, "keepDimensions": True}
    centred = t.b.sub(x, t.b.reduceMean(x, options))
    if not normalize:
        return [centred]
    deviation = t.b.sqrt(t.b.reduceMean(t.b.mul(centred, centred), options))
    epsilon = t.operand(np.array(eps, dtype=np.dtype(x.dataType)))
    return [t.b.div(centred, t.b.add(deviation, epsilon))]


def batch_norm(t, inputs):
    """BatchNormInference-1 (gamma, beta, data, mean, variance) and -5 (data,
    gamma, beta, mean, variance): WebNN's batchNormalization over axis 1."""
    t.arity(inputs, 5)
    if t.layer.version == "opset1":
        gamma, beta, data, mean, variance = inputs
    else:
        data, gamma, beta, mean, variance = inputs
    x = t.operand(data)
    return [t.b.batchNormalization(x, t.operand(mean), t.operand(variance),
                                   {"scale": t.operand(gamma), "bias": t.operand(beta),
                                    "epsilon": t.attr_float("epsilon"), "axis": 1 if len(x.shape) > 1 else 0})]


def normalize_l2(t, inputs):
    """NormalizeL2-1: x / sqrt(max(sum(x^2), eps)) (eps_mode max) or
    x / sqrt(sum(x^2) + eps) (add), the sum over the axes."""
    t.arity(inputs, 2)
    x = t.operand(inputs[0])
    if x.dataType not in FLOATS:
        raise t.unsupported(f"NormalizeL2 of {x.dataType} is not supported (floats only)")
    axes = _axes(t, inputs[1], len(x.shape))
    eps = t.operand(np.array(t.attr_float("eps"), dtype=np.dtype(x.dataType)))
    mode = _eps_mode(t, "eps_mode", ("add", "max"))
    if not axes:
        # No axes: each element is its own group, sum(x^2) = x^2.
        squares = t.b.mul(x, x)
    else:
        squares = t.b.reduceSumSquare(x, {"axes": axes, "keepDimensions": True})
    guarded = t.b.max(squares, eps) if mode == "max" else t.b.add(squares, eps)
    return [t.b.div(x, t.b.sqrt(guarded))]


def lrn(t, inputs):
    """LRN-1 across channels (axes [1]) or over the spatial axes ([2, 3]):
    x / (bias + alpha / size^len(axes) * sqr_sum)^beta, sqr_sum the sum of x^2
    over the window of `size` positions centred on each one ((size - 1) // 2
    on each side, clipped to the tensor)."""
    t.arity(inputs, 2)
    x = t.operand(inputs[0])
    if x.dataType not in FLOATS or len(x.shape) != 4:
        raise t.unsupported(f"LRN of a rank-{len(x.shape)} {x.dataType} tensor is not supported (4-D floats)")
    axes = _axes(t, inputs[1], 4)
    size = t.attr_int("size")
    if size < 1:
        raise t.malformed(f"size {size} is not positive")
    alpha, beta, bias = t.attr_float("alpha"), t.attr_float("beta"), t.attr_float("bias")
    half = (size - 1) // 2
    squares = t.b.mul(x, x)
    if axes == [1]:
        window = [2 * half + 1, 1]
        # Channels into the pooling's height: [N, 1, C, H*W].
        n, c, h, w = x.shape
        flat = t.b.reshape(squares, [n, 1, c, h * w])
        padded = t.b.pad(flat, [0, 0, half, 0], [0, 0, half, 0])
        summed = t.b.reshape(_window_sum(t, padded, window), [n, c, h, w])
    elif axes == [2, 3]:
        window = [2 * half + 1, 2 * half + 1]
        padded = t.b.pad(squares, [0, 0, half, half], [0, 0, half, half])
        summed = _window_sum(t, padded, window)
    else:
        raise t.unsupported(f"LRN over axes {axes} is not supported (axes [1] or [2, 3])")
    scale = alpha / size ** len(axes)
    base = t.b.add(t.b.mul(summed, t.operand(np.array(scale, np.dtype(x.dataType)))),
                   t.operand(np.array(bias, np.dtype(x.dataType))))
    return [t.b.div(x, t.b.pow(base, t.operand(np.array(beta, np.dtype(x.dataType)))))]


def _window_sum(t, padded, window: list[int]):
    """The sum over each window of a zero-padded NCHW tensor: an average pool
    without padding (so every window counts all its taps) times the window's size."""
    mean = t.b.averagePool2d(padded, {"windowDimensions": window})
    count = window[0] * window[1]
    return t.b.mul(mean, t.operand(np.array(count, np.dtype(padded.dataType))))


def cumsum(t, inputs):
    """CumSum-3: along `axis` (an input; 0 when absent), exclusive and reverse
    attributes: WebNN's cumulativeSum."""
    t.arity(inputs, 1, 2)
    x = t.operand(inputs[0])
    axis = t.axis(t.one_int(inputs[1], "the axis input") if len(inputs) == 2 else 0, len(x.shape))
    return [t.b.cumulativeSum(x, axis, {"exclusive": t.attr_flag("exclusive"), "reversed": t.attr_flag("reverse")})]


TOPK_LIMIT = 64       # k unrolls into k selection steps


def topk(t, inputs):
    """TopK-1/3/11 as k selection steps (WebNN has no sort): step j takes the
    largest (mode max) or smallest (min) remaining element along `axis` and
    its index (argMax/argMin: the first among equals, so equal values come in
    index order, as stable sorting gives), then masks that position with the
    type's extreme. The results come in value order (sort "value", and "none",
    which leaves the order to the implementation); sort "index" reorders the k
    picks by index: each pick's rank is how many picked indices are smaller,
    and scatterElements puts it there. k is at most TOPK_LIMIT. (A masked
    position ties with an element equal to the extreme itself, e.g. -inf in
    mode max, so such elements may repeat an index.)"""
    t.arity(inputs, 2)
    x = t.operand(inputs[0])
    k = t.one_int(inputs[1], "k")
    axis = t.axis(t.attr_int("axis"), len(x.shape))
    if not 1 <= k <= x.shape[axis]:
        raise t.unsupported(f"k = {k} is not in 1..{x.shape[axis]} (WebNN operands cannot be empty)") if k == 0 \
            else t.malformed(f"k = {k} is not in 1..{x.shape[axis]}")
    if k > TOPK_LIMIT:
        raise t.unsupported(f"k = {k} needs sorting, which WebNN cannot express; at most {TOPK_LIMIT} selection "
                            "steps are unrolled")
    mode = t.layer.data.get("mode", "max").lower()
    if mode not in ("max", "min"):
        raise t.malformed(f"mode {mode!r} is not max or min")
    sort = t.layer.data.get("sort", "none").lower()
    if sort not in ("value", "index", "none"):
        raise t.malformed(f"sort {sort!r} is not value, index or none")
    index_type = {"i32": "int32", "i64": "int64"}.get(t.layer.data.get("index_element_type", "i32"))
    if index_type is None:
        raise t.malformed(f"index_element_type {t.layer.data.get('index_element_type')!r} is not i32 or i64")
    options = {"axes": [axis], "keepDimensions": True}
    reduce, arg = (t.b.reduceMax, t.b.argMax) if mode == "max" else (t.b.reduceMin, t.b.argMin)
    dtype = np.dtype(x.dataType)
    extreme = (-np.inf if mode == "max" else np.inf) if dtype.kind == "f" else \
        (np.iinfo(dtype).min if mode == "max" else np.iinfo(dtype).max)
    fill = t.operand(np.array(extreme, dtype))
    view = [1] * len(x.shape)
    view[axis] = x.shape[axis]
    positions = t.operand(np.arange(x.shape[axis], dtype=np.dtype(index_type)).reshape(view))
    values, indices, remaining = [], [], x
    for step in range(k):
        values.append(reduce(remaining, options))
        indices.append(arg(remaining, axis, {"keepDimensions": True, "outputDataType": index_type}))
        if step < k - 1:
            remaining = t.b.where(t.b.equal(positions, indices[-1]), fill, remaining)
    value, index = (t.b.concat(values, axis), t.b.concat(indices, axis)) if k > 1 else (values[0], indices[0])
    if sort == "index" and k > 1:
        rank = _ranks(t, index, axis, k)
        value = t.b.scatterElements(value, rank, value, {"axis": axis})
        index = t.b.scatterElements(index, rank, index, {"axis": axis})
    return [value, index]


def _ranks(t, index, axis: int, k: int):
    """For each of the k picks along `axis`, how many picks have a smaller index (int32)."""
    shape = list(index.shape)
    mine = t.b.reshape(index, shape[:axis + 1] + [1] + shape[axis + 1:])       # [.., k, 1, ..]
    others = t.b.reshape(index, shape[:axis] + [1, k] + shape[axis + 1:])      # [.., 1, k, ..]
    smaller = t.b.cast(t.b.lesser(others, mine), "int32")
    return t.b.reduceSum(smaller, {"axes": [axis + 1]})


def grn(t, inputs):
    """GRN-1: x / sqrt(sum over the channel axis of x^2 + bias)."""
    t.arity(inputs, 1)
    x = t.operand(inputs[0])
    if x.dataType not in FLOATS or len(x.shape) < 2:
        raise t.unsupported(f"GRN of a rank-{len(x.shape)} {x.dataType} tensor is not supported")
    squares = t.b.reduceSumSquare(x, {"axes": [1], "keepDimensions": True})
    bias = t.operand(np.array(t.attr_float("bias"), np.dtype(x.dataType)))
    return [t.b.div(x, t.b.sqrt(t.b.add(squares, bias)))]


def group_norm(t, inputs):
    """GroupNormalization-12: the channels in num_groups groups, each group
    (with all spatial positions) normalised to zero mean and unit variance
    (epsilon inside the root: layerNormalization over [N, G, rest]), then the
    per-channel scale and bias."""
    t.arity(inputs, 3)
    x, scale, bias = (t.operand(v) for v in inputs)
    if x.dataType not in FLOATS or len(x.shape) < 2:
        raise t.unsupported(f"GroupNormalization of a rank-{len(x.shape)} {x.dataType} tensor is not supported")
    groups = t.attr_int("num_groups")
    shape = list(x.shape)
    if groups < 1 or shape[1] % groups:
        raise t.malformed(f"num_groups {groups} does not divide the {shape[1]} channels")
    grouped = t.b.reshape(x, [shape[0], groups, int(np.prod(shape[1:])) // groups])
    normalised = t.b.reshape(t.b.layerNormalization(grouped, {"axes": [2], "epsilon": t.attr_float("epsilon")}), shape)
    per_channel = [shape[1]] + [1] * (len(shape) - 2)
    return [t.b.add(t.b.mul(normalised, t.b.reshape(scale, per_channel)), t.b.reshape(bias, per_channel))]


TRANSLATORS = {
    **{name: reduce for name in _REDUCTIONS},
    "MVN": mvn, "BatchNormInference": batch_norm, "NormalizeL2": normalize_l2, "LRN": lrn, "CumSum": cumsum,
    "TopK": topk, "GRN": grn, "GroupNormalization": group_norm,
}
