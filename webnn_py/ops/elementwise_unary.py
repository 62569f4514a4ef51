"""Element-wise unary operators (§8.9.15): abs, ceil, cos, erf, exp, floor,
identity, log, neg, reciprocal, roundEven, sin, sign, sqrt, tan."""
from __future__ import annotations

import numpy as np

from .registry import ALL_TYPES, FLOATS, SIGNED, BuildContext, TensorLimits, compute_type, register

# The allowedDataTypes each method passes to "create an element-wise unary
# operation" (§8.9.15); identity passes none, i.e. every type.
ALLOWED: dict[str, tuple[str, ...]] = {
    "abs": SIGNED, "ceil": FLOATS, "cos": FLOATS, "erf": FLOATS, "exp": FLOATS, "floor": FLOATS,
    "identity": ALL_TYPES, "log": FLOATS, "neg": SIGNED, "reciprocal": FLOATS, "roundEven": FLOATS,
    "sin": FLOATS, "sign": SIGNED, "sqrt": FLOATS, "tan": FLOATS,
}


def build(ctx: BuildContext, input, options: dict):
    """§8.9.15 "create an element-wise unary operation", steps 3-6: validate the
    operand, check allowedDataTypes, and copy the input's descriptor."""
    desc = ctx.check("input", input)
    return ctx.emit([input], [desc])[0]


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, vectorised, in float64 (numpy has none, and webnn-py
    depends on numpy alone, so scipy.special is not available in the wheel).

    Uses erf(x) = 2/sqrt(pi) * exp(-x^2) * sum_n 2^n x^(2n+1) / (1*3*...*(2n+1)),
    whose terms are all positive, so the sum has no cancellation (relative error
    ~1e-15). |x| is clipped to 4: erfc(4) < 1.6e-8 is below half an ULP of 1 in
    float32, so erf(x) rounds to +-1 there in every type this serves; with
    x^2 <= 16 the terms have decayed below 1e-18 of the sum after 80 of them.
    """
    x = np.asarray(x, dtype=np.float64)
    a = np.minimum(np.abs(x), 4.0)          # NaN stays NaN
    a2 = a * a
    term = a.copy()
    total = a.copy()
    for n in range(1, 81):                   # fixed count, vectorised over all elements
        term *= 2.0 * a2 / (2 * n + 1)
        total += term
    result = (2.0 / np.sqrt(np.pi)) * np.exp(-a2) * total
    # erf is odd; copysign keeps erf(-0) = -0.
    return np.copysign(np.minimum(result, 1.0), x)


def erfc(x: np.ndarray) -> np.ndarray:
    """1 - erf(x) in float64, accurate to ~1e-13 relative also where it is tiny
    (1 - erf(x) cancels there), for gelu of negative inputs.

    For x >= 2 the continued fraction
        erfc(x) = exp(-x^2) / sqrt(pi) / (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...))))
    evaluated bottom-up from a fixed depth of 60 (converged to ~3e-14 at x = 2, faster
    beyond); below 2, 1 - erf(x) >= 0.0046 loses at most three digits, which is fine.
    """
    x = np.asarray(x, dtype=np.float64)
    z = np.maximum(x, 2.0)                   # the fraction is only used (and finite) where x >= 2
    t = z.copy()
    for k in range(60, 0, -1):
        t = z + (k / 2.0) / t
    with np.errstate(under="ignore"):
        tail = np.exp(-z * z) / np.sqrt(np.pi) / t
    return np.where(x >= 2.0, tail, 1.0 - erf(x))


def _sign(x: np.ndarray) -> np.ndarray:
    # The spec's decomposition of sign() (§8.9.15): where(x > 0, 1, where(x < 0, -1, 0)),
    # so NaN and -0 both give +0 (np.sign would propagate NaN).
    one = np.ones((), x.dtype)
    return np.where(x > 0, one, np.where(x < 0, -one, np.zeros((), x.dtype)))


_FUNCTIONS = {
    "abs": np.abs,              # integers wrap: abs(int8 -128) is -128, as native types do
    "ceil": np.ceil,
    "cos": np.cos,
    "erf": erf,
    "exp": np.exp,
    "floor": np.floor,
    "log": np.log,
    "neg": np.negative,         # integers wrap like native types
    "reciprocal": np.reciprocal,
    "roundEven": np.rint,       # IEEE round half to even
    "sin": np.sin,
    "sign": _sign,
    "sqrt": np.sqrt,
    "tan": np.tan,
}


def kernel(op: str):
    if op == "identity":
        def identity(inputs, attributes, outputs):
            # Outputs must be fresh arrays, never aliases of the inputs.
            return [np.array(inputs[0], copy=True)]
        return identity

    function = _FUNCTIONS[op]

    def compute(inputs, attributes, outputs):
        x = inputs[0]
        out_dtype = x.dtype
        # float16 is computed in float32 (erf: float64) and rounded once at the end.
        x = x.astype(compute_type(out_dtype), copy=False)
        with np.errstate(all="ignore"):   # log(0), sqrt(-1), overflow: IEEE results, no warnings
            result = function(x)
        return [np.asarray(result).astype(out_dtype, copy=False)]
    return compute


for _name, _types in ALLOWED.items():
    _limits = TensorLimits(_types)
    register(_name, build=build, kernel=kernel(_name), limits={"input": _limits, "output": _limits})
