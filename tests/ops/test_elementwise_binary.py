"""add, sub, mul, div, max, min, pow (§8.9.13) against torch (floats) and Python
integer arithmetic (integers), for every data type, with broadcasting."""
import numpy as np
import pytest

from tests.portable.expect import assert_close

from .conftest import ALL_TYPES, FLOAT_TYPES, INT_TYPES, random_array, run, torch, torch_ref

FLOAT_REFS = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
              "max": torch.maximum, "min": torch.minimum, "pow": torch.pow}


def int_ref(op, a, b, dtype):
    """Exact Python-integer arithmetic, wrapped to the type's width like native integer ops."""
    bits = np.dtype(dtype).itemsize * 8
    signed = np.dtype(dtype).kind == "i"

    def wrap(x):
        x %= 1 << bits
        return x - (1 << bits) if signed and x >= 1 << (bits - 1) else x

    def one(x, y):
        x, y = int(x), int(y)
        if op == "add":
            return wrap(x + y)
        if op == "sub":
            return wrap(x - y)
        if op == "mul":
            return wrap(x * y)
        if op == "div":
            if y == 0:
                return 0
            q = abs(x) // abs(y)
            return wrap(q if (x < 0) == (y < 0) else -q)
        if op == "max":
            return max(x, y)
        if op == "min":
            return min(x, y)
        if y < 0:
            return 1 if x == 1 else (-1 if y % 2 else 1) if x == -1 else 0
        return wrap(x ** y)

    a_b, b_b = np.broadcast_arrays(a, b)
    return np.array([one(x, y) for x, y in zip(a_b.ravel(), b_b.ravel())], dtype=object) \
        .astype(np.dtype(dtype)).reshape(a_b.shape)


@pytest.mark.parametrize("op", list(FLOAT_REFS))
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda d: np.dtype(d).name)
def test_float_types(op, dtype, rng):
    a = random_array((2, 3, 4), dtype, rng, 0.5, 4) if op == "pow" else random_array((2, 3, 4), dtype, rng)
    b = random_array((3, 1), dtype, rng, -2, 2) if op == "pow" else random_array((3, 1), dtype, rng, 1, 9)
    got = run(lambda builder, x: getattr(builder, op)(x["a"], x["b"]), {"a": a, "b": b})
    expected = torch_ref(FLOAT_REFS[op], a, b)
    # WPT's budgets: exact for add/sub/mul/max/min, 2 ULP for div, 32 ULP for pow
    assert_close(got, expected, ulp={"div": 2, "pow": 32}.get(op, 0), what=f"{op} {np.dtype(dtype).name}")


@pytest.mark.parametrize("op", list(FLOAT_REFS))
@pytest.mark.parametrize("dtype", INT_TYPES, ids=lambda d: np.dtype(d).name)
def test_integer_types(op, dtype, rng):
    info = np.iinfo(dtype)
    a = np.array([[info.min, info.max, 0, 7, 3, info.max // 2]], dtype=dtype)
    b = np.array([[1], [2], [0 if op != "pow" else 3]], dtype=dtype)
    if op == "pow":
        a = random_array((1, 6), dtype, rng, -5, 5)
    got = run(lambda builder, x: getattr(builder, op)(x["a"], x["b"]), {"a": a, "b": b})
    assert_close(got, int_ref(op, a, b, dtype), what=f"{op} {np.dtype(dtype).name}")


def test_scalar_and_rank_zero_broadcast():
    a = np.array(2.5, dtype=np.float32)
    b = np.arange(4, dtype=np.float32).reshape(2, 2)
    got = run(lambda builder, x: builder.mul(x["a"], x["b"]), {"a": a, "b": b})
    assert got.tolist() == [[0, 2.5], [5, 7.5]]


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=lambda d: np.dtype(d).name)
def test_every_type_is_reported_by_op_support_limits(dtype):
    import asyncio

    import webnn_py

    async def limits():
        context = await webnn_py.ml.createContext()
        return context.opSupportLimits()
    name = np.dtype(dtype).name
    assert name in asyncio.run(limits())["add"]["a"]["dataTypes"]


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda d: np.dtype(d).name)
def test_ieee_results_without_warnings_keep_the_callers_error_setting(dtype):
    from webnn_py.ops.elementwise_binary import kernel

    big = np.finfo(dtype).max
    a = np.array([1.0, -1.0, 0.0, np.inf, big], dtype)
    b = np.array([0.0, 0.0, 0.0, np.inf, big], dtype)
    with np.errstate(all="raise"):
        quotient, = kernel("div")([a, b], {}, None)
        difference, = kernel("sub")([a, b], {}, None)
        total, = kernel("add")([a, b], {}, None)
        with pytest.raises(FloatingPointError):     # the caller's own setting stays in force
            np.add(a, b)
    # IEEE 754: ±x / 0 is ±inf, 0 / 0 and inf - inf NaN, max + max overflows to inf.
    assert quotient[:2].tolist() == [np.inf, -np.inf] and np.isnan(quotient[2])
    assert np.isnan(difference[3]) and total[4] == np.inf and total.dtype == dtype
