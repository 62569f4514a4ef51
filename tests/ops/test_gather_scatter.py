"""gather, gatherElements, gatherND, scatterElements, scatterND (§8.9.20-22,
§8.9.44-45) for every data type and every indices type, against torch
(index_select, gather, advanced indexing, scatter, index_put) run on the same
bit patterns; index normalisation for the reference (negative indices count
from the end, out-of-range ones clamp) is done with Python integers.
"""
import asyncio

import numpy as np
import pytest

import webnn_py
from webnn_py import MLGraphBuilder

from .conftest import (ALL_TYPES, TYPE_IDS, assert_bits, builder_and_operands, random_bits, run,
                       torch, torch_bits)
def build_only(fn, **descs):
    """Call fn(builder, operands) on graph inputs with the given (dataType, shape)s."""
    return fn(*builder_and_operands(**descs))


INDEX_TYPES = [np.int32, np.uint32, np.int64]


@pytest.fixture
def rng():
    return np.random.default_rng(8_9_20)


def py_normalize(index, size):
    """One index as the spec allows it: clamped into [-size, size - 1], negatives from the end."""
    index = min(max(int(index), -size), size - 1)
    return index + size if index < 0 else index


def normalized(indices, sizes):
    """int64 indices normalised element by element; `sizes` broadcasts against indices."""
    sizes = np.broadcast_to(np.asarray(sizes), indices.shape)
    return np.array([py_normalize(i, s) for i, s in zip(indices.ravel(), sizes.ravel())],
                    dtype=np.int64).reshape(indices.shape)


def random_indices(shape, size, index_type, rng, negative=True):
    """Valid indices for a dimension of `size`: [-size, size) for signed types, [0, size) for uint32."""
    low = -size if negative and np.dtype(index_type).kind == "i" else 0
    return rng.integers(low, size, size=shape).astype(index_type)


def long_tensor(array):
    return torch.from_numpy(np.array(array, dtype=np.int64, order="C"))


# -- gather --------------------------------------------------------------------------------------

def gather_ref(x, indices, axis):
    flat = long_tensor(normalized(indices, x.shape[axis]).reshape(-1))
    shape = x.shape[:axis] + indices.shape + x.shape[axis + 1:]
    return torch_bits(lambda t: torch.index_select(t, axis, flat).reshape(shape), x)


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("index_type", INDEX_TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("shape,indices_shape,axis", [((4, 3), (2,), 0), ((4, 3), (2, 2), 1), ((2, 5, 3), (), 1),
                                                      ((2, 5, 3), (3, 1, 2), 2), ((6,), (4,), 0), ((5,), (), 0)])
def test_gather(dtype, index_type, shape, indices_shape, axis, rng):
    x = random_bits(shape, dtype, rng)
    indices = random_indices(indices_shape, shape[axis], index_type, rng)
    options = {"axis": axis} if axis else {}
    got = run(lambda builder, o: builder.gather(o["x"], o["i"], options), {"x": x}, {"i": indices})
    assert_bits(got, gather_ref(x, indices, axis), f"gather {shape} {indices_shape} axis {axis}")


@pytest.mark.parametrize("index_type", INDEX_TYPES, ids=TYPE_IDS)
def test_gather_out_of_range_indices_clamp(index_type):
    x = np.array([10, 11, 12, 13], np.int32)
    info = np.iinfo(index_type)
    if np.dtype(index_type).kind == "i":
        raw = [-1, -4, -5, info.min, 4, info.max, 2]
        expected = [13, 10, 10, 10, 13, 13, 12]
    else:
        raw = [4, 5, info.max, 2**31, 0]
        expected = [13, 13, 13, 13, 10]
    indices = np.array(raw, index_type)
    # As graph input (run-time values) and as constant.
    got = run(lambda builder, o: builder.gather(o["x"], o["i"]), {"x": x, "i": indices})
    assert got.tolist() == expected
    got = run(lambda builder, o: builder.gather(o["x"], o["i"]), {"x": x}, {"i": indices})
    assert got.tolist() == expected


def test_gather_spec_examples():
    x = np.array([[0, 1, 2], [10, 11, 12], [20, 21, 22], [30, 31, 32]], np.float32)

    def gather(indices, options=None):
        return run(lambda builder, o: builder.gather(o["x"], o["i"], options or {}), {"x": x},
                   {"i": np.array(indices, np.uint32)}).tolist()
    assert gather([3, 1]) == [[30, 31, 32], [10, 11, 12]]
    assert gather([2, 1, 1], {"axis": 1}) == [[2, 1, 1], [12, 11, 11], [22, 21, 21], [32, 31, 31]]
    assert gather([[0, 1], [1, 2]], {"axis": 1}) == [[[0, 1], [1, 2]], [[10, 11], [11, 12]],
                                                     [[20, 21], [21, 22]], [[30, 31], [31, 32]]]


# -- gatherElements ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("index_type", INDEX_TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("shape,indices_shape,axis", [((4, 3), (2, 3), 0), ((4, 3), (4, 5), 1), ((5,), (7,), 0),
                                                      ((2, 4, 3), (2, 4, 1), 2), ((3, 4, 2), (3, 2, 2), 1)])
def test_gather_elements(dtype, index_type, shape, indices_shape, axis, rng):
    x = random_bits(shape, dtype, rng)
    indices = random_indices(indices_shape, shape[axis], index_type, rng)
    options = {"axis": axis} if axis else {}
    got = run(lambda builder, o: builder.gatherElements(o["x"], o["i"], options), {"x": x}, {"i": indices})
    index = long_tensor(normalized(indices, shape[axis]))
    assert_bits(got, torch_bits(lambda t: torch.gather(t, axis, index), x))


def test_gather_elements_out_of_range_clamps():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.uint8)
    indices = np.array([[-4, 3, -1], [9, -2, 0]], np.int64)
    got = run(lambda builder, o: builder.gatherElements(o["x"], o["i"], {"axis": 1}), {"x": x, "i": indices})
    assert got.tolist() == [[1, 3, 3], [6, 5, 4]]


def test_gather_elements_spec_examples():
    x = np.array([[0, 1, 2], [10, 11, 12], [20, 21, 22], [30, 31, 32]], np.float32)
    got = run(lambda builder, o: builder.gatherElements(o["x"], o["i"]), {"x": x},
              {"i": np.array([[3, 1, 1], [2, 0, 3]], np.uint32)})
    assert got.tolist() == [[30, 11, 12], [20, 1, 32]]
    got = run(lambda builder, o: builder.gatherElements(o["x"], o["i"], {"axis": 1}), {"x": x},
              {"i": np.array([[2], [1], [0], [2]], np.uint32)})
    assert got.tolist() == [[2], [11], [20], [32]]
    x3 = np.array([0, 1, 10, 11, 100, 101, 110, 111, 200, 201, 210, 211, 300, 301, 310, 311], np.float32).reshape(4, 2, 2)
    got = run(lambda builder, o: builder.gatherElements(o["x"], o["i"]), {"x": x3},
              {"i": np.array([0, 2, 1, 3], np.uint32).reshape(1, 2, 2)})
    assert got.tolist() == [[[0, 201], [110, 311]]]


# -- gatherND ------------------------------------------------------------------------------------

def gather_nd_ref(x, indices):
    k = indices.shape[-1]
    coords = normalized(indices, np.array(x.shape[:k]))
    index = tuple(long_tensor(coords[..., j]) for j in range(k))
    return torch_bits(lambda t: t[index], x)


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("index_type", INDEX_TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("shape,indices_shape", [((2, 2), (3, 2)), ((3, 2), (2, 1)), ((2, 3, 4), (2, 2)),
                                                 ((2, 3, 4), (4, 1, 3)), ((2, 3, 4), (3,)), ((5,), (1,)),
                                                 ((3, 4), (2, 3, 1))])
def test_gather_nd(dtype, index_type, shape, indices_shape, rng):
    x = random_bits(shape, dtype, rng)
    k = indices_shape[-1]
    indices = np.stack([random_indices(indices_shape[:-1], shape[j], index_type, rng) for j in range(k)], axis=-1)
    got = run(lambda builder, o: builder.gatherND(o["x"], o["i"]), {"x": x}, {"i": indices})
    assert_bits(got, gather_nd_ref(x, indices), f"gatherND {shape} {indices_shape}")


def test_gather_nd_out_of_range_clamps():
    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    indices = np.array([[5, -1], [-9, 7], [-1, -3]], np.int32)
    got = run(lambda builder, o: builder.gatherND(o["x"], o["i"]), {"x": x, "i": indices})
    assert got.tolist() == [5, 2, 3]


def test_gather_nd_spec_examples():
    x2 = np.array([[0, 1], [2, 3]], np.float32)
    x3 = np.arange(8, dtype=np.float32).reshape(2, 2, 2)

    def gather_nd(x, indices):
        return run(lambda builder, o: builder.gatherND(o["x"], o["i"]), {"x": x},
                   {"i": np.array(indices, np.uint32)}).tolist()
    assert gather_nd(x2, [[0, 0], [1, 1], [1, 0]]) == [0, 3, 2]
    assert gather_nd(x2, [[1], [0]]) == [[2, 3], [0, 1]]
    assert gather_nd(x3, [[0, 1], [1, 0]]) == [[2, 3], [4, 5]]
    assert gather_nd(x3, [[1], [0], [1]]) == [[[4, 5], [6, 7]], [[0, 1], [2, 3]], [[4, 5], [6, 7]]]
    assert gather_nd(x3, [[0, 0, 1], [0, 1, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1]]) == [1, 2, 4, 6, 7]


# -- scatterElements -----------------------------------------------------------------------------

def unique_indices_along(indices_shape, size, axis, index_type, rng, negative=True):
    """Indices that never repeat along `axis` (so the result is defined without
    relying on the duplicate rule), some of them negative."""
    keys = rng.random(indices_shape[:axis] + (size,) + indices_shape[axis + 1:])
    chosen = np.take(np.argsort(keys, axis=axis), np.arange(indices_shape[axis]), axis=axis)
    if negative and np.dtype(index_type).kind == "i":
        chosen = np.where(rng.random(chosen.shape) < 0.5, chosen - size, chosen)
    return chosen.astype(index_type)


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("index_type", INDEX_TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("shape,indices_shape,axis", [((4, 3), (2, 3), 0), ((4, 3), (4, 2), 1), ((6,), (4,), 0),
                                                      ((2, 4, 3), (2, 4, 3), 2), ((3, 5, 2), (3, 1, 2), 1)])
def test_scatter_elements(dtype, index_type, shape, indices_shape, axis, rng):
    x = random_bits(shape, dtype, rng)
    updates = random_bits(indices_shape, dtype, rng)
    indices = unique_indices_along(indices_shape, shape[axis], axis, index_type, rng)
    options = {"axis": axis} if axis else {}
    got = run(lambda builder, o: builder.scatterElements(o["x"], o["i"], o["u"], options),
              {"x": x, "u": updates}, {"i": indices})
    index = long_tensor(normalized(indices, shape[axis]))
    assert_bits(got, torch_bits(lambda t, u: torch.scatter(t, axis, index, u), x, updates))


def test_scatter_elements_duplicates_last_update_wins():
    x = np.zeros((2, 3), np.int32)
    indices = np.array([[1, 1, 1], [0, 2, -1]], np.int32)          # row 1: -1 and 2 address the same element
    updates = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    got = run(lambda builder, o: builder.scatterElements(o["x"], o["i"], o["u"], {"axis": 1}),
              {"x": x, "i": indices, "u": updates})
    assert got.tolist() == [[0, 3, 0], [4, 0, 6]]
    got = run(lambda builder, o: builder.scatterElements(o["x"], o["i"], o["u"]),
              {"x": x, "i": np.array([[1, 1, 1], [1, 0, 1]], np.uint32), "u": updates})
    assert got.tolist() == [[0, 5, 0], [4, 2, 6]]


def test_scatter_elements_out_of_range_clamps():
    x = np.zeros(4, np.float16)
    indices = np.array([-7, 9], np.int64)
    updates = np.array([1.5, 2.5], np.float16)
    got = run(lambda builder, o: builder.scatterElements(o["x"], o["i"], o["u"]), {"x": x, "i": indices, "u": updates})
    assert got.tolist() == [1.5, 0, 0, 2.5]


def test_scatter_elements_spec_examples():
    x = np.array([[0, 1, 2], [10, 11, 12], [20, 21, 22], [30, 31, 32]], np.float32)

    def scatter(indices, updates, options=None):
        return run(lambda builder, o: builder.scatterElements(o["x"], o["i"], o["u"], options or {}), {"x": x},
                   {"i": np.array(indices, np.uint32), "u": np.array(updates, np.float32)}).tolist()
    assert scatter([[3, 1, 1], [2, 0, 3]], [[-1, -2, -3], [-4, -5, -6]]) == \
        [[0, -5, 2], [10, -2, -3], [-4, 21, 22], [-1, 31, -6]]
    assert scatter([[2], [1], [0], [2]], [[-1], [-2], [-3], [-4]], {"axis": 1}) == \
        [[0, 1, -1], [10, -2, 12], [-3, 21, 22], [30, 31, -4]]


# -- scatterND -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("index_type", INDEX_TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("shape,indices_shape", [((8,), (4, 1)), ((2, 2), (2, 2)), ((3, 2), (2, 1)),
                                                 ((2, 3, 4), (2, 2)), ((2, 3, 4), (3, 2, 3)), ((4, 3), (1,))])
def test_scatter_nd(dtype, index_type, shape, indices_shape, rng):
    x = random_bits(shape, dtype, rng)
    k = indices_shape[-1]
    count = int(np.prod(indices_shape[:-1], dtype=np.int64))
    # Distinct coordinate tuples (the duplicate rule is tested separately), half of them negative.
    flat = rng.permutation(int(np.prod(shape[:k])))[:count]
    coords = np.stack(np.unravel_index(flat, shape[:k]), axis=-1).reshape(indices_shape)
    if np.dtype(index_type).kind == "i":
        coords = np.where(rng.random(coords.shape) < 0.5, coords - np.array(shape[:k]), coords)
    indices = coords.astype(index_type)
    updates = random_bits(indices_shape[:-1] + shape[k:], dtype, rng)
    got = run(lambda builder, o: builder.scatterND(o["x"], o["i"], o["u"]), {"x": x, "u": updates}, {"i": indices})
    positive = normalized(indices, np.array(shape[:k]))
    index = tuple(long_tensor(positive[..., j]) for j in range(k))
    expected = torch_bits(lambda t, u: t.clone().index_put_(index, u), x, updates)
    assert_bits(got, expected, f"scatterND {shape} {indices_shape}")


def test_scatter_nd_duplicates_last_update_wins():
    x = np.zeros((3, 2), np.int8)
    indices = np.array([[2], [0], [-1], [5]], np.int64)   # -1 and 5 (clamped) both address row 2
    updates = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], np.int8)
    got = run(lambda builder, o: builder.scatterND(o["x"], o["i"], o["u"]), {"x": x, "i": indices, "u": updates})
    assert got.tolist() == [[3, 4], [0, 0], [7, 8]]


def test_scatter_nd_spec_examples():
    def scatter_nd(x, indices, updates):
        return run(lambda builder, o: builder.scatterND(o["x"], o["i"], o["u"]), {"x": np.array(x, np.float32)},
                   {"i": np.array(indices, np.uint32), "u": np.array(updates, np.float32)}).tolist()
    assert scatter_nd(np.arange(8), [[4], [3], [1], [7]], [-1, -2, -3, -4]) == [0, -3, 2, -2, -1, 5, 6, -4]
    assert scatter_nd([[0, 1], [2, 3]], [[0, 0], [1, 1]], [-1, -2]) == [[-1, 1], [2, -2]]
    assert scatter_nd([[0, 1], [2, 3], [4, 5]], [[2], [0]], [[-1, -2], [-3, -4]]) == [[-3, -4], [2, 3], [-1, -2]]
    assert scatter_nd(np.arange(8).reshape(2, 2, 2), [[0, 1], [1, 0]], [[-1, -2], [-3, -4]]) == \
        [[[0, 1], [-1, -2]], [[-3, -4], [6, 7]]]


def test_scatter_does_not_modify_its_input():
    # The input operand feeds two operators; scattering must work on a copy.
    x = np.arange(4, dtype=np.float32)
    got = run(lambda builder, o: [builder.scatterND(o["x"], o["i"], o["u"]), builder.reshape(o["x"], [4])],
              {"x": x}, {"i": np.array([[1]], np.int32), "u": np.array([9], np.float32)})
    assert got[0].tolist() == [0, 9, 2, 3]
    assert got[1].tolist() == [0, 1, 2, 3]


# -- opSupportLimits -----------------------------------------------------------------------------

def test_op_support_limits():
    async def limits():
        context = await webnn_py.ml.createContext()
        return context.opSupportLimits()
    limits = asyncio.run(limits())
    for op in ["gather", "gatherElements", "gatherND"]:
        assert set(limits[op]) == {"input", "indices", "output"}
        assert sorted(limits[op]["indices"]["dataTypes"]) == ["int32", "int64", "uint32"]
        assert len(limits[op]["input"]["dataTypes"]) == 8
        assert limits[op]["input"]["rankRange"]["min"] == 1
    for op in ["scatterElements", "scatterND"]:
        assert set(limits[op]) == {"input", "indices", "updates", "output"}
        assert sorted(limits[op]["indices"]["dataTypes"]) == ["int32", "int64", "uint32"]
    assert limits["gatherND"]["indices"]["rankRange"]["min"] == 1
    assert limits["gather"]["indices"]["rankRange"]["min"] == 0


# -- validation: every TypeError step ------------------------------------------------------------

F, I = "float32", "int32"
INVALID = [
    ("gather", lambda b, x: b.gather(x["a"], x["i"]), {"a": (F, [3]), "i": (F, [2])},
     r"gather: indices has data type float32; allowed: int32, uint32, int64"),
    ("gather", lambda b, x: b.gather(x["a"], x["i"]), {"a": (F, [3]), "i": ("uint64", [2])}, r"gather: indices has data type uint64"),
    ("gather", lambda b, x: b.gather(x["a"], x["i"]), {"a": (F, []), "i": (I, [2])}, r"gather: input has rank 0"),
    ("gather", lambda b, x: b.gather(x["a"], x["i"], {"axis": 2}), {"a": (F, [3, 2]), "i": (I, [2])},
     r"gather: axis 2 is out of range for rank 2"),
    ("gather", lambda b, x: b.gather(x["a"], x["i"]), {"a": (F, [2] * 8), "i": (I, [2] * 2)},
     r"gather: output shape .* is not supported: rank 9"),
    ("gatherElements", lambda b, x: b.gatherElements(x["a"], x["i"]), {"a": (F, [3]), "i": ("int8", [2])},
     r"gatherElements: indices has data type int8"),
    ("gatherElements", lambda b, x: b.gatherElements(x["a"], x["i"]), {"a": (F, []), "i": (I, [])},
     r"gatherElements: input has rank 0"),
    ("gatherElements", lambda b, x: b.gatherElements(x["a"], x["i"]), {"a": (F, [3, 2]), "i": (I, [2])},
     r"gatherElements: indices has rank 1; it must equal the input's rank 2"),
    ("gatherElements", lambda b, x: b.gatherElements(x["a"], x["i"], {"axis": 2}), {"a": (F, [3, 2]), "i": (I, [3, 2])},
     r"gatherElements: axis 2 is out of range for rank 2"),
    ("gatherElements", lambda b, x: b.gatherElements(x["a"], x["i"]), {"a": (F, [3, 2]), "i": (I, [3, 3])},
     r"gatherElements: indices shape \[3, 3\] must equal the input shape \[3, 2\] except along axis 0"),
    ("gatherND", lambda b, x: b.gatherND(x["a"], x["i"]), {"a": (F, [3]), "i": ("float16", [1])},
     r"gatherND: indices has data type float16"),
    ("gatherND", lambda b, x: b.gatherND(x["a"], x["i"]), {"a": (F, []), "i": (I, [1])}, r"gatherND: input has rank 0"),
    ("gatherND", lambda b, x: b.gatherND(x["a"], x["i"]), {"a": (F, [3]), "i": (I, [])}, r"gatherND: indices has rank 0"),
    ("gatherND", lambda b, x: b.gatherND(x["a"], x["i"]), {"a": (F, [3, 2]), "i": (I, [4, 3])},
     r"gatherND: indices' last dimension 3 exceeds the input's rank 2"),
    ("gatherND", lambda b, x: b.gatherND(x["a"], x["i"]), {"a": (F, [2] * 8), "i": (I, [2] * 7 + [1])},
     r"gatherND: output shape .* is not supported: rank 14"),
    ("scatterElements", lambda b, x: b.scatterElements(x["a"], x["i"], x["u"]),
     {"a": (F, [3]), "i": ("uint8", [3]), "u": (F, [3])}, r"scatterElements: indices has data type uint8"),
    ("scatterElements", lambda b, x: b.scatterElements(x["a"], x["i"], x["u"]),
     {"a": (F, [3]), "i": (I, [3]), "u": ("float16", [3])},
     r"scatterElements: updates's data type float16 differs from input's float32"),
    ("scatterElements", lambda b, x: b.scatterElements(x["a"], x["i"], x["u"]),
     {"a": (F, []), "i": (I, []), "u": (F, [])}, r"scatterElements: input has rank 0"),
    ("scatterElements", lambda b, x: b.scatterElements(x["a"], x["i"], x["u"]),
     {"a": (F, [3, 2]), "i": (I, [3, 2]), "u": (F, [6])}, r"scatterElements: updates has rank 1; it must equal the input's rank 2"),
    ("scatterElements", lambda b, x: b.scatterElements(x["a"], x["i"], x["u"]),
     {"a": (F, [3, 2]), "i": (I, [6]), "u": (F, [3, 2])}, r"scatterElements: indices has rank 1; it must equal the input's rank 2"),
    ("scatterElements", lambda b, x: b.scatterElements(x["a"], x["i"], x["u"], {"axis": 2}),
     {"a": (F, [3, 2]), "i": (I, [3, 2]), "u": (F, [3, 2])}, r"scatterElements: axis 2 is out of range for rank 2"),
    ("scatterElements", lambda b, x: b.scatterElements(x["a"], x["i"], x["u"], {"axis": 1}),
     {"a": (F, [3, 2]), "i": (I, [2, 2]), "u": (F, [2, 2])},
     r"scatterElements: indices shape \[2, 2\] must equal the input shape \[3, 2\] except along axis 1"),
    ("scatterElements", lambda b, x: b.scatterElements(x["a"], x["i"], x["u"]),
     {"a": (F, [3, 2]), "i": (I, [2, 2]), "u": (F, [1, 2])},
     r"scatterElements: updates shape \[1, 2\] differs from indices shape \[2, 2\]"),
    ("scatterND", lambda b, x: b.scatterND(x["a"], x["i"], x["u"]),
     {"a": (F, [3]), "i": ("uint64", [1, 1]), "u": (F, [1])}, r"scatterND: indices has data type uint64"),
    ("scatterND", lambda b, x: b.scatterND(x["a"], x["i"], x["u"]),
     {"a": (F, [3]), "i": (I, [1, 1]), "u": (I, [1])}, r"scatterND: updates's data type int32 differs from input's float32"),
    ("scatterND", lambda b, x: b.scatterND(x["a"], x["i"], x["u"]),
     {"a": (F, []), "i": (I, [1, 1]), "u": (F, [1])}, r"scatterND: input has rank 0"),
    ("scatterND", lambda b, x: b.scatterND(x["a"], x["i"], x["u"]),
     {"a": (F, [3]), "i": (I, []), "u": (F, [])}, r"scatterND: indices has rank 0"),
    ("scatterND", lambda b, x: b.scatterND(x["a"], x["i"], x["u"]),
     {"a": (F, [3, 2]), "i": (I, [1, 3]), "u": (F, [1])}, r"scatterND: indices' last dimension 3 exceeds the input's rank 2"),
    ("scatterND", lambda b, x: b.scatterND(x["a"], x["i"], x["u"]),
     {"a": (F, [3, 2]), "i": (I, [4, 1]), "u": (F, [4])},
     r"scatterND: updates shape \[4\] must be indices.shape\[:-1\] \+ input.shape\[1:\] = \[4, 2\]"),
]


@pytest.mark.parametrize("op,fn,inputs,message", INVALID, ids=[f"{c[0]}-{i}" for i, c in enumerate(INVALID)])
def test_invalid_arguments_throw_type_error(op, fn, inputs, message):
    with pytest.raises(TypeError, match=message):
        build_only(fn, **inputs)


@pytest.mark.parametrize("call", [
    lambda b, x: b.gather(x["a"], x["a"], {"label": "G"}),
    lambda b, x: b.gatherElements(x["a"], x["a"], {"label": "G"}),
    lambda b, x: b.gatherND(x["a"], x["a"], {"label": "G"}),
    lambda b, x: b.scatterElements(x["a"], x["a"], x["a"], {"label": "G"}),
    lambda b, x: b.scatterND(x["a"], x["a"], x["a"], {"label": "G"}),
])
def test_messages_name_the_label(call):
    with pytest.raises(TypeError, match=r"^\[G\] (gather|gatherElements|gatherND|scatterElements|scatterND): indices"):
        build_only(call, a=(F, [2, 3]))


def test_operand_of_another_builder_is_a_type_error():
    async def go():
        context = await webnn_py.ml.createContext()
        one, other = MLGraphBuilder(context), MLGraphBuilder(context)
        a = one.input("a", {"dataType": F, "shape": [2]})
        i = other.input("i", {"dataType": I, "shape": [1]})
        with pytest.raises(TypeError, match="gather: an operand was created by another MLGraphBuilder"):
            other.gather(a, i)
        with pytest.raises(TypeError, match="scatterND: an operand was created by another MLGraphBuilder"):
            other.scatterND(other.input("x", {"dataType": F, "shape": [2]}), i, a)
    asyncio.run(go())


def test_large_uint32_indices_do_not_wrap(rng):
    # uint32 values above 2**31 must clamp to the end, not wrap to negative indices.
    x = random_bits((3, 4), np.int64, rng)
    indices = np.array([[2**32 - 1, 0, 2**31, 1]], np.uint32)
    got = run(lambda builder, o: builder.gatherElements(o["x"], o["i"]), {"x": x, "i": indices})
    assert_bits(got, x[[2, 0, 2, 1], [0, 1, 2, 3]].reshape(1, 4))
