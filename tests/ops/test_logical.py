"""Element-wise logical operators (§8.9.14) and where (§8.9.56): every operator
and allowed data type against torch (floats) or exact Python comparisons
(integers), broadcasting, NaN/infinity, rank 0, and every TypeError path."""
import numpy as np
import pytest

import webnn_py
from tests.portable.expect import assert_close

from .conftest import ALL_TYPES, FLOAT_TYPES, INT_TYPES, random_array, run, torch, torch_ref

COMPARISONS = {"equal": (torch.eq, lambda x, y: x == y),
               "notEqual": (torch.ne, lambda x, y: x != y),
               "greater": (torch.gt, lambda x, y: x > y),
               "greaterOrEqual": (torch.ge, lambda x, y: x >= y),
               "lesser": (torch.lt, lambda x, y: x < y),
               "lesserOrEqual": (torch.le, lambda x, y: x <= y)}
LOGICAL = {"logicalAnd": lambda x, y: bool(x) and bool(y),
           "logicalOr": lambda x, y: bool(x) or bool(y),
           "logicalXor": lambda x, y: bool(x) != bool(y)}
name = lambda d: np.dtype(d).name  # noqa: E731


def python_binary(fn, a, b):
    """Apply `fn` to Python scalars (exact ints; floats as Python floats) over the broadcast shape."""
    a_b, b_b = np.broadcast_arrays(a, b)
    values = [1 if fn(x.item(), y.item()) else 0 for x, y in zip(a_b.ravel(), b_b.ravel())]
    return np.array(values, dtype=np.uint8).reshape(a_b.shape)


def binary(op):
    return lambda builder, x: getattr(builder, op)(x["a"], x["b"])


# -- comparisons --

@pytest.mark.parametrize("op", list(COMPARISONS))
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=name)
def test_comparison_floats(op, dtype, rng):
    a = random_array((2, 3, 4), dtype, rng, -3, 3).round()    # rounding makes ties frequent
    b = random_array((3, 1), dtype, rng, -3, 3).round()
    a[0, 0, :] = [np.nan, np.inf, -np.inf, 0]
    b[0, 0] = np.nan
    b[1, 0] = np.inf
    got = run(binary(op), {"a": a, "b": b})
    assert got.dtype == np.uint8
    assert_close(got, torch_ref(COMPARISONS[op][0], a, b).astype(np.uint8), what=op)
    assert_close(got, python_binary(COMPARISONS[op][1], a, b), what=op)


@pytest.mark.parametrize("op", list(COMPARISONS))
@pytest.mark.parametrize("dtype", INT_TYPES, ids=name)
def test_comparison_integers(op, dtype):
    info = np.iinfo(dtype)
    # Extremes and neighbours: int64/uint64 values that a float comparison would conflate.
    values = [info.min, info.min + 1, 0, 1, info.max - 1, info.max]
    a = np.array(values, dtype=dtype).reshape(1, 6)
    b = np.array(values, dtype=dtype).reshape(6, 1)
    got = run(binary(op), {"a": a, "b": b})
    assert got.shape == (6, 6)
    assert_close(got, python_binary(COMPARISONS[op][1], a, b), what=f"{op} {name(dtype)}")


@pytest.mark.parametrize("op", list(COMPARISONS))
def test_comparison_rank_zero(op):
    a = np.array(2, dtype=np.int32)
    b = np.array([1, 2, 3], dtype=np.int32)
    got = run(binary(op), {"a": a, "b": b})
    assert_close(got, python_binary(COMPARISONS[op][1], a, b))
    got = run(binary(op), {"a": a, "b": np.array(2, dtype=np.int32)})
    assert got.shape == () and got.item() == COMPARISONS[op][1](2, 2)


def test_nan_is_unordered():
    """greaterOrEqual is not logicalNot(lesser): NaN compares false except notEqual (§8.9.14 note)."""
    a = np.array([np.nan, np.nan, 1], dtype=np.float32)
    b = np.array([np.nan, 1, np.nan], dtype=np.float32)
    for op, want in [("equal", [0, 0, 0]), ("notEqual", [1, 1, 1]), ("greater", [0, 0, 0]),
                     ("greaterOrEqual", [0, 0, 0]), ("lesser", [0, 0, 0]), ("lesserOrEqual", [0, 0, 0])]:
        assert run(binary(op), {"a": a, "b": b}).tolist() == want, op


def test_float16_compares_at_float16_precision():
    # 2049 is not a float16; 2048 and 2050 are neighbours, so they must differ.
    a = np.array([2048, 2050], dtype=np.float16)
    b = np.array([2050, 2050], dtype=np.float16)
    assert run(binary("lesser"), {"a": a, "b": b}).tolist() == [1, 0]


# -- logicalNot / And / Or / Xor --

UINT8_VALUES = np.array([0, 1, 2, 255], dtype=np.uint8)


@pytest.mark.parametrize("op", list(LOGICAL))
def test_logical_binary(op):
    a = UINT8_VALUES.reshape(4, 1)
    b = UINT8_VALUES.reshape(1, 4)
    got = run(binary(op), {"a": a, "b": b})
    assert got.dtype == np.uint8 and got.shape == (4, 4)
    assert_close(got, python_binary(LOGICAL[op], a, b), what=op)


@pytest.mark.parametrize("op", list(LOGICAL))
def test_logical_binary_rank_zero(op):
    a = np.array(7, dtype=np.uint8)
    got = run(binary(op), {"a": a, "b": np.array(0, dtype=np.uint8)})
    assert got.shape == () and got.item() == int(LOGICAL[op](7, 0))


def test_logical_not():
    a = np.array([[0, 1], [2, 255]], dtype=np.uint8)
    got = run(lambda builder, x: builder.logicalNot(x["a"]), {"a": a})
    assert got.dtype == np.uint8
    assert got.tolist() == [[1, 0], [0, 0]]
    assert run(lambda builder, x: builder.logicalNot(x["a"]), {"a": np.array(0, np.uint8)}).item() == 1


# -- isNaN / isInfinite --

@pytest.mark.parametrize("op, ref", [("isNaN", torch.isnan), ("isInfinite", torch.isinf)])
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=name)
def test_is_nan_is_infinite(op, ref, dtype, rng):
    a = random_array((3, 4), dtype, rng)
    a.ravel()[:6] = [np.nan, np.inf, -np.inf, -0.0, np.finfo(dtype).max, np.finfo(dtype).tiny]
    got = run(lambda builder, x: getattr(builder, op)(x["a"]), {"a": a})
    assert got.dtype == np.uint8
    assert_close(got, torch_ref(ref, a).astype(np.uint8), what=op)
    rank0 = run(lambda builder, x: getattr(builder, op)(x["a"]), {"a": np.array(np.nan, dtype)})
    assert rank0.shape == () and rank0.item() == (op == "isNaN")


# -- where --

def python_where(c, t, f):
    c_b, t_b, f_b = np.broadcast_arrays(c, t, f)
    values = [x.item() if cond.item() != 0 else y.item() for cond, x, y in zip(c_b.ravel(), t_b.ravel(), f_b.ravel())]
    return np.array(values, dtype=t.dtype).reshape(c_b.shape)


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=name)
def test_where_every_type(dtype, rng):
    condition = np.array([[0], [1], [2], [255]], dtype=np.uint8)       # non-zero is true, 4x1
    if np.dtype(dtype).kind == "f":
        true_value = np.array([1.5, -np.inf, np.nan], dtype=dtype)      # 3
        false_value = random_array((2, 1, 1), dtype, rng)               # 2x1x1
    else:
        info = np.iinfo(dtype)
        true_value = np.array([info.min, info.max, 1], dtype=dtype)
        false_value = np.array([info.max, info.min], dtype=dtype).reshape(2, 1, 1)
    got = run(lambda builder, x: builder.where(x["c"], x["t"], x["f"]),
              {"c": condition, "t": true_value, "f": false_value})
    assert got.dtype == np.dtype(dtype) and got.shape == (2, 4, 3)
    expected = python_where(condition, true_value, false_value)
    assert_close(got, expected, ulp=0, what=name(dtype))
    if np.dtype(dtype) in (np.float32, np.float16, np.int32, np.int64, np.int8, np.uint8):
        ref = torch_ref(lambda c, t, f: torch.where(c != 0, t, f), condition, true_value, false_value)
        assert_close(got, ref, ulp=0, what=f"{name(dtype)} vs torch")


def test_where_condition_broadcasts_to_values_and_rank_zero():
    got = run(lambda builder, x: builder.where(x["c"], x["t"], x["f"]),
              {"c": np.array(1, np.uint8), "t": np.array(3, np.int32), "f": np.array([[4, 5]], np.int32)})
    assert got.tolist() == [[3, 3]]
    got = run(lambda builder, x: builder.where(x["c"], x["t"], x["f"]),
              {"c": np.array(0, np.uint8), "t": np.array(3, np.int32), "f": np.array(4, np.int32)})
    assert got.shape == () and got.item() == 4
    # The condition may be larger than both values.
    got = run(lambda builder, x: builder.where(x["c"], x["t"], x["f"]),
              {"c": np.array([[1, 0], [0, 1]], np.uint8), "t": np.array([7], np.int8), "f": np.array(-1, np.int8)})
    assert got.tolist() == [[7, -1], [-1, 7]]


def test_where_with_comparison_condition():
    """The usual pattern: a comparison's uint8 output as the condition."""
    a = np.array([1, -2, 3, -4], dtype=np.float32)
    zero = np.zeros(1, dtype=np.float32)
    got = run(lambda builder, x: builder.where(builder.greater(x["a"], x["z"]), x["a"], x["z"]), {"a": a, "z": zero})
    assert got.tolist() == [1, 0, 3, 0]


# -- op support limits --

@pytest.mark.parametrize("op", list(COMPARISONS) + list(LOGICAL) + ["logicalNot", "isNaN", "isInfinite", "where"])
def test_op_support_limits(op):
    import asyncio

    async def limits():
        context = await webnn_py.ml.createContext()
        return context.opSupportLimits()[op]
    got = asyncio.run(limits())
    if op in COMPARISONS:
        assert set(got) == {"a", "b", "output"}
        assert set(got["a"]["dataTypes"]) == {name(d) for d in ALL_TYPES} == set(got["b"]["dataTypes"])
    elif op in LOGICAL:
        assert got["a"]["dataTypes"] == ["uint8"] == got["b"]["dataTypes"]
    elif op == "logicalNot":
        assert set(got) == {"a", "output"} and got["a"]["dataTypes"] == ["uint8"]
    elif op == "where":
        assert set(got) == {"condition", "trueValue", "falseValue", "output"}
        assert got["condition"]["dataTypes"] == ["uint8"]
        assert set(got["trueValue"]["dataTypes"]) == {name(d) for d in ALL_TYPES}
    else:
        assert set(got) == {"a", "output"} and set(got["a"]["dataTypes"]) == {"float32", "float16"}
    if op != "where":
        assert got["output"]["dataTypes"] == ["uint8"]


# -- validation: every TypeError of the build steps --

def builder_with(**descs):
    """A fresh builder with graph inputs of the given (dataType, shape)."""
    import asyncio
    context = asyncio.run(webnn_py.ml.createContext())
    builder = webnn_py.MLGraphBuilder(context)
    operands = {k: builder.input(k, {"dataType": t, "shape": list(s)}) for k, (t, s) in descs.items()}
    return builder, operands


@pytest.mark.parametrize("op", ["logicalNot", "logicalAnd", "logicalOr", "logicalXor"])
@pytest.mark.parametrize("dtype", ["float32", "int8", "int32"])
def test_logical_requires_uint8(op, dtype):
    builder, x = builder_with(a=(dtype, [2]), b=(dtype, [2]))
    args = [x["a"]] if op == "logicalNot" else [x["a"], x["b"]]
    with pytest.raises(TypeError, match=rf"^{op}: a has data type {dtype}; allowed: uint8"):
        getattr(builder, op)(*args)


@pytest.mark.parametrize("op", ["isNaN", "isInfinite"])
@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64"])
def test_is_nan_requires_float(op, dtype):
    builder, x = builder_with(a=(dtype, [2]))
    with pytest.raises(TypeError, match=rf"^{op}: a has data type {dtype}; allowed: float32, float16"):
        getattr(builder, op)(x["a"])


@pytest.mark.parametrize("op", list(COMPARISONS) + list(LOGICAL))
def test_binary_type_mismatch(op):
    a_type, b_type = ("uint8", "int8") if op in LOGICAL else ("float32", "float16")
    builder, x = builder_with(a=(a_type, [2]), b=(b_type, [2]))
    with pytest.raises(TypeError, match=rf"^{op}: b's data type {b_type} differs from a's {a_type}"):
        getattr(builder, op)(x["a"], x["b"])


@pytest.mark.parametrize("op", list(COMPARISONS) + list(LOGICAL))
def test_binary_not_broadcastable(op):
    builder, x = builder_with(a=("uint8", [2, 3]), b=("uint8", [4]))
    with pytest.raises(TypeError, match=rf"^\[lbl\] {op}: shapes \[2, 3\] and \[4\] are not broadcastable"):
        getattr(builder, op)(x["a"], x["b"], {"label": "lbl"})


@pytest.mark.parametrize("op", list(COMPARISONS) + list(LOGICAL) + ["logicalNot", "isNaN", "isInfinite"])
def test_operand_from_another_builder(op):
    builder, x = builder_with(a=("uint8", [2]))
    other, y = builder_with(a=("float32" if op in ("isNaN", "isInfinite") else "uint8", [2]))
    args = [y["a"]] if op in ("logicalNot", "isNaN", "isInfinite") else [x["a"], y["a"]]
    with pytest.raises(TypeError, match=rf"^{op}: an operand was created by another MLGraphBuilder"):
        getattr(builder, op)(*args)


def test_label_on_type_error():
    builder, x = builder_with(a=("int8", [2]))
    with pytest.raises(TypeError, match=r"^\[my not\] logicalNot: a has data type int8"):
        builder.logicalNot(x["a"], {"label": "my not"})


def test_where_condition_must_be_uint8():
    builder, x = builder_with(c=("int8", [2]), t=("float32", [2]), f=("float32", [2]))
    with pytest.raises(TypeError, match=r"^\[w\] where: condition has data type int8; allowed: uint8"):
        builder.where(x["c"], x["t"], x["f"], {"label": "w"})


def test_where_false_value_type_must_match():
    builder, x = builder_with(c=("uint8", [2]), t=("float32", [2]), f=("float16", [2]))
    with pytest.raises(TypeError, match=r"^where: falseValue's data type float16 differs from trueValue's float32"):
        builder.where(x["c"], x["t"], x["f"])


def test_where_values_not_broadcastable():
    builder, x = builder_with(c=("uint8", [1]), t=("int32", [2]), f=("int32", [3]))
    with pytest.raises(TypeError, match=r"^where: trueValue shape \[2\] and falseValue shape \[3\] are not"):
        builder.where(x["c"], x["t"], x["f"])


def test_where_condition_not_broadcastable():
    builder, x = builder_with(c=("uint8", [4]), t=("int32", [2, 1]), f=("int32", [3]))
    with pytest.raises(TypeError, match=r"^where: condition shape \[4\] is not broadcastable with \[2, 3\]"):
        builder.where(x["c"], x["t"], x["f"])


@pytest.mark.parametrize("which", ["c", "t", "f"])
def test_where_operand_from_another_builder(which):
    builder, x = builder_with(c=("uint8", [2]), t=("int32", [2]), f=("int32", [2]))
    other, y = builder_with(c=("uint8", [2]), t=("int32", [2]), f=("int32", [2]))
    args = {**x, which: y[which]}
    with pytest.raises(TypeError, match=r"^where: an operand was created by another MLGraphBuilder"):
        builder.where(args["c"], args["t"], args["f"])


def test_where_validates_operands_before_types():
    """Step 2 (validate all operands) precedes step 3 (data types)."""
    builder, x = builder_with(c=("int8", [2]), t=("int32", [2]))
    other, y = builder_with(f=("int32", [2]))
    with pytest.raises(TypeError, match=r"another MLGraphBuilder"):
        builder.where(x["c"], x["t"], y["f"])

