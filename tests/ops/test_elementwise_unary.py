"""abs, ceil, cos, erf, exp, floor, identity, log, neg, reciprocal, roundEven,
sin, sign, sqrt, tan (§8.9.15) against torch in float64 (floats, rounded once to
the tested type) and Python integer arithmetic (integers), for every allowed
data type, plus every TypeError of "create an element-wise unary operation"."""
import asyncio

import numpy as np
import pytest

import webnn_py
from tests.portable.expect import assert_close

from .conftest import ALL_TYPES, FLOAT_TYPES, random_array, run, torch

SIGNED_TYPES = [np.float32, np.float16, np.int32, np.int64, np.int8]
FLOAT_ONLY = ["ceil", "cos", "erf", "exp", "floor", "log", "reciprocal", "roundEven", "sin", "sqrt", "tan"]
SIGNED_OPS = ["abs", "neg", "sign"]
TYPE_ID = {"ids": lambda d: np.dtype(d).name}

TORCH = {
    "abs": torch.abs, "ceil": torch.ceil, "cos": torch.cos, "erf": torch.erf, "exp": torch.exp,
    "floor": torch.floor, "identity": lambda t: t.clone(), "log": torch.log, "neg": torch.neg,
    "reciprocal": torch.reciprocal, "roundEven": torch.round,   # torch.round rounds half to even
    "sin": torch.sin, "sign": torch.sign, "sqrt": torch.sqrt, "tan": torch.tan,
}
# Budgets in ULP of the result type against the float64 reference rounded once:
# exact for the exactly-representable ops, a few ULP for the transcendental ones
# (WPT allows more); float16 is computed in float32 and rounded once.
ULP = {"cos": 2, "sin": 2, "tan": 4, "exp": 2, "log": 2, "erf": 1, "sqrt": 1, "reciprocal": 1}

# Values where each function is defined and interesting, plus the special values.
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan]
DOMAIN = {"log": (0.01, 50), "sqrt": (0, 100), "reciprocal": (0.1, 20), "exp": (-20, 10), "tan": (-1.5, 1.5)}


def float_ref(op, x):
    """torch in float64 on the exact input values, rounded once to x's type."""
    out = TORCH[op](torch.from_numpy(x.astype(np.float64)))
    with np.errstate(over="ignore"):       # rounding to the type overflows to infinity
        return out.numpy().astype(x.dtype)


def int_ref(op, x):
    """Python integers, wrapped to x's type like native integer ops (abs/neg of the minimum)."""
    bits = x.dtype.itemsize * 8

    def wrap(v):
        v %= 1 << bits
        return v - (1 << bits) if x.dtype.kind == "i" and v >= 1 << (bits - 1) else v

    fn = {"abs": abs, "neg": lambda v: -v, "sign": lambda v: (v > 0) - (v < 0), "identity": lambda v: v}[op]
    return np.array([wrap(fn(int(v))) for v in x.ravel()], dtype=object).astype(x.dtype).reshape(x.shape)


def unary(op):
    return lambda builder, x: getattr(builder, op)(x["x"])


@pytest.mark.parametrize("op", FLOAT_ONLY + SIGNED_OPS + ["identity"])
@pytest.mark.parametrize("dtype", FLOAT_TYPES, **TYPE_ID)
def test_float_types(op, dtype, rng):
    low, high = DOMAIN.get(op, (-10, 10))
    x = random_array((3, 4, 5), dtype, rng, low, high)
    if op in ("roundEven", "ceil", "floor", "sign"):
        # halves (ties for roundEven), integers and their negatives
        x.flat[:8] = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3, -4], dtype)
    got = run(unary(op), {"x": x})
    assert got.dtype == dtype and got.shape == x.shape
    assert_close(got, float_ref(op, x), ulp=ULP.get(op, 0), what=f"{op} {np.dtype(dtype).name}")


@pytest.mark.parametrize("op", FLOAT_ONLY + SIGNED_OPS + ["identity"])
@pytest.mark.parametrize("dtype", FLOAT_TYPES, **TYPE_ID)
def test_special_values(op, dtype):
    x = np.array(SPECIALS + [-1.0, 1.0, 4.0, 1e-3], dtype=dtype)
    got = run(unary(op), {"x": x})
    assert_close(got, float_ref(op, x), ulp=ULP.get(op, 0), what=f"{op} {np.dtype(dtype).name}")


@pytest.mark.parametrize("op", ["erf", "tan", "exp", "log"])
def test_wide_ranges_float32(op, rng):
    # erf across its whole transition to +-1 and tiny values where erf(x) ~ 2x/sqrt(pi);
    # exp up to overflow; log of tiny and huge values; tan near its poles.
    x = {"erf": np.concatenate([np.linspace(-6, 6, 997), np.geomspace(1e-30, 1e-2, 40)]),
         "tan": np.linspace(-1.57, 1.57, 1001),
         "exp": np.linspace(-103, 89, 1001),
         "log": np.geomspace(1e-37, 1e37, 1001)}[op].astype(np.float32)
    got = run(unary(op), {"x": x})
    assert_close(got, float_ref(op, x), ulp=ULP[op], what=op)


def test_erf_float16_every_value():
    # every finite float16: erf is computed in float64 and rounded once
    bits = np.arange(0, 0x7C00, dtype=np.uint16)
    x = np.concatenate([bits, bits | 0x8000]).view(np.float16)
    assert_close(run(unary("erf"), {"x": x}), float_ref("erf", x), ulp=0, what="erf float16")


@pytest.mark.parametrize("op", SIGNED_OPS + ["identity"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8], **TYPE_ID)
def test_signed_integer_types(op, dtype, rng):
    info = np.iinfo(dtype)
    x = np.concatenate([np.array([info.min, info.max, 0, -1, 1, info.min + 1], dtype=dtype),
                        random_array(10, dtype, rng, -100, 100)]).reshape(2, 8)
    got = run(unary(op), {"x": x})
    assert got.dtype == dtype
    assert_close(got, int_ref(op, x), what=f"{op} {np.dtype(dtype).name}")


@pytest.mark.parametrize("dtype", ALL_TYPES, **TYPE_ID)
def test_identity_every_type(dtype, rng):
    x = random_array((2, 3), dtype, rng, 0, 100)
    got = run(unary("identity"), {"x": x})
    assert got.dtype == dtype and got.tolist() == x.tolist()


@pytest.mark.parametrize("op", FLOAT_ONLY + SIGNED_OPS + ["identity"])
def test_rank_zero(op):
    x = np.array(0.75, dtype=np.float32)
    got = run(unary(op), {"x": x})
    assert got.shape == ()
    assert_close(got, float_ref(op, x), ulp=ULP.get(op, 0), what=op)


def test_identity_output_is_not_the_input():
    # identity makes a graph input usable as an output and must not alias it
    x = np.arange(6, dtype=np.int8).reshape(2, 3)
    got = run(lambda b, o: [b.identity(o["x"]), b.neg(b.identity(o["x"]))], {"x": x})
    assert got[0].tolist() == x.tolist() and got[1].tolist() == (-x).tolist()


def test_on_constants():
    got = run(lambda b, o: b.add(b.abs(o["c"]), o["x"]),
              {"x": np.zeros(2, np.int32)}, {"c": np.array([-3, 4], dtype=np.int32)})
    assert got.tolist() == [3, 4]


# -- validation -------------------------------------------------------------------------------

def _builder():
    context = asyncio.run(webnn_py.ml.createContext())
    return context, webnn_py.MLGraphBuilder(context)


DISALLOWED = {op: ["int32", "uint32", "int64", "uint64", "int8", "uint8"] for op in FLOAT_ONLY}
DISALLOWED.update({op: ["uint32", "uint64", "uint8"] for op in SIGNED_OPS})


@pytest.mark.parametrize("op,data_type", [(op, t) for op, types in DISALLOWED.items() for t in types])
def test_disallowed_data_type(op, data_type):
    _, builder = _builder()
    x = builder.input("x", {"dataType": data_type, "shape": [2]})
    with pytest.raises(TypeError, match=rf"^{op}: input has data type {data_type}; allowed: "):
        getattr(builder, op)(x)
    with pytest.raises(TypeError, match=rf"^\[my label\] {op}: input has data type {data_type}"):
        getattr(builder, op)(x, {"label": "my label"})


@pytest.mark.parametrize("op", FLOAT_ONLY + SIGNED_OPS + ["identity"])
def test_operand_from_another_builder(op):
    context, builder = _builder()
    other = webnn_py.MLGraphBuilder(context)
    x = other.input("x", {"dataType": "float32", "shape": [2]})
    with pytest.raises(TypeError, match=rf"^\[l\] {op}: an operand was created by another MLGraphBuilder"):
        getattr(builder, op)(x, {"label": "l"})


@pytest.mark.parametrize("op", FLOAT_ONLY + SIGNED_OPS + ["identity"])
def test_output_descriptor_and_support_limits(op):
    context, builder = _builder()
    x = builder.input("x", {"dataType": "float16", "shape": [2, 1, 3]})
    y = getattr(builder, op)(x)
    assert (y.dataType, y.shape) == ("float16", [2, 1, 3])
    limits = context.opSupportLimits()[op]
    expected = {"identity": [np.dtype(t).name for t in ALL_TYPES],
                **{o: ["float32", "float16", "int32", "int64", "int8"] for o in SIGNED_OPS}}.get(op, ["float32", "float16"])
    assert sorted(limits["input"]["dataTypes"]) == sorted(expected)
    assert limits["output"] == limits["input"]
