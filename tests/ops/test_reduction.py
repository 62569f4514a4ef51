"""Reductions (§8.9.39), argMin/argMax (§8.9.5) and cumulativeSum (§8.9.12):
every operator and allowed data type against torch in float64 (floats, with a
WPT-style budget proportional to the reduction size) or exact Python integer
arithmetic wrapped to the type's width (integers); every option; rank 0; and
every TypeError path of the build steps."""
import asyncio
import math

import numpy as np
import pytest

import webnn_py
from tests.portable.expect import assert_close

from .conftest import ALL_TYPES, FLOAT_TYPES, random_array, run, torch

name = lambda d: np.dtype(d).name  # noqa: E731
NUMERIC = [np.float32, np.float16, np.int32, np.uint32, np.int64, np.uint64]
REDUCTION_TYPES = {
    "reduceL1": NUMERIC, "reduceL2": FLOAT_TYPES, "reduceLogSum": FLOAT_TYPES, "reduceLogSumExp": FLOAT_TYPES,
    "reduceMax": ALL_TYPES, "reduceMean": FLOAT_TYPES, "reduceMin": ALL_TYPES,
    "reduceProduct": NUMERIC, "reduceSum": NUMERIC, "reduceSumSquare": NUMERIC,
}
CASES = [(op, dtype) for op, types in REDUCTION_TYPES.items() for dtype in types]


def wrap(value: int, dtype) -> int:
    """Python integer wrapped to `dtype`'s width, as native integer arithmetic does."""
    bits = np.dtype(dtype).itemsize * 8
    value %= 1 << bits
    return value - (1 << bits) if np.dtype(dtype).kind == "i" and value >= 1 << (bits - 1) else value


def rows(x: np.ndarray, axes):
    """The reduced groups as lists of Python scalars, one per output element in
    row-major output order (a transpose/reshape, independent of the kernel's ufuncs)."""
    rank = x.ndim
    axes = list(range(rank)) if axes is None else list(axes)
    kept = [a for a in range(rank) if a not in axes]
    moved = np.transpose(x, kept + axes)
    count = math.prod(x.shape[a] for a in axes)
    return [[v.item() for v in row] for row in moved.reshape(-1, count)]


def output_shape(shape, axes, keep):
    axes = range(len(shape)) if axes is None else axes
    return tuple(1 if i in axes else d for i, d in enumerate(shape)) if keep else \
        tuple(d for i, d in enumerate(shape) if i not in axes)


INT_FUNCS = {
    "reduceL1": lambda r: sum(abs(v) for v in r),
    "reduceSum": sum,
    "reduceSumSquare": lambda r: sum(v * v for v in r),
    "reduceProduct": math.prod,
    "reduceMax": max,
    "reduceMin": min,
}


def int_reference(op, x, axes, keep):
    values = [wrap(INT_FUNCS[op](r), x.dtype) for r in rows(x, axes)]
    return np.array(values, dtype=object).astype(x.dtype).reshape(output_shape(x.shape, axes, keep))


def torch_reference(op, x, axes, keep):
    """float64 torch reference (before rounding to the tested type)."""
    t = torch.from_numpy(x.astype(np.float64))
    if axes == []:
        # No axis reduced: each function applied to every value alone (§8.9.39 axes).
        single = {"reduceL1": torch.abs, "reduceL2": lambda v: torch.sqrt(v * v), "reduceLogSum": torch.log,
                  "reduceLogSumExp": lambda v: torch.log(torch.exp(v)), "reduceSumSquare": lambda v: v * v}
        return single.get(op, lambda v: v)(t).numpy()
    dims = list(range(x.ndim)) if axes is None else list(axes)
    if not dims:          # rank 0 with axes absent: again the scalar itself
        return torch_reference(op, x, [], keep)
    fns = {
        "reduceL1": lambda v: torch.sum(torch.abs(v), dim=dims, keepdim=keep),
        "reduceL2": lambda v: torch.sqrt(torch.sum(v * v, dim=dims, keepdim=keep)),
        "reduceLogSum": lambda v: torch.log(torch.sum(v, dim=dims, keepdim=keep)),
        "reduceLogSumExp": lambda v: torch.logsumexp(v, dim=dims, keepdim=keep),
        "reduceMax": lambda v: torch.amax(v, dim=dims, keepdim=keep),
        "reduceMin": lambda v: torch.amin(v, dim=dims, keepdim=keep),
        "reduceMean": lambda v: torch.mean(v, dim=dims, keepdim=keep),
        "reduceProduct": lambda v: _prod_dims(v, dims, keep),
        "reduceSum": lambda v: torch.sum(v, dim=dims, keepdim=keep),
        "reduceSumSquare": lambda v: torch.sum(v * v, dim=dims, keepdim=keep),
    }
    return fns[op](t).numpy()


def _prod_dims(v, dims, keep):
    # torch.prod reduces one dimension at a time; go from the highest so indices stay valid.
    for d in sorted(dims, reverse=True):
        v = torch.prod(v, dim=d, keepdim=keep)
    return v


def float_budget(op, x, axes, expected):
    """An absolute error budget in the WPT spirit: proportional to the number of
    values reduced, times the type's epsilon, times the magnitude involved."""
    # float16 is computed in float32 and rounded once: float32's accumulation
    # error plus one float16 rounding of the result.
    eps = float(np.finfo(np.float32).eps)
    rounding = float(np.spacing(np.abs(expected).max().astype(x.dtype))) if x.dtype == np.float16 else 0.0
    n = math.prod(x.shape) if axes is None else math.prod(x.shape[a] for a in axes)
    x64 = np.abs(x.astype(np.float64))
    magnitude = {"reduceSumSquare": (x64 ** 2).sum(), "reduceL2": math.sqrt((x64 ** 2).sum()),
                 "reduceLogSum": 1.0, "reduceLogSumExp": 1.0 + float(np.abs(expected).max()),
                 "reduceMean": float(x64.max(initial=0)), "reduceProduct": float(np.abs(expected).max())}
    scale = magnitude.get(op, float(x64.sum()))
    return (n + 2) * eps * max(scale, 1e-30) + rounding


def float_input(op, shape, dtype, rng):
    if op == "reduceLogSum":
        return random_array(shape, dtype, rng, 0.1, 5)      # positive sums: a finite logarithm
    if op == "reduceProduct":
        return random_array(shape, dtype, rng, 0.5, 1.8)    # no overflow in float16
    return random_array(shape, dtype, rng, -10, 10)


def int_input(op, shape, dtype, rng):
    info = np.iinfo(dtype)
    x = random_array(shape, dtype, rng, -100, 100)
    # Extremes in the first row: overflow must wrap (sum/product/square) like native integers.
    flat = x.reshape(-1)
    flat[:2] = [info.max, info.min if info.min < 0 else info.max - 3]
    return x


def reduce(op, options):
    return lambda builder, x: getattr(builder, op)(x["x"], options)


AXES_VARIANTS = [None, [1], [0, 2], [2, 0, 1], []]


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("axes", AXES_VARIANTS, ids=str)
@pytest.mark.parametrize("op, dtype", CASES, ids=[f"{o}-{name(d)}" for o, d in CASES])
def test_reduction(op, dtype, axes, keep, rng):
    shape = (2, 3, 4)
    options = {"keepDimensions": keep} if axes is None else {"axes": axes, "keepDimensions": keep}
    if np.dtype(dtype).kind == "f":
        x = float_input(op, shape, dtype, rng)
        got = run(reduce(op, options), {"x": x})
        expected = torch_reference(op, x, axes, keep)
        assert got.dtype == np.dtype(dtype)
        if op in ("reduceMax", "reduceMin"):
            assert_close(got, expected, ulp=0, what=op)          # selection: exact
        else:
            assert_close(got, expected, atol=float_budget(op, x, axes, expected), what=f"{op} {name(dtype)}")
    else:
        x = int_input(op, shape, dtype, rng)
        got = run(reduce(op, options), {"x": x})
        assert_close(got, int_reference(op, x, axes, keep), what=f"{op} {name(dtype)}")
    assert got.shape == output_shape(shape, axes, keep)


@pytest.mark.parametrize("op, dtype", CASES, ids=[f"{o}-{name(d)}" for o, d in CASES])
def test_reduction_rank_zero(op, dtype):
    value = 2 if op != "reduceLogSumExp" else 0.5
    x = np.array(value, dtype=dtype)
    for options in ({}, {"axes": []}, {"keepDimensions": True}):
        got = run(reduce(op, options), {"x": x})
        assert got.shape == ()
        if np.dtype(dtype).kind == "f":
            expected = torch_reference(op, x, None, False)
            assert_close(got, expected, ulp=1, what=op)
        else:
            assert got.item() == INT_FUNCS[op]([2]), op


def test_reduction_large_float32_sum():
    """A reduction over many values stays within the budget (pairwise-accurate)."""
    rng = np.random.default_rng(7)
    x = rng.uniform(0, 1, size=(3, 10000)).astype(np.float32)
    got = run(reduce("reduceSum", {"axes": [1]}), {"x": x})
    expected = torch.from_numpy(x.astype(np.float64)).sum(1).numpy()
    assert_close(got, expected, atol=float_budget("reduceSum", x, [1], expected))


def test_reduce_log_sum_exp_does_not_overflow():
    x = np.array([[100, 100], [-np.inf, -np.inf]], dtype=np.float32)
    got = run(reduce("reduceLogSumExp", {"axes": [1]}), {"x": x})
    assert_close(got, np.array([100 + math.log(2), -np.inf], np.float32), ulp=1)
    x16 = np.array([[20000, 1], [np.inf, 3]], dtype=np.float16)
    got = run(reduce("reduceLogSumExp", {"axes": [1]}), {"x": x16})
    assert got.tolist() == [20000, np.inf]


def test_reduction_nan_propagates():
    x = np.array([[1, np.nan], [2, 3]], dtype=np.float32)
    for op in ("reduceSum", "reduceMax", "reduceMin", "reduceMean", "reduceL2", "reduceLogSumExp"):
        got = run(reduce(op, {"axes": [1]}), {"x": x})
        assert np.isnan(got[0]) and not np.isnan(got[1]), op


def test_reduce_mean_and_l2_hand_computed():
    x = np.array([[3, -4], [1, 1]], dtype=np.float16)
    assert run(reduce("reduceL2", {"axes": [1]}), {"x": x}).tolist() == [5, np.float16(math.sqrt(2))]
    assert run(reduce("reduceMean", {}), {"x": x}).tolist() == 0.25
    assert run(reduce("reduceL1", {"axes": [0], "keepDimensions": True}), {"x": x}).tolist() == [[4, 5]]


# -- argMin / argMax --

def arg_reference(op, x, axis, keep, out_dtype):
    pick = min if op == "argMin" else max
    groups = rows(x, [axis])
    # Ties resolve to the first index (this implementation's choice, see reduction.py).
    values = [row.index(pick(row)) for row in groups]
    return np.array(values, dtype=out_dtype).reshape(output_shape(x.shape, [axis], keep))


@pytest.mark.parametrize("out_type", ["int32", "int64"])
@pytest.mark.parametrize("op", ["argMin", "argMax"])
@pytest.mark.parametrize("dtype", ALL_TYPES, ids=name)
def test_arg_min_max(dtype, op, out_type, rng):
    shape = (3, 4, 5)
    if np.dtype(dtype).kind == "f":
        x = random_array(shape, dtype, rng, -4, 4).round()      # rounding creates ties
    else:
        x = random_array(shape, dtype, rng, -4, 4)
        info = np.iinfo(dtype)
        x[0, 0, :2] = [info.max, info.min]
    for axis in range(3):
        for keep in (False, True):
            options = {"keepDimensions": keep, "outputDataType": out_type}
            got = run(lambda builder, o: getattr(builder, op)(o["x"], axis, options), {"x": x})
            assert got.dtype == np.dtype(out_type)
            assert_close(got, arg_reference(op, x, axis, keep, out_type), what=f"{op} axis {axis}")
    if np.dtype(dtype) in (np.float32, np.float16, np.int32, np.int64, np.int8, np.uint8):
        # torch as a second reference where values are distinct along the axis.
        distinct = np.stack([rng.permutation(5) for _ in range(12)]).reshape(3, 4, 5).astype(dtype)
        got = run(lambda builder, o: getattr(builder, op)(o["x"], 2), {"x": distinct})
        ref = getattr(torch, op.lower())(torch.from_numpy(distinct), dim=2).numpy()
        assert_close(got, ref.astype(np.int32))


def test_arg_defaults_rank_one_and_ties():
    x = np.array([3, 1, 3, 1], dtype=np.float32)
    got = run(lambda builder, o: builder.argMax(o["x"], 0), {"x": x})
    assert got.dtype == np.int32 and got.shape == () and got.item() == 0
    got = run(lambda builder, o: builder.argMin(o["x"], 0, {"keepDimensions": True}), {"x": x})
    assert got.shape == (1,) and got.tolist() == [1]


def test_arg_nan_is_extreme():
    x = np.array([[1, np.nan, 5], [2, 0, 1]], dtype=np.float32)
    assert run(lambda builder, o: builder.argMax(o["x"], 1), {"x": x}).tolist() == [1, 0]
    assert run(lambda builder, o: builder.argMin(o["x"], 1), {"x": x}).tolist() == [1, 1]


# -- cumulativeSum --

def cumsum_reference(x, axis, exclusive, reverse):
    """Prefix sums written out: Python ints (wrapped) or float64 sums."""
    moved = np.moveaxis(x, axis, -1)
    out = []
    for row in moved.reshape(-1, x.shape[axis]):
        values = [v.item() for v in row]
        if reverse:
            values = values[::-1]
        sums, running = [], 0
        for v in values:
            if exclusive:
                sums.append(running)
                running += v
            else:
                running += v
                sums.append(running)
        out.append(sums[::-1] if reverse else sums)
    if x.dtype.kind == "f":
        result = np.array(out, dtype=np.float64)
    else:
        result = np.array([[wrap(v, x.dtype) for v in r] for r in out], dtype=object).astype(x.dtype)
    return np.moveaxis(result.reshape(moved.shape), -1, axis)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("dtype", NUMERIC, ids=name)
def test_cumulative_sum(dtype, exclusive, reverse, rng):
    shape = (3, 4, 5)
    x = random_array(shape, dtype, rng, -50, 50)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        x[0, 0, :] = info.max        # runs past the maximum: wraps
    for axis in range(3):
        options = {"exclusive": exclusive, "reversed": reverse}
        got = run(lambda builder, o: builder.cumulativeSum(o["x"], axis, options), {"x": x})
        assert got.dtype == np.dtype(dtype) and got.shape == shape
        expected = cumsum_reference(x, axis, exclusive, reverse)
        if np.dtype(dtype).kind == "f":
            n = shape[axis]
            atol = (n + 2) * float(np.finfo(np.float32).eps) * float(np.abs(x.astype(np.float64)).sum(axis).max())
            if np.dtype(dtype) == np.float16:
                atol += float(np.spacing(np.abs(expected).max().astype(np.float16)))
            assert_close(got, expected, atol=atol, what=f"axis {axis}")
            torch_ref = torch.from_numpy(x.astype(np.float64))
            if reverse:
                torch_ref = torch.flip(torch.cumsum(torch.flip(torch_ref, [axis]), axis), [axis])
            else:
                torch_ref = torch.cumsum(torch_ref, axis)
            if exclusive:
                torch_ref = torch_ref - torch.from_numpy(x.astype(np.float64))
            assert_close(got, torch_ref.numpy(), atol=atol * 2, what=f"axis {axis} vs torch")
        else:
            assert_close(got, expected, what=f"axis {axis}")


def test_cumulative_sum_spec_examples():
    x = np.array([1, 2, 3, 4], dtype=np.int32)
    for options, want in [({}, [1, 3, 6, 10]), ({"exclusive": True}, [0, 1, 3, 6]),
                          ({"reversed": True}, [10, 9, 7, 4]), ({"exclusive": True, "reversed": True}, [9, 7, 4, 0])]:
        assert run(lambda builder, o: builder.cumulativeSum(o["x"], 0, options), {"x": x}).tolist() == want


# -- op support limits --

def support_limits():
    async def limits():
        context = await webnn_py.ml.createContext()
        return context.opSupportLimits()
    return asyncio.run(limits())


def test_op_support_limits():
    limits = support_limits()
    for op, types in REDUCTION_TYPES.items():
        assert set(limits[op]) == {"input", "output"}
        assert set(limits[op]["input"]["dataTypes"]) == {name(d) for d in types}, op
    for op in ("argMin", "argMax"):
        assert set(limits[op]["input"]["dataTypes"]) == {name(d) for d in ALL_TYPES}
        assert limits[op]["input"]["rankRange"]["min"] == 1
        assert set(limits[op]["output"]["dataTypes"]) == {"int32", "int64"}
    assert set(limits["cumulativeSum"]["input"]["dataTypes"]) == {name(d) for d in NUMERIC}
    assert limits["cumulativeSum"]["input"]["rankRange"]["min"] == 1


# -- validation: every TypeError of the build steps --

def builder_with(**descs):
    context = asyncio.run(webnn_py.ml.createContext())
    builder = webnn_py.MLGraphBuilder(context)
    return builder, {k: builder.input(k, {"dataType": t, "shape": list(s)}) for k, (t, s) in descs.items()}


DISALLOWED = [(op, t) for op, types in REDUCTION_TYPES.items()
              for t in sorted({name(d) for d in ALL_TYPES} - {name(d) for d in types})]


@pytest.mark.parametrize("op, dtype", DISALLOWED)
def test_reduction_disallowed_type(op, dtype):
    builder, x = builder_with(x=(dtype, [2, 3]))
    with pytest.raises(TypeError, match=rf"^\[r\] {op}: input has data type {dtype}; allowed: "):
        getattr(builder, op)(x["x"], {"label": "r"})


@pytest.mark.parametrize("op", list(REDUCTION_TYPES))
def test_reduction_axis_out_of_range(op):
    builder, x = builder_with(x=("float32", [2, 3]))
    with pytest.raises(TypeError, match=rf"^{op}: axis 2 is out of range for rank 2"):
        getattr(builder, op)(x["x"], {"axes": [0, 2]})
    with pytest.raises(TypeError, match=rf"^{op}: axis 0 is out of range for rank 0"):
        getattr(builder, op)(builder.input("s", {"dataType": "float32", "shape": []}), {"axes": [0]})


@pytest.mark.parametrize("op", list(REDUCTION_TYPES))
def test_reduction_duplicate_axes(op):
    builder, x = builder_with(x=("float32", [2, 3]))
    with pytest.raises(TypeError, match=rf"^\[d\] {op}: axes \[1, 1\] contain duplicate values"):
        getattr(builder, op)(x["x"], {"axes": [1, 1], "label": "d"})


@pytest.mark.parametrize("op", list(REDUCTION_TYPES) + ["argMin", "argMax", "cumulativeSum"])
def test_operand_from_another_builder(op):
    builder, _ = builder_with()
    other, y = builder_with(x=("float32", [2, 3]))
    args = [y["x"], 0, {}] if op in ("argMin", "argMax", "cumulativeSum") else [y["x"]]
    with pytest.raises(TypeError, match=rf"^{op}: an operand was created by another MLGraphBuilder"):
        getattr(builder, op)(*args)


def test_negative_axes_are_rejected_by_webidl():
    builder, x = builder_with(x=("float32", [2, 3]))
    with pytest.raises(TypeError):
        builder.reduceSum(x["x"], {"axes": [-1]})
    with pytest.raises(TypeError):
        builder.argMax(x["x"], -1)


@pytest.mark.parametrize("op", ["argMin", "argMax"])
def test_arg_axis_out_of_range(op):
    builder, x = builder_with(x=("int8", [2, 3]), s=("float32", []))
    with pytest.raises(TypeError, match=rf"^\[a\] {op}: axis 2 is out of range for rank 2"):
        getattr(builder, op)(x["x"], 2, {"label": "a"})
    # A scalar has no axis at all (the table's rank 1 to N).
    with pytest.raises(TypeError, match=rf"^{op}: axis 0 is out of range for rank 0"):
        getattr(builder, op)(x["s"], 0)


@pytest.mark.parametrize("out_type", ["float32", "float16", "uint32", "uint64", "int8", "uint8"])
@pytest.mark.parametrize("op", ["argMin", "argMax"])
def test_arg_output_data_type(op, out_type):
    builder, x = builder_with(x=("float32", [2, 3]))
    with pytest.raises(TypeError, match=rf"^{op}: outputDataType {out_type} is not allowed; allowed: int32, int64"):
        getattr(builder, op)(x["x"], 1, {"outputDataType": out_type})


def test_arg_dimension_bound_holds_for_largest_valid_dimension():
    """Step 6 (shape[axis] above the output type's maximum) cannot fail for a
    valid descriptor: the largest valid dimension, 2**31 - 1, fits int32."""
    builder, x = builder_with(x=("uint8", [2**31 - 1]))
    assert builder.argMax(x["x"], 0).shape == []


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_cumulative_sum_disallowed_type(dtype):
    builder, x = builder_with(x=(dtype, [4]))
    with pytest.raises(TypeError, match=rf"^\[c\] cumulativeSum: input has data type {dtype}; allowed: "):
        builder.cumulativeSum(x["x"], 0, {"label": "c"})


def test_cumulative_sum_rank_and_axis():
    builder, x = builder_with(x=("float32", [2, 3]), s=("float32", []))
    with pytest.raises(TypeError, match=r"^cumulativeSum: axis 2 is out of range for rank 2"):
        builder.cumulativeSum(x["x"], 2)
    with pytest.raises(TypeError, match=r"^cumulativeSum: input has rank 0 .*allowed: 1 to 8"):
        builder.cumulativeSum(x["s"], 0)
