"""Element-wise arithmetic and activations: ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM,
RELU, RELU6, RELU_N1_TO_1, PRELU, LEAKY_RELU, LOGISTIC, TANH, HARD_SWISH, SOFTMAX,
EXP, ABS, NEG, SQRT, RSQRT."""
from __future__ import annotations

from . import options as opt


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
}
