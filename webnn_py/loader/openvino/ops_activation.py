"""Element-wise math and activation IR operations (OpenVINO opsets 1-15) onto
WebNN's unary operators, or short compositions of them where WebNN has no
operator of its own (the formula each follows is the operation's text), and
RegionYolo, which applies activations to parts of its channels.

Scalar parameters that OpenVINO passes as inputs (HardSigmoid's alpha and
beta, Selu's alpha and lambda, Swish's beta) must be constants: WebNN takes
them as numbers, or they become constant operands.
"""
from __future__ import annotations

import math

import numpy as np

FLOATS = ("float32", "float16")


def _one(t, inputs, count: int = 1):
    t.arity(inputs, count)
    return inputs


def _scalar(t, x, value: float):
    """A constant operand of x's type holding `value` (broadcast by the binary ops)."""
    return t.operand(np.array(value, dtype=np.dtype(x.dataType)))


def _float_input(t, value):
    x = t.operand(value)
    if x.dataType not in FLOATS:
        raise t.unsupported(f"{t.layer.type} of {x.dataType} is not supported (WebNN computes it for float32 and "
                            "float16)")
    return x


def _const_scalar(t, value, what: str) -> float:
    array = t.const(value, what)
    if array.size != 1:
        raise t.malformed(f"{what} holds {array.size} values, not 1")
    return float(array.reshape(-1)[0])


def _unary(method: str, floats_only: bool = False):
    def translate(t, inputs):
        (x,) = _one(t, inputs)
        operand = _float_input(t, x) if floats_only else t.operand(x)
        return [getattr(t.b, method)(operand)]
    return translate


def sinh_cosh(t, inputs):
    """Sinh-1 (e^x - e^-x) / 2, Cosh-1 (e^x + e^-x) / 2."""
    (x,) = _one(t, inputs)
    x = _float_input(t, x)
    up, down = t.b.exp(x), t.b.exp(t.b.neg(x))
    joined = t.b.sub(up, down) if t.layer.type == "Sinh" else t.b.add(up, down)
    return [t.b.mul(joined, _scalar(t, x, 0.5))]


def round_(t, inputs):
    """Round-5: mode half_to_even is WebNN's roundEven; half_away_from_zero rounds
    the halves away from zero: trunc(x) + sign(x) where |x| - floor(|x|) is
    exactly 0.5 (exact in floating point), roundEven elsewhere. (floor(|x| + 0.5)
    would round 0.49999997 up, the sum rounding to 1.)"""
    (x,) = _one(t, inputs)
    x = _float_input(t, x)
    mode = t.layer.data.get("mode", "half_to_even").lower()
    even = t.b.roundEven(x)
    if mode == "half_to_even":
        return [even]
    if mode != "half_away_from_zero":
        raise t.malformed(f"mode {mode!r} is not half_to_even or half_away_from_zero")
    sign = t.b.sign(x)
    magnitude = t.b.abs(x)
    whole = t.b.floor(magnitude)
    half = t.b.equal(t.b.sub(magnitude, whole), _scalar(t, x, 0.5))
    away = t.b.add(t.b.mul(sign, whole), sign)
    return [t.b.where(half, away, even)]


def gelu(t, inputs):
    """Gelu-2 and Gelu-7 with approximation_mode ERF: WebNN's gelu. Gelu-7 TANH:
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    (x,) = _one(t, inputs)
    x = _float_input(t, x)
    mode = t.layer.data.get("approximation_mode", "erf").lower()
    if mode == "erf":
        return [t.b.gelu(x)]
    if mode != "tanh":
        raise t.malformed(f"approximation_mode {mode!r} is not ERF or TANH")
    cube = t.b.mul(t.b.mul(x, x), x)
    inner = t.b.mul(t.b.add(x, t.b.mul(cube, _scalar(t, x, 0.044715))), _scalar(t, x, math.sqrt(2 / math.pi)))
    return [t.b.mul(t.b.mul(x, _scalar(t, x, 0.5)), t.b.add(t.b.tanh(inner), _scalar(t, x, 1.0)))]


def hsigmoid(t, inputs):
    """HSigmoid-5: min(max(x + 3, 0), 6) / 6 = hardSigmoid with alpha 1/6, beta 0.5."""
    (x,) = _one(t, inputs)
    return [t.b.hardSigmoid(_float_input(t, x), {"alpha": 1 / 6, "beta": 0.5})]


def hard_sigmoid(t, inputs):
    """HardSigmoid-1: max(0, min(1, alpha x + beta)), alpha and beta as inputs."""
    x, alpha, beta = _one(t, inputs, 3)
    return [t.b.hardSigmoid(_float_input(t, x), {"alpha": _const_scalar(t, alpha, "alpha"),
                                                   "beta": _const_scalar(t, beta, "beta")})]


def swish(t, inputs):
    """Swish-4: x sigmoid(beta x), beta an optional scalar input (default 1)."""
    t.arity(inputs, 1, 2)
    x = _float_input(t, inputs[0])
    scaled = x if len(inputs) == 1 else t.b.mul(x, t.operand(inputs[1]))
    return [t.b.mul(x, t.b.sigmoid(scaled))]


def mish(t, inputs):
    """Mish-4: x tanh(softplus(x))."""
    (x,) = _one(t, inputs)
    x = _float_input(t, x)
    return [t.b.mul(x, t.b.tanh(t.b.softplus(x)))]


def elu(t, inputs):
    """Elu-1: x > 0 ? x : alpha (e^x - 1), alpha an attribute."""
    (x,) = _one(t, inputs)
    try:
        alpha = t.attr_float("alpha", 1.0)
    except ValueError:
        raise t.malformed(f"the 'alpha' attribute {t.layer.data.get('alpha')!r} is not a number") from None
    return [t.b.elu(_float_input(t, x), {"alpha": alpha})]


def selu(t, inputs):
    """Selu-1: lambda (x > 0 ? x : alpha (e^x - 1)) = lambda elu(x, alpha)."""
    x, alpha, scale = _one(t, inputs, 3)
    x = _float_input(t, x)
    return [t.b.mul(t.b.elu(x, {"alpha": _const_scalar(t, alpha, "alpha")}), t.operand(scale))]


def clamp(t, inputs):
    """Clamp-1: min(max(x, min), max); for integer data the bounds are rounded
    inwards first (ceil(min), floor(max)), as the operation says."""
    (x,) = _one(t, inputs)
    x = t.operand(x)
    try:
        low, high = t.attr_float("min"), t.attr_float("max")
    except (KeyError, ValueError):
        raise t.malformed("the 'min' and 'max' attributes must be numbers") from None
    if x.dataType not in FLOATS:
        limits = np.iinfo(np.dtype(x.dataType))
        low, high = max(math.ceil(low), limits.min), min(math.floor(high), limits.max)
    if low > high:
        raise t.malformed(f"min {low} is greater than max {high}")
    return [t.b.clamp(x, {"minValue": low, "maxValue": high})]


def prelu(t, inputs):
    """PRelu-1 (type name PReLU in IR): a 1-D slope as long as the channel axis (axis 1) applies per
    channel; otherwise slope and data broadcast numpy-style."""
    x, slope = (t.operand(v) for v in _one(t, inputs, 2))
    shape, slope_shape = list(x.shape), list(slope.shape)
    if len(slope_shape) == 1 and len(shape) >= 2 and slope_shape[0] == shape[1] != shape[-1]:
        slope = t.b.reshape(slope, [shape[1]] + [1] * (len(shape) - 2))
    return [t.b.prelu(x, slope)]


def soft_plus(t, inputs):
    """SoftPlus-4: ln(1 + e^x) (x itself above the type's threshold, where the two
    agree to the type's precision): WebNN's softplus."""
    (x,) = _one(t, inputs)
    return [t.b.softplus(_float_input(t, x))]


def log_softmax(t, inputs):
    """LogSoftmax-5: x - max - ln(sum(e^(x - max))) along `axis`."""
    (x,) = _one(t, inputs)
    x = _float_input(t, x)
    axis = t.axis(t.attr_int("axis", 1), len(x.shape))
    options = {"axes": [axis], "keepDimensions": True}
    shifted = t.b.sub(x, t.b.reduceMax(x, options))
    return [t.b.sub(shifted, t.b.log(t.b.reduceSum(t.b.exp(shifted), options)))]


def is_inf(t, inputs):
    """IsInf-10: detect_positive / detect_negative choose which infinities count."""
    (x,) = _one(t, inputs)
    x = _float_input(t, x)
    positive = t.attr_flag("detect_positive", True)
    negative = t.attr_flag("detect_negative", True)
    if positive and negative:
        return [t.b.isInfinite(x)]
    if not (positive or negative):
        return [t.b.lesser(x, x)]          # false everywhere (NaN included), uint8 of x's shape
    side = t.b.greater(x, _scalar(t, x, 0)) if positive else t.b.lesser(x, _scalar(t, x, 0))
    return [t.b.logicalAnd(t.b.isInfinite(x), side)]


def is_finite(t, inputs):
    """IsFinite-10: neither NaN nor infinite."""
    (x,) = _one(t, inputs)
    x = _float_input(t, x)
    return [t.b.logicalNot(t.b.logicalOr(t.b.isNaN(x), t.b.isInfinite(x)))]


def region_yolo(t, inputs):
    """RegionYolo-0: the input holds, per anchor (num of them, or len(mask)
    without do_softmax), coords box entries, an objectness score and the
    class scores, on channels [N, anchors * (coords + 1 + classes), H, W].
    The first two box entries and the objectness go through the logistic
    function, the other box entries stay; the class scores too (a softmax
    over the classes with do_softmax). With do_softmax the result is
    flattened from `axis` to `end_axis`."""
    (x,) = _one(t, inputs)
    x = _float_input(t, x)
    if len(x.shape) != 4:
        raise t.unsupported(f"RegionYolo of rank {len(x.shape)} is not supported (4-D is)")
    coords, classes = t.attr_int("coords"), t.attr_int("classes")
    softmax = t.attr_flag("do_softmax", True)
    anchors = t.attr_int("num") if softmax else len(t.attr_ints("mask", []))
    n, channels, h, w = x.shape
    entries = coords + 1 + classes
    if coords < 2 or anchors < 1 or anchors * entries != channels:
        raise t.malformed(f"{anchors} anchors of {coords} coords + 1 + {classes} classes do not make {channels} "
                          "channels")
    grouped = t.b.reshape(x, [n, anchors, entries, h, w])

    def part(start, size):
        return t.b.slice(grouped, [0, 0, start, 0, 0], [n, anchors, size, h, w])
    pieces = [t.b.sigmoid(part(0, 2))]
    if coords > 2:
        pieces.append(part(2, coords - 2))
    pieces.append(t.b.sigmoid(part(coords, 1)))
    if classes:
        scores = part(coords + 1, classes)
        pieces.append(t.b.softmax(scores, 2) if softmax else t.b.sigmoid(scores))
    out = t.b.reshape(t.b.concat(pieces, 2), [n, channels, h, w])
    if not softmax:
        return [out]
    first = t.axis(t.attr_int("axis", 1), 4)
    last = t.axis(t.attr_int("end_axis", 3), 4)
    if last < first:
        raise t.malformed(f"end_axis {last} is before axis {first}")
    shape = list(out.shape)
    flat = shape[:first] + [int(np.prod(shape[first:last + 1]))] + shape[last + 1:]
    return [t.b.reshape(out, flat)]


TRANSLATORS = {
    "Abs": _unary("abs"), "Ceiling": _unary("ceil", True), "Floor": _unary("floor", True),
    "Cos": _unary("cos", True), "Sin": _unary("sin", True), "Tan": _unary("tan", True),
    "Sinh": sinh_cosh, "Cosh": sinh_cosh,
    "Erf": _unary("erf", True), "Exp": _unary("exp", True), "Log": _unary("log", True),
    "Sqrt": _unary("sqrt", True), "Negative": _unary("neg"), "Sign": _unary("sign"), "Round": round_,
    "Gelu": gelu, "HSwish": _unary("hardSwish", True), "HSigmoid": hsigmoid, "HardSigmoid": hard_sigmoid,
    "Swish": swish, "Mish": mish, "Elu": elu, "Selu": selu, "Clamp": clamp, "PReLU": prelu,
    "SoftPlus": soft_plus, "SoftSign": _unary("softsign", True), "LogSoftmax": log_softmax,
    "IsNaN": _unary("isNaN", True), "IsInf": is_inf, "IsFinite": is_finite, "RegionYolo": region_yolo,
}
