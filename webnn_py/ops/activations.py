"""Activations: clamp (§8.9.8), elu (§8.9.18), gelu (§8.9.23), hardSigmoid
(§8.9.27), hardSwish (§8.9.28), leakyRelu (§8.9.31), linear (§8.9.32), prelu
(§8.9.38), relu (§8.9.40), sigmoid (§8.9.46), softmax (§8.9.48), softplus
(§8.9.49), softsign (§8.9.50), tanh (§8.9.52)."""
from __future__ import annotations

import math

import numpy as np

from .. import kernels
from ..base.casting import cast_number
from ..base.descriptor import OperandDescriptor
from .broadcast import broadcast_bidirectional
from .elementwise_unary import erfc_nonnegative
from .registry import ANY, FLOAT, FLOATS, SIGNED, BuildContext, TensorLimits, compute_type, register

_F32 = np.dtype(np.float32)

def _copy_input(ctx: BuildContext, input, attributes: dict | None = None):
    """The common tail of the single-input activations: check the input against the
    operator's table of allowed data types and ranks, and "copy an MLOperand"."""
    desc = ctx.check("input", input)
    return desc, ctx.emit([input], [desc], attributes)[0]


def _float_kernel(function, wide: bool = False):
    """A kernel computing `function(x, **attributes)` in the compute type (float16 in
    float32), rounding once to the input's type. `wide` computes in float64 instead,
    for formulas whose intermediate roundings in float32 would cost several ULP
    (alpha * x + beta cancelling near zero): the result is then rounded once."""
    def compute(inputs, attributes, outputs):
        x = inputs[0]
        ct = np.dtype(np.float64) if wide else compute_type(x.dtype)
        scalars = {k: ct.type(v) for k, v in attributes.items()}
        with np.errstate(all="ignore"):
            result = function(x.astype(ct, copy=False), **scalars)
        return [np.asarray(result).astype(x.dtype, copy=False)]
    return compute


# ---------------------------------------------------------------------------------------------
# clamp (§8.9.8)

def build_clamp(ctx: BuildContext, input, options: dict):
    desc = ctx.check("input", input)
    # Steps 3 and 5 literally default minValue to Infinity and maxValue to -Infinity,
    # which would make step 7 reject every clamp() without both bounds; the member
    # descriptions say an absent bound does not clamp, so the defaults are swapped
    # here: -Infinity for minValue and +Infinity for maxValue.
    min_value = cast_number(options.get("minValue", -math.inf), desc.data_type)
    max_value = cast_number(options.get("maxValue", math.inf), desc.data_type)
    if min_value > max_value:
        ctx.fail(f"minValue {_show(min_value)} is greater than maxValue {_show(max_value)} "
                 f"(after casting to {desc.data_type})")
    return ctx.emit([input], [desc], {"minValue": min_value, "maxValue": max_value})[0]


def _show(value) -> str:
    return repr(value) if isinstance(value, int) else repr(float(value))


_FILLED: dict[tuple, np.ndarray] = {}


def filled(value, dtype: np.dtype, shape) -> np.ndarray:
    """A read-only array of `shape` whose elements are all `value` (of `dtype`).

    numpy's SIMD maximum/minimum loops only apply when both operands are arrays with
    the same layout: against a scalar they run ~4x slower than against an array of
    the scalar (0.40 vs 0.12 ms on 1.2M float32 here). So relu and clamp compare with
    a view of one cached array per (type, value), grown to the largest size seen."""
    value = np.array(value, dtype=dtype)
    key = (value.dtype.str, value.tobytes())
    size = math.prod(shape)
    cached = _FILLED.get(key)
    if cached is None or cached.size < size:
        if len(_FILLED) >= 32:          # many distinct bounds: start over rather than grow
            _FILLED.clear()
        cached = np.full(max(size, 1024), value)
        cached.setflags(write=False)
        _FILLED[key] = cached
    return cached[:size].reshape(shape)


def clamp_into(x: np.ndarray, lower, upper, out: np.ndarray) -> np.ndarray:
    """min(max(x, lower), upper) into `out` (may be x)."""
    if x.dtype == _F32 and out.dtype == _F32 and x.flags.c_contiguous and out.flags.c_contiguous:
        fast = kernels.simd()      # ~10x numpy's in Pyodide, ~2.5x on the host
        if fast is not None:
            return fast.clamp(x, lower, upper, out)
    if x.ndim and x.flags.c_contiguous and out.flags.c_contiguous:
        np.maximum(x, filled(lower, x.dtype, x.shape), out=out)
        return np.minimum(out, filled(upper, x.dtype, x.shape), out=out)
    np.maximum(x, np.array(lower, x.dtype), out=out)
    return np.minimum(out, np.array(upper, x.dtype), out=out)


def clamp(inputs, attributes, outputs):
    # The spec's decomposition: min(max(input, minValue), maxValue). max/min are exact
    # in every type, so this computes in the input's own type.
    x = inputs[0]
    return [clamp_into(x, attributes["minValue"], attributes["maxValue"], np.empty(x.shape, x.dtype))]


# ---------------------------------------------------------------------------------------------
# Activations with no option other than the label: relu, sigmoid, tanh, gelu, hardSwish,
# softplus, softsign.

def build_plain(ctx: BuildContext, input, options: dict):
    return _copy_input(ctx, input)[1]


def relu_into(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """max(x, 0) into `out` (may be x), against a filled array where that is faster."""
    if x.dtype == _F32 and out.dtype == _F32 and x.flags.c_contiguous and out.flags.c_contiguous:
        fast = kernels.simd()
        if fast is not None:
            return fast.clamp(x, 0.0, np.inf, out)
    if x.ndim and x.flags.c_contiguous and out.flags.c_contiguous:
        return np.maximum(x, filled(0, x.dtype, x.shape), out=out)
    return np.maximum(x, np.zeros((), x.dtype), out=out)


def relu(inputs, attributes, outputs):
    x = inputs[0]
    return [relu_into(x, np.empty(x.shape, x.dtype))]


def _gelu(x):
    # 0.5 * x * (1 + erf(x / sqrt(2))), evaluated in float64 and rounded once. For
    # negative x, 1 + erf(x / sqrt(2)) cancels to nothing; it equals erfc(|x| / sqrt(2)),
    # which erfc_nonnegative computes to full relative precision; for x >= 0 it is
    # 2 - erfc(x / sqrt(2)). One erfc evaluation serves both signs.
    x64 = x.astype(np.float64)
    z = np.abs(x64)
    z *= 1 / math.sqrt(2.0)
    tail = erfc_nonnegative(z)
    # tail + (x >= 0) * (2 - 2 tail): tail for x < 0 exactly, 2 - tail (to a float64
    # rounding or two) for x >= 0 -- a select by arithmetic, ~4x faster than np.where.
    half = np.multiply(tail, -2.0)
    half += 2.0
    half *= x64 >= 0
    half += tail
    half *= 0.5
    half *= x64
    return half


def _hard_swish(x):
    # x * max(0, min(6, x + 3)) / 6
    return x * np.maximum(0, np.minimum(6, x + 3)) / 6


def _softplus(x):
    # ln(1 + exp(x)), evaluated as logaddexp(0, x) so it neither overflows for large x
    # (where it equals x) nor loses the tiny values for very negative x.
    return np.logaddexp(0, x)


# ---------------------------------------------------------------------------------------------
# Activations whose options are scalars cast to the input's data type (§9.2).

def _build_scalars(defaults: dict[str, float]):
    def build(ctx: BuildContext, input, options: dict):
        desc = ctx.check("input", input)
        # "Set options.alpha (beta) to the result of casting it to input's dataType."
        scalars = {name: cast_number(options.get(name, default), desc.data_type)
                   for name, default in defaults.items()}
        return ctx.emit([input], [desc], scalars)[0]
    return build


def _elu(x, alpha):
    # max(0, x) + alpha * (exp(min(0, x)) - 1); expm1 is the accurate exp(..) - 1.
    zero = np.zeros((), x.dtype)
    return np.maximum(zero, x) + alpha * np.expm1(np.minimum(zero, x))


def _hard_sigmoid(x, alpha, beta):
    # max(min(alpha * x + beta, 1), 0)
    return np.maximum(np.minimum(alpha * x + beta, 1), 0)


def _leaky_relu(x, alpha):
    # max(0, x) + alpha * min(0, x)
    zero = np.zeros((), x.dtype)
    return np.maximum(zero, x) + alpha * np.minimum(zero, x)


def _linear(x, alpha, beta):
    # alpha * x + beta
    return alpha * x + beta


# ---------------------------------------------------------------------------------------------
# prelu (§8.9.38)

def build_prelu(ctx: BuildContext, input, slope, options: dict):
    # Step 2: validate both operands before looking at their types.
    ctx.descriptor(input)
    ctx.descriptor(slope)
    # Step 3: input's type is one of the table's; slope's is the same as input's.
    input_desc = ctx.check("input", input)
    slope_desc = ctx.check("slope", slope)
    ctx.same_type("slope", slope_desc, "input", input_desc)
    # Step 4: the output shape is the bidirectional broadcast of slope's and input's shapes.
    shape = broadcast_bidirectional(slope_desc.shape, input_desc.shape)
    if shape is None:
        ctx.fail(f"slope shape {list(slope_desc.shape)} and input shape {list(input_desc.shape)} "
                 "are not bidirectionally broadcastable")
    return ctx.emit([input, slope], [OperandDescriptor(input_desc.data_type, shape)])[0]


def prelu(inputs, attributes, outputs):
    x, slope = inputs
    out_dtype = x.dtype
    ct = compute_type(out_dtype)
    x, slope = x.astype(ct, copy=False), slope.astype(ct, copy=False)
    zero = np.zeros((), ct)
    # max(0, x) + slope * min(0, x); integer products wrap like native types.
    with np.errstate(all="ignore"):
        result = np.maximum(zero, x) + slope * np.minimum(zero, x)
    return [np.broadcast_to(result, outputs[0].shape).astype(out_dtype)]


# ---------------------------------------------------------------------------------------------
# softmax (§8.9.48)

def build_softmax(ctx: BuildContext, input, axis: int, options: dict):
    """§8.9.48 softmax(input, axis, options), steps 2-6 (axis is required: the 2026 IDL)."""
    desc = ctx.check("input", input)     # steps 2-3 (and the table's rank 1 to N)
    # Step 4: axis must be below the input's rank.
    ctx.axis("axis", axis, desc.rank)
    return ctx.emit([input], [desc], {"axis": axis})[0]


def softmax(inputs, attributes, outputs):
    x = inputs[0]
    out_dtype = x.dtype
    if x.dtype == _F32 and x.flags.c_contiguous and attributes["axis"] in (-1, x.ndim - 1):
        # The C kernel (wasm or native), the same float64 method in one call: ~3.5x
        # numpy's passes on the host.
        fast = kernels.simd()
        if fast is not None:
            return [fast.softmax_rows(x)]
    # float64: x - max rounded in float32 would put ~|x - max| * 2**-24 of relative
    # error into every exponential (8 ULP and more for spread-out inputs).
    x = x.astype(np.float64)
    axis = attributes["axis"]
    with np.errstate(all="ignore"):
        # The spec's decomposition: exponentials of the distances to the maximum, for stability.
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        result = e / np.sum(e, axis=axis, keepdims=True)
    return [np.asarray(result).astype(out_dtype, copy=False)]


# ---------------------------------------------------------------------------------------------

_SINGLE = lambda types: {"input": TensorLimits(types), "output": TensorLimits(types)}  # noqa: E731

register("clamp", build=build_clamp, kernel=clamp, limits={"input": ANY, "output": ANY})
register("relu", build=build_plain, kernel=relu, limits=_SINGLE(SIGNED))
register("prelu", build=build_prelu, kernel=prelu,
         limits={"input": TensorLimits(SIGNED), "slope": TensorLimits(SIGNED), "output": TensorLimits(SIGNED)})
register("softmax", build=build_softmax, kernel=softmax,
         limits={"input": FLOAT.ranks(min_rank=1), "output": FLOAT.ranks(min_rank=1)})

_gelu_numpy = _float_kernel(_gelu)


def gelu_into(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """gelu of float32 x into `out` (may be x): the C kernel where there is one."""
    fast = kernels.simd() if x.flags.c_contiguous and out.flags.c_contiguous else None
    if fast is not None:
        return fast.gelu(x, out)
    kernels.untraceable()           # numpy's passes: not a step replay can make again
    out[...] = _gelu_numpy([x], {}, None)[0]
    return out


def gelu_kernel(inputs, attributes, outputs):
    """§8.9.23 gelu. float32: the C kernel (wasm or native: the same double evaluation
    as _gelu in one pass instead of ~15 numpy passes, ~6x faster on the host);
    otherwise _gelu. float16 stays on _gelu, which rounds float64 once to float16
    (float32 first would round twice)."""
    x = inputs[0]
    if x.dtype == _F32:
        return [gelu_into(x, np.empty(x.shape, _F32))]
    return _gelu_numpy(inputs, attributes, outputs)


register("gelu", build=build_plain, kernel=gelu_kernel, limits=_SINGLE(FLOATS))

for _name, _function in {
    "hardSwish": _hard_swish,
    "sigmoid": lambda x: 1 / (np.exp(-x) + 1),     # 1 / (exp(-x) + 1)
    "softplus": _softplus,
    "softsign": lambda x: x / (1 + np.abs(x)),      # x / (1 + |x|)
    "tanh": np.tanh,
}.items():
    register(_name, build=build_plain, kernel=_float_kernel(_function), limits=_SINGLE(FLOATS))

for _name, _function, _defaults in (
    ("elu", _elu, {"alpha": 1.0}),
    ("hardSigmoid", _hard_sigmoid, {"alpha": 0.2, "beta": 0.5}),
    ("leakyRelu", _leaky_relu, {"alpha": 0.01}),
    ("linear", _linear, {"alpha": 1.0, "beta": 0.0}),
):
    register(_name, build=_build_scalars(_defaults), kernel=_float_kernel(_function, wide=_name != "elu"),
             limits=_SINGLE(FLOATS))
