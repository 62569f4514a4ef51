"""Normalizations over the last axis: L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION."""
from __future__ import annotations

from . import options as opt

# LiteRT's L2_NORMALIZATION kernel divides by max(||x||, 1e-6).
L2_EPSILON = 1e-6
# Shifted slices one window sum may add (2 * radius + 1 of them).
MAX_WINDOW = 1025


def l2_normalization(ctx):
    """x / max(sqrt(sum(x^2)), epsilon) over the last axis; L2NormOptions: fused_activation 0."""
    b = ctx.b
    x = ctx.input(0)
    rank = len(x.shape)
    if rank < 1:
        raise ctx.fail("its input must have rank 1 or more")
    norm = b.sqrt(b.reduceSumSquare(x, {"axes": [rank - 1], "keepDimensions": True}))
    out = b.div(x, b.max(norm, ctx.scalar(L2_EPSILON, norm)))
    ctx.set_output(0, ctx.activation(out, opt.read(ctx, 0, "i8")))


def local_response_normalization(ctx):
    """LocalResponseNormalizationOptions: radius 0, bias 1, alpha 2, beta 3.
    x / (bias + alpha * sum of x^2 over channels c - radius .. c + radius)^beta,
    over the last axis (NHWC channels). The window sum is a sum of shifted slices of
    the zero-padded squares (channels beyond the edge contribute nothing)."""
    b = ctx.b
    x = ctx.input(0)
    if len(x.shape) != 4:
        raise ctx.fail(f"its input must be 4-D (NHWC), it is {list(x.shape)}")
    radius = opt.read(ctx, 0, "i32")
    bias, alpha, beta = (opt.read(ctx, slot, "f32", 0.0) for slot in (1, 2, 3))
    if radius < 0:
        raise ctx.fail(f"radius {radius} is negative")
    channels = x.shape[3]
    reach = min(radius, channels - 1)          # wider windows only add padding zeros
    if 2 * reach + 1 > MAX_WINDOW:
        raise ctx.fail(f"its window of {2 * reach + 1} channels is more than the {MAX_WINDOW} slices summed")
    squares = b.mul(x, x)
    padded = b.pad(squares, [0, 0, 0, reach], [0, 0, 0, reach]) if reach else squares
    total = None
    for offset in range(2 * reach + 1):
        part = b.slice(padded, [0, 0, 0, offset], [*x.shape[:3], channels])
        total = part if total is None else b.add(total, part)
    scale = b.add(b.mul(total, ctx.scalar(alpha, x)), ctx.scalar(bias, x))
    ctx.set_output(0, b.div(x, b.pow(scale, ctx.scalar(beta, x))))


TRANSLATORS = {
    "L2_NORMALIZATION": l2_normalization,
    "LOCAL_RESPONSE_NORMALIZATION": local_response_normalization,
}
