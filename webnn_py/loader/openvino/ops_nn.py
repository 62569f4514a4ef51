"""MatMul-1 and Convolution-1 (2-D) onto WebNN's matmul and conv2d."""
from __future__ import annotations

import math


def _flag(t, key: str) -> bool:
    return t.layer.data.get(key, "false").strip().lower() in ("true", "1")


def _swap_last(t, x):
    rank = len(x.shape)
    order = list(range(rank - 2)) + [rank - 1, rank - 2]
    return t.b.transpose(x, {"permutation": order})


def matmul(t, inputs):
    if len(inputs) != 2:
        raise t.malformed(f"MatMul takes 2 inputs, not {len(inputs)}")
    a, b = (t.operand(v) for v in inputs)
    a_vector, b_vector = len(a.shape) == 1, len(b.shape) == 1
    # MatMul-1: transposes apply to 2-D+ inputs; a 1-D input is a row (a) or a
    # column (b) vector, and its unit dimension is dropped from the result.
    if a_vector:
        a = t.b.reshape(a, [1, a.shape[0]])
    elif _flag(t, "transpose_a"):
        a = _swap_last(t, a)
    if b_vector:
        b = t.b.reshape(b, [b.shape[0], 1])
    elif _flag(t, "transpose_b"):
        b = _swap_last(t, b)
    out = t.b.matmul(a, b)
    if a_vector or b_vector:
        shape = list(out.shape)
        if b_vector:
            shape.pop(-1)
        if a_vector:
            shape.pop(-2 if not b_vector else -1)
        out = t.b.reshape(out, shape)
    return [out]


def convolution(t, inputs):
    if len(inputs) != 2:
        raise t.malformed(f"Convolution takes 2 inputs, not {len(inputs)}")
    x, w = (t.operand(v) for v in inputs)
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise t.unsupported(f"only 2-D convolution is supported (input rank {len(x.shape)}, filter rank "
                            f"{len(w.shape)})")
    strides = t.attr_ints("strides", [1, 1])
    dilations = t.attr_ints("dilations", [1, 1])
    begin = t.attr_ints("pads_begin", [0, 0])
    end = t.attr_ints("pads_end", [0, 0])
    auto_pad = t.layer.data.get("auto_pad", "explicit").lower()
    if any(len(v) != 2 for v in (strides, dilations, begin, end)):
        raise t.malformed("strides, dilations, pads_begin and pads_end need 2 items each")
    if auto_pad == "valid":
        begin, end = [0, 0], [0, 0]
    elif auto_pad in ("same_upper", "same_lower"):
        # The output has ceil(input / stride) positions; the padding that needs
        # goes to the end (same_upper) or the beginning (same_lower) when odd.
        begin, end = [], []
        for i in range(2):
            size, kernel = x.shape[2 + i], w.shape[2 + i]
            total = max((math.ceil(size / strides[i]) - 1) * strides[i] + (kernel - 1) * dilations[i] + 1 - size, 0)
            small = total // 2
            begin.append(small if auto_pad == "same_upper" else total - small)
            end.append(total - begin[-1])
    elif auto_pad not in ("explicit", "notset"):
        raise t.malformed(f"auto_pad {auto_pad!r} is not one of explicit, valid, same_upper, same_lower")
    return [t.b.conv2d(x, w, {"padding": [begin[0], end[0], begin[1], end[1]], "strides": strides,
                              "dilations": dilations, "inputLayout": "nchw", "filterLayout": "oihw"})]


TRANSLATORS = {"MatMul": matmul, "Convolution": convolution}
