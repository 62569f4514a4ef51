"""concat, expand, reshape, reverse, slice, split, tile, transpose, triangular
(§8.9.9, 8.9.19, 8.9.42, 8.9.43, 8.9.47, 8.9.51, 8.9.53, 8.9.54, 8.9.55).

These operators only move elements, so every data type must round-trip
bit-exactly. Inputs are random bit patterns (every float16/float32 pattern
class: subnormals, ±0, ±inf, NaNs) and the reference is torch run on the same
bits reinterpreted as a torch integer type of the same width, compared bit for
bit. Validation tests cover every TypeError step of each method's algorithm.
"""
import asyncio

import numpy as np
import pytest

import webnn_py
from webnn_py import MLGraphBuilder

from .conftest import ALL_TYPES, TYPE_IDS, assert_bits, random_bits, run, torch, torch_bits

@pytest.fixture
def rng():
    return np.random.default_rng(8_9_9)


# -- concat --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=TYPE_IDS)
def test_concat(dtype, rng):
    a, b, c = (random_bits(s, dtype, rng) for s in [(2, 1, 3), (2, 4, 3), (2, 2, 3)])
    got = run(lambda builder, x: builder.concat([x["a"], x["b"], x["c"]], 1), {"a": a, "c": c}, {"b": b})
    assert_bits(got, torch_bits(lambda *t: torch.cat(t, 1), a, b, c), f"concat {np.dtype(dtype)}")


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_concat_each_axis_and_single_input(axis, rng):
    a = random_bits((2, 3, 4), np.float16, rng)
    b = random_bits((2, 3, 4), np.float16, rng)
    got = run(lambda builder, x: builder.concat([x["a"], x["b"], x["a"]], axis), {"a": a, "b": b})
    assert_bits(got, torch_bits(lambda p, q: torch.cat([p, q, p], axis), a, b))
    got = run(lambda builder, x: builder.concat([x["a"]], axis), {"a": a})
    assert_bits(got, a)


def test_concat_rank_1():
    a = np.array([1, 2], np.int64)
    b = np.array([3], np.int64)
    assert run(lambda builder, x: builder.concat([x["a"], x["b"]], 0), {"a": a, "b": b}).tolist() == [1, 2, 3]


# -- expand --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("shape,new_shape", [((3, 1), (2, 3, 4)), ((), (2, 2)), ((2, 3), (2, 3)),
                                             ((1, 4, 1), (5, 4, 2)), ((1,), (1,))])
def test_expand(dtype, shape, new_shape, rng):
    x = random_bits(shape, dtype, rng)
    got = run(lambda builder, o: builder.expand(o["x"], list(new_shape)), {"x": x})
    assert_bits(got, torch_bits(lambda t: t.expand(*new_shape), x), f"expand {shape}->{new_shape}")


def test_expand_to_rank_0():
    x = np.array(7, np.uint64)
    assert run(lambda builder, o: builder.expand(o["x"], []), {"x": x}).tolist() == 7


# -- reshape -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("shape,new_shape", [((2, 3, 4), (4, 6)), ((2, 3, 4), (24,)), ((1,), ()),
                                             ((), (1, 1, 1)), ((6,), (1, 2, 1, 3))])
def test_reshape(dtype, shape, new_shape, rng):
    x = random_bits(shape, dtype, rng)
    got = run(lambda builder, o: builder.reshape(o["x"], list(new_shape)), {"x": x})
    assert_bits(got, torch_bits(lambda t: t.reshape(new_shape), x))


def test_reshape_of_a_transposed_operand_uses_logical_order(rng):
    # Reshape follows the logical (row-major) element order, not a memory layout.
    x = random_bits((2, 3), np.int32, rng)
    got = run(lambda builder, o: builder.reshape(builder.transpose(o["x"]), [6]), {"x": x})
    assert_bits(got, torch_bits(lambda t: t.permute(1, 0).reshape(6), x))


# -- reverse -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("axes", [None, [0, 2], [1], []])
def test_reverse(dtype, axes, rng):
    x = random_bits((2, 3, 4), dtype, rng)
    options = {} if axes is None else {"axes": axes}
    got = run(lambda builder, o: builder.reverse(o["x"], options), {"x": x})
    flip = [0, 1, 2] if axes is None else axes
    assert_bits(got, torch_bits(lambda t: torch.flip(t, flip), x), f"reverse axes={axes}")


def test_reverse_rank_0():
    x = np.array(-3, np.int8)
    assert run(lambda builder, o: builder.reverse(o["x"]), {"x": x}).tolist() == -3


# -- slice ---------------------------------------------------------------------------------------

SLICE_CASES = [
    ((5, 6), [1, 2], [3, 4], None),
    ((5, 6), [0, 0], [5, 6], [2, 3]),
    ((5, 6), [1, 1], [4, 5], [3, 2]),
    ((4, 3, 5), [3, 0, 1], [1, 3, 4], [1, 5, 4]),   # stride larger than the size: one element
    ((7,), [2], [5], [2]),
]


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("shape,starts,sizes,strides", SLICE_CASES)
def test_slice(dtype, shape, starts, sizes, strides, rng):
    x = random_bits(shape, dtype, rng)
    options = {} if strides is None else {"strides": strides}
    got = run(lambda builder, o: builder.slice(o["x"], starts, sizes, options), {"x": x})
    steps = strides or [1] * len(shape)
    index = tuple(slice(s, s + n, st) for s, n, st in zip(starts, sizes, steps))
    assert_bits(got, torch_bits(lambda t: t[index], x), f"slice {starts} {sizes} {strides}")


def test_slice_rank_0():
    x = np.array(2.5, np.float32)
    assert run(lambda builder, o: builder.slice(o["x"], [], []), {"x": x}).tolist() == 2.5


# -- split ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("splits,axis", [(3, 1), ([1, 4, 1], 1), (2, 0), ([2], 0), (1, 2), ([3, 2], 2)])
def test_split(dtype, splits, axis, rng):
    x = random_bits((2, 6, 5), dtype, rng)
    got = run(lambda builder, o: builder.split(o["x"], splits, {"axis": axis}), {"x": x})
    # torch.split takes a chunk size, not a number of chunks.
    sizes = splits if isinstance(splits, list) else x.shape[axis] // splits
    expected = torch_bits(lambda t: torch.split(t, sizes, axis), x)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert_bits(g, e, f"split {splits} axis {axis}")


def test_split_default_axis_is_0(rng):
    x = random_bits((4, 3), np.uint32, rng)
    got = run(lambda builder, o: builder.split(o["x"], 2), {"x": x})
    assert_bits(got[0], x[:2].copy())
    assert_bits(got[1], x[2:].copy())


def test_split_returns_a_sequence_of_operands():
    async def shapes():
        context = await webnn_py.ml.createContext()
        builder = MLGraphBuilder(context)
        x = builder.input("x", {"dataType": "int8", "shape": [2, 6]})
        return [o.shape for o in builder.split(x, [1, 2, 3], {"axis": 1})]
    assert asyncio.run(shapes()) == [[2, 1], [2, 2], [2, 3]]


# -- tile ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("shape,repetitions", [((2, 3), [2, 3]), ((3,), [4]), ((1, 2, 1), [1, 1, 1]),
                                               ((2, 1, 3), [3, 2, 1]), ((), [])])
def test_tile(dtype, shape, repetitions, rng):
    x = random_bits(shape, dtype, rng)
    got = run(lambda builder, o: builder.tile(o["x"], repetitions), {"x": x})
    assert_bits(got, torch_bits(lambda t: torch.tile(t, tuple(repetitions)) if repetitions else t, x))


# -- transpose -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("shape,permutation", [((2, 3, 4), None), ((2, 3, 4), [1, 2, 0]), ((2, 3, 4), [0, 1, 2]),
                                               ((3, 5), None), ((4,), None), ((), None), ((), []),
                                               ((2, 1, 3, 2), [3, 1, 0, 2])])
def test_transpose(dtype, shape, permutation, rng):
    x = random_bits(shape, dtype, rng)
    options = {} if permutation is None else {"permutation": permutation}
    got = run(lambda builder, o: builder.transpose(o["x"], options), {"x": x})
    perm = list(range(len(shape)))[::-1] if permutation is None else permutation
    assert_bits(got, torch_bits(lambda t: t.permute(tuple(perm)), x), f"transpose {shape} {permutation}")


# -- triangular ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("upper", [None, True, False])
@pytest.mark.parametrize("diagonal", [None, 0, 1, -1, 2, -3, 7, -7, 2**31 - 1, -(2**31)])
def test_triangular(dtype, upper, diagonal, rng):
    x = random_bits((2, 3, 4), dtype, rng)
    options = {}
    if upper is not None:
        options["upper"] = upper
    if diagonal is not None:
        options["diagonal"] = diagonal
    got = run(lambda builder, o: builder.triangular(o["x"], options), {"x": x})
    fn = torch.tril if upper is False else torch.triu
    assert_bits(got, torch_bits(lambda t: fn(t, diagonal or 0), x), f"triangular {options}")


def test_triangular_zero_is_positive_zero():
    # Removed elements become +0 (all bits clear), whatever the input there was.
    x = np.full((2, 2), -0.0, np.float16)
    got = run(lambda builder, o: builder.triangular(o["x"]), {"x": x})
    assert got.view(np.uint16).tolist() == [[0x8000, 0x8000], [0, 0x8000]]


def test_triangular_spec_examples():
    x = np.array([[7, 1, 2], [9, 4, 8], [2, 6, 3]], np.float32)

    def tri(options):
        return run(lambda builder, o: builder.triangular(o["x"], options), {"x": x}).tolist()
    assert tri({}) == [[7, 1, 2], [0, 4, 8], [0, 0, 3]]
    assert tri({"diagonal": 1}) == [[0, 1, 2], [0, 0, 8], [0, 0, 0]]
    assert tri({"diagonal": -1}) == [[7, 1, 2], [9, 4, 8], [0, 6, 3]]
    assert tri({"upper": False}) == [[7, 0, 0], [9, 4, 0], [2, 6, 3]]
    assert tri({"upper": False, "diagonal": 1}) == [[7, 1, 0], [9, 4, 8], [2, 6, 3]]
    assert tri({"upper": False, "diagonal": -1}) == [[0, 0, 0], [9, 0, 0], [2, 6, 0]]


# -- opSupportLimits -----------------------------------------------------------------------------

def test_op_support_limits():
    async def limits():
        context = await webnn_py.ml.createContext()
        return context.opSupportLimits()
    limits = asyncio.run(limits())
    every = sorted(np.dtype(d).name for d in ALL_TYPES)
    for op in ["concat", "expand", "reshape", "reverse", "slice", "split", "tile", "transpose", "triangular"]:
        for operand, entry in limits[op].items():
            assert sorted(entry["dataTypes"]) == every, (op, operand)
    assert set(limits["concat"]) == {"inputs", "output"}
    assert limits["concat"]["inputs"]["rankRange"]["min"] == 1
    assert set(limits["split"]) == {"input", "outputs"}
    assert limits["split"]["input"]["rankRange"]["min"] == 1
    assert limits["triangular"]["input"]["rankRange"]["min"] == 2
    assert limits["reshape"]["input"]["rankRange"] == {"min": 0, "max": 8}


# -- validation: every TypeError step ------------------------------------------------------------

def build_only(fn, **descs):
    """Call fn(builder, operands) on graph inputs with the given (dataType, shape)s."""
    async def go():
        context = await webnn_py.ml.createContext()
        builder = MLGraphBuilder(context)
        operands = {name: builder.input(name, {"dataType": dt, "shape": list(shape)})
                    for name, (dt, shape) in descs.items()}
        return fn(builder, operands)
    return asyncio.run(go())


F = "float32"
INVALID = [
    # op, build, inputs, message
    ("concat", lambda b, x: b.concat([], 0), {}, r"concat: the number of inputs 0 is not a valid tensor count"),
    ("concat", lambda b, x: b.concat([x["a"]], 0), {"a": (F, [])}, r"concat: inputs has rank 0"),
    ("concat", lambda b, x: b.concat([x["a"], x["b"]], 2), {"a": (F, [2, 3]), "b": (F, [2, 3])},
     r"concat: axis 2 is out of range for rank 2"),
    ("concat", lambda b, x: b.concat([x["a"], x["b"]], 0), {"a": (F, [2, 3]), "b": ("float16", [2, 3])},
     r"concat: inputs\[1\]'s data type float16 differs from inputs\[0\]'s float32"),
    ("concat", lambda b, x: b.concat([x["a"], x["b"]], 0), {"a": (F, [2, 3]), "b": (F, [2, 3, 1])},
     r"concat: inputs\[1\]'s rank 3 differs"),
    ("concat", lambda b, x: b.concat([x["a"], x["b"], x["c"]], 1),
     {"a": (F, [2, 3]), "b": (F, [2, 3]), "c": (F, [3, 3])}, r"concat: inputs\[2\]'s shape \[3, 3\] differs .* dimension 0"),
    ("concat", lambda b, x: b.concat([x["a"], x["a"]], 0), {"a": ("uint8", [2**31 - 1])},
     r"concat: the concatenated size 4294967294 along axis 0 is not a valid dimension"),
    ("expand", lambda b, x: b.expand(x["a"], [2, 4]), {"a": (F, [2, 3])}, r"expand: input shape \[2, 3\] cannot be broadcast"),
    ("expand", lambda b, x: b.expand(x["a"], [3]), {"a": (F, [1, 3])}, r"expand: input shape \[1, 3\] cannot be broadcast"),
    ("expand", lambda b, x: b.expand(x["a"], [1] * 9), {"a": (F, [1])}, r"expand: the new shape's rank 9 exceeds"),
    ("expand", lambda b, x: b.expand(x["a"], [0, 3]), {"a": (F, [1, 3])}, r"expand: output shape \[0, 3\] is not supported"),
    ("expand", lambda b, x: b.expand(x["a"], [2**20, 2**20]), {"a": (F, [1, 1])}, r"expand: output shape .* element count"),
    ("reshape", lambda b, x: b.reshape(x["a"], [1] * 9), {"a": (F, [1])}, r"reshape: the new shape's rank 9 exceeds"),
    ("reshape", lambda b, x: b.reshape(x["a"], [0, 6]), {"a": (F, [2, 3])}, r"reshape: new shape \[0, 6\] has 0, which is not a valid dimension"),
    ("reshape", lambda b, x: b.reshape(x["a"], [7]), {"a": (F, [2, 3])}, r"reshape: new shape \[7\] has 7 elements; the input shape \[2, 3\] has 6"),
    ("reshape", lambda b, x: b.reshape(x["a"], []), {"a": (F, [2])}, r"reshape: new shape \[\] has 1 elements"),
    ("reverse", lambda b, x: b.reverse(x["a"], {"axes": [1, 1]}), {"a": (F, [2, 3])}, r"reverse: axes \[1, 1\] contain duplicate"),
    ("reverse", lambda b, x: b.reverse(x["a"], {"axes": [2]}), {"a": (F, [2, 3])}, r"reverse: axes item 2 is out of range for rank 2"),
    ("slice", lambda b, x: b.slice(x["a"], [0, 0], [0, 1]), {"a": (F, [2, 3])}, r"slice: sizes \[0, 1\] contain 0"),
    ("slice", lambda b, x: b.slice(x["a"], [0], [1, 1]), {"a": (F, [2, 3])}, r"slice: starts has 1 and sizes 2 items"),
    ("slice", lambda b, x: b.slice(x["a"], [0, 0], [1]), {"a": (F, [2, 3])}, r"slice: starts has 2 and sizes 1 items"),
    ("slice", lambda b, x: b.slice(x["a"], [0, 0], [1, 1], {"strides": [1]}), {"a": (F, [2, 3])},
     r"slice: strides has 1 items; it must equal the input rank 2"),
    ("slice", lambda b, x: b.slice(x["a"], [0, 0], [1, 1], {"strides": [1, 0]}), {"a": (F, [2, 3])},
     r"slice: strides\[1\] is 0; strides must be at least 1"),
    ("slice", lambda b, x: b.slice(x["a"], [3, 0], [1, 1]), {"a": (F, [2, 3])}, r"slice: starts\[0\] 3 exceeds the input dimension 2"),
    ("slice", lambda b, x: b.slice(x["a"], [0, 1], [1, 3]), {"a": (F, [2, 3])},
     r"slice: starts\[1\] \+ sizes\[1\] = 4 exceeds the input dimension 3"),
    ("slice", lambda b, x: b.slice(x["a"], [2, 0], [1, 1]), {"a": (F, [2, 3])},
     r"slice: starts\[0\] \+ sizes\[0\] = 3 exceeds the input dimension 2"),
    ("split", lambda b, x: b.split(x["a"], 1), {"a": (F, [])}, r"split: input has rank 0"),
    ("split", lambda b, x: b.split(x["a"], 1, {"axis": 2}), {"a": (F, [2, 3])}, r"split: axis 2 is out of range for rank 2"),
    ("split", lambda b, x: b.split(x["a"], 0), {"a": (F, [2, 3])}, r"split: splits 0 is not a valid tensor count"),
    ("split", lambda b, x: b.split(x["a"], 8193), {"a": (F, [8193])}, r"split: splits 8193 is not a valid tensor count"),
    ("split", lambda b, x: b.split(x["a"], 2, {"axis": 1}), {"a": (F, [2, 3])},
     r"split: the input dimension 3 along axis 1 is not divisible by splits 2"),
    ("split", lambda b, x: b.split(x["a"], []), {"a": (F, [2, 3])}, r"split: splits has 0 items, which is not a valid tensor count"),
    ("split", lambda b, x: b.split(x["a"], [2, 0]), {"a": (F, [2, 3])}, r"split: splits \[2, 0\] contain 0"),
    ("split", lambda b, x: b.split(x["a"], [1, 1], {"axis": 1}), {"a": (F, [2, 3])},
     r"split: splits \[1, 1\] sum to 2, not the input dimension 3 along axis 1"),
    ("tile", lambda b, x: b.tile(x["a"], [2]), {"a": (F, [2, 3])}, r"tile: repetitions has 1 items; it must equal the input rank 2"),
    ("tile", lambda b, x: b.tile(x["a"], [2, 0]), {"a": (F, [2, 3])}, r"tile: repetitions \[2, 0\] contain 0"),
    ("tile", lambda b, x: b.tile(x["a"], [2**16, 2**16]), {"a": (F, [2, 3])}, r"tile: output shape .* is not supported"),
    ("transpose", lambda b, x: b.transpose(x["a"], {"permutation": [0]}), {"a": (F, [2, 3])},
     r"transpose: permutation has 1 items; it must equal the input rank 2"),
    ("transpose", lambda b, x: b.transpose(x["a"], {"permutation": [0, 2]}), {"a": (F, [2, 3])},
     r"transpose: permutation item 2 is out of range for rank 2"),
    ("transpose", lambda b, x: b.transpose(x["a"], {"permutation": [1, 1]}), {"a": (F, [2, 3])},
     r"transpose: permutation \[1, 1\] contains duplicate values"),
    ("triangular", lambda b, x: b.triangular(x["a"]), {"a": (F, [3])}, r"triangular: input has rank 1 .*; allowed: 2 to 8"),
    ("triangular", lambda b, x: b.triangular(x["a"]), {"a": ("int64", [])}, r"triangular: input has rank 0"),
]


@pytest.mark.parametrize("op,fn,inputs,message", INVALID, ids=[f"{c[0]}-{i}" for i, c in enumerate(INVALID)])
def test_invalid_arguments_throw_type_error(op, fn, inputs, message):
    with pytest.raises(TypeError, match=message):
        build_only(fn, **inputs)


@pytest.mark.parametrize("call", [
    lambda b, x: b.concat([x["a"], x["a"]], 3, {"label": "L"}),
    lambda b, x: b.expand(x["a"], [3, 5], {"label": "L"}),
    lambda b, x: b.reshape(x["a"], [5], {"label": "L"}),
    lambda b, x: b.reverse(x["a"], {"axes": [5], "label": "L"}),
    lambda b, x: b.slice(x["a"], [0], [1], {"label": "L"}),
    lambda b, x: b.split(x["a"], 5, {"label": "L"}),
    lambda b, x: b.tile(x["a"], [1], {"label": "L"}),
    lambda b, x: b.transpose(x["a"], {"permutation": [0], "label": "L"}),
    lambda b, x: b.triangular(b.reshape(x["a"], [6]), {"label": "L"}),
])
def test_messages_name_the_label(call):
    with pytest.raises(TypeError, match=r"^\[L\] (concat|expand|reshape|reverse|slice|split|tile|transpose|triangular): "):
        build_only(call, a=(F, [2, 3]))


def test_operand_of_another_builder_is_a_type_error():
    async def go():
        context = await webnn_py.ml.createContext()
        one, other = MLGraphBuilder(context), MLGraphBuilder(context)
        a = one.input("a", {"dataType": F, "shape": [2]})
        b = other.input("b", {"dataType": F, "shape": [2]})
        with pytest.raises(TypeError, match="concat: an operand was created by another MLGraphBuilder"):
            other.concat([b, a], 0)
        with pytest.raises(TypeError, match="reshape: an operand was created by another MLGraphBuilder"):
            other.reshape(a, [2])
    asyncio.run(go())


def test_enforce_range_rejects_negative_axis():
    # WebIDL [EnforceRange] unsigned long: a negative axis never reaches the build step.
    with pytest.raises(TypeError):
        build_only(lambda b, x: b.concat([x["a"]], -1), a=(F, [2]))
