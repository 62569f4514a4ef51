"""Element-wise arithmetic and activations: ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM,
POW, FLOOR_DIV, FLOOR_MOD, SQUARED_DIFFERENCE, ADD_N, RELU, RELU6, RELU_N1_TO_1,
RELU_0_TO_1, PRELU, LEAKY_RELU, ELU, GELU, LOGISTIC, TANH, HARD_SWISH, SOFTMAX,
LOG_SOFTMAX, EXP, LOG, ABS, NEG, SQRT, RSQRT, SQUARE, SIN, COS, SIGN, ROUND,
FLOOR, CEIL, ZEROS_LIKE, BUCKETIZE, ATAN2."""
from __future__ import annotations

import math

import numpy as np

from . import options as opt
from .importer import NUMPY_TYPES, quantized_8bit


def _binary(method: str, fused_slot: int | None = 0):
    def translate(ctx):
        out = getattr(ctx.b, method)(ctx.input(0), ctx.input(1))
        if fused_slot is not None:
            out = ctx.activation(out, opt.read(ctx, fused_slot, "i8"))
        ctx.set_output(0, out)
    translate.__name__ = method
    return translate


def _unary(method: str, options: dict | None = None):
    def translate(ctx):
        args = (options,) if options else ()
        ctx.set_output(0, getattr(ctx.b, method)(ctx.input(0), *args))
    translate.__name__ = method
    return translate


def prelu(ctx):
    ctx.set_output(0, ctx.b.prelu(ctx.input(0), ctx.input(1)))


def leaky_relu(ctx):
    """LeakyReluOptions: alpha 0."""
    ctx.set_output(0, ctx.b.leakyRelu(ctx.input(0), {"alpha": opt.read(ctx, 0, "f32", 0.0)}))


def softmax(ctx):
    """SoftmaxOptions: beta 0. softmax(beta * x) over the last axis."""
    x = ctx.input(0)
    rank = len(x.shape)
    if rank < 1:
        raise ctx.fail("softmax needs an input of rank 1 or more")
    beta = opt.read(ctx, 0, "f32", 1.0)
    if beta != 1.0:
        x = ctx.b.mul(x, ctx.scalar(beta, x))
    ctx.set_output(0, ctx.b.softmax(x, rank - 1))


def rsqrt(ctx):
    ctx.set_output(0, ctx.b.reciprocal(ctx.b.sqrt(ctx.input(0))))


def log_softmax(ctx):
    """x - max - log(sum(exp(x - max))) over the last axis (LiteRT's float kernel
    subtracts the maximum first, too)."""
    x = ctx.input(0)
    rank = len(x.shape)
    if rank < 1:
        raise ctx.fail("log_softmax needs an input of rank 1 or more")
    b = ctx.b
    shifted = b.sub(x, b.reduceMax(x, {"axes": [rank - 1], "keepDimensions": True}))
    total = b.reduceSum(b.exp(shifted), {"axes": [rank - 1], "keepDimensions": True})
    ctx.set_output(0, b.sub(shifted, b.log(total)))


def square(ctx):
    x = ctx.input(0)
    ctx.set_output(0, ctx.b.mul(x, x))


def squared_difference(ctx):
    d = ctx.b.sub(ctx.input(0), ctx.input(1))
    ctx.set_output(0, ctx.b.mul(d, d))


def add_n(ctx):
    total = ctx.input(0)
    for k in range(1, len(ctx.op.inputs)):
        total = ctx.b.add(total, ctx.input(k))
    ctx.set_output(0, total if len(ctx.op.inputs) > 1 else ctx.b.identity(total))


def gelu(ctx):
    """GeluOptions: approximate 0. The tanh form is
    0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), as LiteRT computes it."""
    x = ctx.input(0)
    if not opt.read(ctx, 0, "bool", False):
        ctx.set_output(0, ctx.b.gelu(x))
        return
    b = ctx.b
    cube = b.mul(b.mul(x, x), x)
    inner = b.mul(b.add(x, b.mul(cube, ctx.scalar(0.044715, x))), ctx.scalar(math.sqrt(2 / math.pi), x))
    ctx.set_output(0, b.mul(b.mul(x, ctx.scalar(0.5, x)), b.add(b.tanh(inner), ctx.scalar(1.0, x))))


def _truncated_quotient(ctx, a, d):
    """a / d rounded toward zero, and its remainder a - q d (integer div() truncates
    already; floats are truncated by hand: floor for positive quotients, ceil for negative)."""
    b = ctx.b
    q = b.div(a, d)
    if a.dataType in ("float32", "float16"):
        q = b.where(b.lesser(q, ctx.scalar(0, q)), b.ceil(q), b.floor(q))
    return q, b.sub(a, b.mul(q, d))


def _needs_floor_fix(ctx, remainder, d):
    """remainder != 0 and its sign differs from the divisor's: where the truncated
    and the floored division differ by one."""
    b = ctx.b
    zero = ctx.scalar(0, remainder)
    return b.logicalAnd(b.notEqual(remainder, zero),
                        b.notEqual(b.lesser(remainder, zero), b.lesser(d, ctx.scalar(0, d))))


def _stored_integers(ctx):
    """(a, d, finish) of FLOOR_DIV/FLOOR_MOD. LiteRT's int8/uint8 kernels compute on
    the stored integers and ignore the quantization parameters, so quantized operands
    go back to those integers (quantizeLinear, as int32) and finish() reads the
    integer result as the output's stored value (dequantizeLinear)."""
    b = ctx.b
    tensors = [ctx.input_tensor(0), ctx.input_tensor(1)]
    if not any(quantized_8bit(t) for t in tensors):
        return ctx.input(0), ctx.input(1), lambda result: result
    a, d = (b.cast(ctx.quantize(ctx.input(k), t), "int32") if quantized_8bit(t) else ctx.input(k)
            for k, t in enumerate(tensors))
    out = ctx.output_tensor(0)

    def finish(result):
        stored = b.cast(result, "int8" if out.numpy_type == np.int8 else "uint8")
        return ctx.dequantize(stored, out) if quantized_8bit(out) else stored
    return a, d, finish


def floor_div(ctx):
    """floor(a / b). Floats: floor(div); integers: truncated div() minus one where
    the remainder and the divisor have opposite signs (LiteRT's std::floor of the quotient)."""
    a, d, finish = _stored_integers(ctx)
    b = ctx.b
    if a.dataType in ("float32", "float16"):
        ctx.set_output(0, b.floor(b.div(a, d)))
        return
    q, r = _truncated_quotient(ctx, a, d)
    fix = b.cast(_needs_floor_fix(ctx, r, d), q.dataType)
    ctx.set_output(0, finish(b.sub(q, fix)))


def floor_mod(ctx):
    """LiteRT: r = fmod(a, b) (integers: a % b), plus b where r != 0 and r, b
    have opposite signs, i.e. the result takes the divisor's sign."""
    a, d, finish = _stored_integers(ctx)
    b = ctx.b
    _, r = _truncated_quotient(ctx, a, d)
    ctx.set_output(0, finish(b.where(_needs_floor_fix(ctx, r, d), b.add(r, d), r)))


def _atan_coefficients() -> np.ndarray:
    """c_k of atan(u) ~ u (c_0 + c_1 u^2 + ... + c_6 u^12) on |u| <= tan(pi/8), fitted
    here for the least relative error (2e-11 in float64; float32 evaluation stays
    within ~1 ULP of atan)."""
    u = np.cos(np.linspace(0, np.pi, 400)) * np.tan(np.pi / 8)
    u = u[u > 0]
    powers = np.arange(1, 14, 2)
    fit, *_ = np.linalg.lstsq((u[:, None] ** powers) / np.arctan(u)[:, None], np.ones_like(u), rcond=None)
    return fit.astype(np.float32)


_ATAN = _atan_coefficients()


def atan2(ctx):
    """atan2(y, x) from WebNN's arithmetic (it has no arc tangent): t = min/max of
    |x| and |y| in [0, 1]; past tan(pi/8), atan(t) = pi/4 + atan((t - 1) / (t + 1)),
    so the odd polynomial only sees |u| <= tan(pi/8); then the octant and quadrant
    corrections: pi/2 - a when |y| > |x|, pi - a when x < 0, the sign of y.
    atan2(0, 0) is 0; the sign of a zero is not distinguished (atan2(0, -0) is 0
    here, pi in C)."""
    b = ctx.b
    y, x = ctx.input(0), ctx.input(1)
    if x.dataType != "float32" or y.dataType != "float32":
        raise ctx.fail("only float32 ATAN2 is supported")
    ay, ax = b.abs(y), b.abs(x)
    low, high = b.min(ax, ay), b.max(ax, ay)
    zero = ctx.scalar(0.0, high)
    both_zero = b.equal(high, zero)
    t = b.div(low, b.where(both_zero, ctx.scalar(1.0, high), high))
    past = b.greater(t, ctx.scalar(float(np.tan(np.pi / 8)), t))
    u = b.where(past, b.div(b.sub(t, ctx.scalar(1.0, t)), b.add(t, ctx.scalar(1.0, t))), t)
    u2 = b.mul(u, u)
    poly = ctx.scalar(float(_ATAN[-1]), u)
    for c in _ATAN[-2::-1]:
        poly = b.add(b.mul(poly, u2), ctx.scalar(float(c), u))
    a = b.mul(poly, u)
    a = b.where(past, b.add(a, ctx.scalar(float(np.pi / 4), a)), a)
    a = b.where(b.greater(ay, ax), b.sub(ctx.scalar(float(np.pi / 2), a), a), a)
    a = b.where(b.lesser(x, zero), b.sub(ctx.scalar(float(np.pi), a), a), a)
    ctx.set_output(0, b.where(b.lesser(y, zero), b.neg(a), a))


def bucketize(ctx):
    """BucketizeOptions: boundaries 0 (sorted floats). The bucket of x is the number
    of boundaries <= x: a sum of comparisons against the boundaries on a new last axis."""
    b = ctx.b
    x = ctx.input(0)
    table = ctx.op.options
    bounds = table.array(0, "f32", "boundaries") if table is not None and table.has(0) else None
    bounds = np.zeros(0, np.float32) if bounds is None else np.asarray(bounds, np.float32)
    if bounds.size == 0:
        ctx.set_const(ctx.op.outputs[0], np.zeros(x.shape, np.int32))
        return
    if (np.diff(bounds) < 0).any():
        raise ctx.fail("its boundaries are not sorted")
    column = b.reshape(x, list(x.shape) + [1])
    edges = ctx.constant_operand(bounds.astype(NUMPY_TYPES[x.dataType]))
    hits = b.cast(b.greaterOrEqual(column, edges), "int32")
    ctx.set_output(0, b.reduceSum(hits, {"axes": [len(x.shape)], "keepDimensions": False}))


def zeros_like(ctx):
    """Zeros of the input's shape and type: a constant (the input's values do not matter)."""
    x = ctx.input(0)
    ctx.check_made(x.shape, "its output")
    ctx.set_const(ctx.op.outputs[0], np.zeros(x.shape, dtype=NUMPY_TYPES[x.dataType]))


TRANSLATORS = {
    "ADD": _binary("add"),
    "SUB": _binary("sub"),
    "MUL": _binary("mul"),
    "DIV": _binary("div"),
    "MAXIMUM": _binary("max", None),
    "MINIMUM": _binary("min", None),
    "POW": _binary("pow", None),
    "RELU": _unary("relu"),
    "RELU6": _unary("clamp", {"minValue": 0, "maxValue": 6}),
    "RELU_N1_TO_1": _unary("clamp", {"minValue": -1, "maxValue": 1}),
    "PRELU": prelu,
    "LEAKY_RELU": leaky_relu,
    "LOGISTIC": _unary("sigmoid"),
    "TANH": _unary("tanh"),
    "HARD_SWISH": _unary("hardSwish"),
    "SOFTMAX": softmax,
    "EXP": _unary("exp"),
    "LOG": _unary("log"),
    "ABS": _unary("abs"),
    "NEG": _unary("neg"),
    "SQRT": _unary("sqrt"),
    "RSQRT": rsqrt,
    "FLOOR": _unary("floor"),
    "CEIL": _unary("ceil"),
    "SIN": _unary("sin"),
    "COS": _unary("cos"),
    "SIGN": _unary("sign"),
    # LiteRT's ROUND rounds halves to even (RoundToNearest), as roundEven does.
    "ROUND": _unary("roundEven"),
    "ELU": _unary("elu"),
    "RELU_0_TO_1": _unary("clamp", {"minValue": 0, "maxValue": 1}),
    "GELU": gelu,
    "LOG_SOFTMAX": log_softmax,
    "SQUARE": square,
    "SQUARED_DIFFERENCE": squared_difference,
    "ADD_N": add_n,
    "FLOOR_DIV": floor_div,
    "FLOOR_MOD": floor_mod,
    "ZEROS_LIKE": zeros_like,
    "BUCKETIZE": bucketize,
    "ATAN2": atan2,
}
