"""Element-wise unary operators (§8.9.15): abs, ceil, cos, erf, exp, floor,
identity, log, neg, reciprocal, roundEven, sin, sign, sqrt, tan."""
from __future__ import annotations

import functools
import math

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


# -- erf and erfc ---------------------------------------------------------------------------
# numpy has no erf, and webnn-py depends on numpy alone. Both functions evaluate in
# float64 to ~1e-9 relative error or better (0.02 ULP of float32), so that rounding
# once to float32 or float16 gives the correctly rounded value or its neighbour (the
# 1 ULP the tests allow), in a fixed number of vectorised passes (gelu of a transformer's 128x1024
# activations must not take a series of 80 terms).
#
#   erfc(z) = exp(-z^2) * R(z) for 0 <= z < 11, where R(z) = exp(z^2) erfc(z) is
#   smooth and slowly varying (~1 / (z sqrt(pi)) for large z): R is a degree-4
#   polynomial on each interval [k/16, (k+1)/16), interpolating R at the interval's
#   Chebyshev nodes, whose values come from Python's math.erfc when this module is
#   imported; it is evaluated in s = 16 z - k in [0, 1), one coefficient table
#   lookup per degree. Interpolation error: below 1e-9 relative on every interval (checked
#   against math.erfc on a dense sweep in tests/runtime/test_fast_kernels.py).
#   Beyond 11, erfc(z) < 1.5e-54 is 0 in float32 and float16; there R(11) stands in
#   for R(z), and exp(-z^2) becomes exactly 0 from z = 27 on (infinite arguments
#   included), as the spec's formulas give.
#
#   erf(x) for |x| < 1/2 is its Taylor series 2/sqrt(pi) sum (-1)^n x^(2n+1) / (n! (2n+1))
#   (11 terms, truncation below 1e-14 relative), elsewhere sign(x) (1 - erfc(|x|)),
#   where erfc(|x|) < 0.48 so the subtraction loses nothing.

_ERFC_WIDTH = 1 / 16
_ERFC_END = 11.0
_ERFC_DEGREE = 4


def _chebyshev_nodes(degree: int) -> tuple[np.ndarray, np.ndarray]:
    """The degree + 1 Chebyshev nodes in s in [0, 1], and their angles theta_j."""
    n = degree + 1
    theta = np.pi * (np.arange(n) + 0.5) / n
    return (np.cos(theta) + 1) / 2, theta


def _interpolants(values: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """[degree + 1, pieces]: power-basis coefficients in s of the polynomials through
    `values` ([pieces, degree + 1], at the Chebyshev nodes of each piece).

    Interpolation at the n = degree + 1 Chebyshev nodes t_j = cos(theta_j) has the
    Chebyshev coefficients c_k = (2 - [k = 0]) / n * sum_j f(t_j) cos(k theta_j) (a
    discrete cosine transform), computed for all pieces at once; a fixed linear map
    then turns them into powers of s = (t + 1) / 2."""
    n = len(theta)
    transform = np.cos(np.outer(np.arange(n), theta)) * (2.0 / n)
    transform[0] /= 2
    chebyshev = values @ transform.T                               # [pieces, n]
    # Column k: the powers of s of T_k(2 s - 1), by T_k+1 = 2 t T_k - T_k-1 with
    # t = 2 s - 1 (coefficient arrays, lowest power first; np.convolve multiplies
    # them). Not numpy.polynomial: importing it costs ~150 ms at every page load.
    t = np.array([-1.0, 2.0])
    basis = np.zeros((n, n))
    previous, current = np.array([1.0]), t
    basis[0, 0] = 1.0
    for k in range(1, n):
        basis[:len(current), k] = current
        following = 2 * np.convolve(t, current)
        following[:len(previous)] -= previous
        previous, current = current, following
    return basis @ chebyshev.T


@functools.cache
def _erfc_interpolants() -> np.ndarray:
    """[degree + 1, intervals]: power-basis coefficients in s in [0, 1) of each interval's
    interpolant of R. Computed at the first use (mostly the math.erfc calls; at import it
    ran at every page's boot) and kept."""
    count = int(_ERFC_END / _ERFC_WIDTH)
    nodes, theta = _chebyshev_nodes(_ERFC_DEGREE)
    z = (np.arange(count)[:, None] + nodes[None, :]) * _ERFC_WIDTH
    values = np.array([math.exp(v * v) * math.erfc(v) for v in z.ravel().tolist()]).reshape(count, -1)
    return _interpolants(values, theta)


# The gelu kernel's short path (kernels.c): for |z| <= ERF_NEAR, erf(z) = z P(z^2 / ERF_NEAR^2),
# P the degree-12 interpolant of erf(z) / z in s = z^2 / ERF_NEAR^2 at Chebyshev nodes (erf(z) / z
# is analytic in z^2). Relative error of 1 + erf(z) there, also where z is near -ERF_NEAR and
# 1 + erf(z) is 0.0047: below 1e-9 (checked in tests/kernels), against the 3e-8 that rounding
# once to float32 within one ULP allows. It needs no exp and no table lookup.
ERF_NEAR = 2.0
_ERF_NEAR_DEGREE = 12


@functools.cache
def _erf_near_interpolant() -> np.ndarray:
    """[degree + 1]: power-basis coefficients in s = z^2 / ERF_NEAR^2 of P (see above)."""
    nodes, theta = _chebyshev_nodes(_ERF_NEAR_DEGREE)
    z = np.sqrt(nodes) * ERF_NEAR
    values = np.array([math.erf(v) / v for v in z.tolist()])
    return _interpolants(values[None, :], theta)[:, 0]


# The two tables by name (the wasm gelu kernel's table is made of them), computed at the
# first read (PEP 562).
_TABLES = {"_ERFC_COEFFICIENTS": _erfc_interpolants, "ERF_NEAR_COEFFICIENTS": _erf_near_interpolant}


def __getattr__(name: str):
    if name in _TABLES:
        return _TABLES[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_TAYLOR = np.array([(-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(11)]) * (2 / math.sqrt(math.pi))
# The largest float64 below _ERFC_END: arguments are clipped to it, so that every
# lookup index is in range.
_ERFC_LAST = np.nextafter(_ERFC_END, 0.0)


def erfc_nonnegative(z: np.ndarray) -> np.ndarray:
    """erfc(z) in float64 for z >= 0 (NaN stays NaN). From 11 on, where R is no longer
    interpolated, the result is exp(-z^2) R(11): below 1e-52, so 0 in every WebNN type,
    and exactly 0 once exp(-z^2) underflows (z > 27, +inf)."""
    z = np.asarray(z, dtype=np.float64)
    shape = z.shape
    z = z.reshape(-1)                           # in-place steps need arrays, not scalars
    u = np.fmin(z, _ERFC_LAST)                 # NaN becomes _ERFC_LAST: a valid index
    u *= 1 / _ERFC_WIDTH
    whole = np.floor(u)
    index = whole.astype(np.intp)
    u -= whole                                  # s in [0, 1)
    coefficients = _erfc_interpolants()
    acc = np.take(coefficients[_ERFC_DEGREE], index)
    for row in coefficients[_ERFC_DEGREE - 1::-1]:
        acc *= u
        acc += np.take(row, index)
    # exp(-z^2) of the unclipped z: 0 for huge and infinite z, NaN for NaN.
    np.multiply(z, z, out=u)
    np.negative(u, out=u)
    np.exp(u, out=u)
    acc *= u
    return acc.reshape(shape)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, vectorised, in float64 (see above)."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    a2 = a * a
    series = np.full(a.shape, _TAYLOR[-1])
    for c in _TAYLOR[-2::-1]:
        series *= a2
        series += c
    series *= a
    result = np.where(a < 0.5, series, 1.0 - erfc_nonnegative(a))
    # erf is odd; copysign keeps erf(-0) = -0; NaN stays NaN (via erfc).
    return np.copysign(result, x)


def erfc(x: np.ndarray) -> np.ndarray:
    """1 - erf(x) in float64, to full relative precision also where it is tiny."""
    x = np.asarray(x, dtype=np.float64)
    tail = erfc_nonnegative(np.abs(x))
    return np.where(x < 0, 2.0 - tail, tail)


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
