"""pad (§8.9.36): constant, edge and reflection for every data type and rank
(0 to 4), against a plain-Python index mapping (all types) and torch.nn.functional.pad
(floats); the constant value cast to the input type per §9.2; every TypeError."""
import asyncio
import math
import re

import numpy as np
import pytest

import webnn_py
from tests.portable.expect import assert_close

from .conftest import ALL_TYPES, FLOAT_TYPES, run, torch

F = torch.nn.functional
MODES = ["constant", "edge", "reflection"]


def name(dtype):
    return np.dtype(dtype).name


def source_index(i, size, mode):
    """Where output index i (relative to the input's start) reads from, or None for the constant."""
    if 0 <= i < size:
        return i
    if mode == "constant":
        return None
    if mode == "edge":
        return 0 if i < 0 else size - 1
    return -i if i < 0 else 2 * (size - 1) - i       # reflection: mirror without repeating the edge


def python_pad(x, begin, end, mode, value):
    out_shape = tuple(s + b + e for s, b, e in zip(x.shape, begin, end))
    out = np.empty(out_shape, dtype=object)
    for index in np.ndindex(*out_shape):
        src = [source_index(i - b, s, mode) for i, b, s in zip(index, begin, x.shape)]
        out[index] = value if None in src else x[tuple(src)].item()
    return out


def random_input(shape, dtype, rng):
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-10, 10, shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


CASES = {
    "rank1": ((5,), [2], [3]),
    "rank2": ((2, 3), [1, 2], [1, 2]),
    "rank3": ((3, 2, 4), [0, 1, 3], [2, 0, 1]),
    "rank4": ((2, 3, 3, 4), [1, 0, 2, 3], [0, 2, 1, 3]),
    "no-padding": ((2, 3), [0, 0], [0, 0]),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ALL_TYPES, ids=name)
def test_modes_every_type(dtype, mode, case, rng):
    shape, begin, end = CASES[case]
    x = random_input(shape, dtype, rng)
    value = 7 if mode == "constant" else 0
    options = {"mode": mode, "value": value} if mode == "constant" else {"mode": mode}
    got = run(lambda b, o: b.pad(o["x"], begin, end, options), {"x": x})
    expected = python_pad(x, begin, end, mode, value).astype(dtype)
    assert_close(got, expected, **({"ulp": 0} if np.dtype(dtype).kind == "f" else {}), what=f"{mode} {case}")
    assert got.dtype == dtype


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=name)
def test_against_torch(dtype, mode, rng):
    x = rng.uniform(-10, 10, (2, 3, 4, 5)).astype(dtype)
    # torch pads the last two dimensions for edge/reflection on 4-D input: (left, right, top, bottom).
    begin, end = [0, 0, 2, 3], [0, 0, 3, 1]
    options = {"mode": mode, "value": -2.5} if mode == "constant" else {"mode": mode}
    got = run(lambda b, o: b.pad(o["x"], begin, end, options), {"x": x})
    torch_mode = {"constant": "constant", "edge": "replicate", "reflection": "reflect"}[mode]
    kwargs = {"value": -2.5} if mode == "constant" else {}
    expected = F.pad(torch.from_numpy(x.astype(np.float32)), (3, 1, 2, 3), mode=torch_mode, **kwargs).numpy()
    assert_close(got, expected, ulp=0)


def test_spec_example():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    expected = {
        "constant": [[0, 0, 0, 0, 0, 0, 0], [0, 0, 1, 2, 3, 0, 0], [0, 0, 4, 5, 6, 0, 0], [0, 0, 0, 0, 0, 0, 0]],
        "edge": [[1, 1, 1, 2, 3, 3, 3], [1, 1, 1, 2, 3, 3, 3], [4, 4, 4, 5, 6, 6, 6], [4, 4, 4, 5, 6, 6, 6]],
        "reflection": [[6, 5, 4, 5, 6, 5, 4], [3, 2, 1, 2, 3, 2, 1], [6, 5, 4, 5, 6, 5, 4], [3, 2, 1, 2, 3, 2, 1]],
    }
    for mode, values in expected.items():
        got = run(lambda b, o: b.pad(o["x"], [1, 2], [1, 2], {"mode": mode}), {"x": x})
        assert got.tolist() == values, mode


@pytest.mark.parametrize("mode", MODES)
def test_rank_zero(mode):
    # §8.9.36: the input's allowed rank is N (0 included) and step 3 only compares the paddings'
    # sizes with the rank, so a scalar with empty paddings builds and is returned as it is.
    # (WPT's 2025 validation file expects a TypeError here: see wpt_runner/expectations.)
    got = run(lambda b, o: b.pad(o["x"], [], [], {"mode": mode}), {"x": np.array(3.5, np.float32)})
    assert got.shape == () and float(got) == 3.5


@pytest.mark.parametrize("dtype, value, expected", [
    ("float32", 0.1, np.float32(0.1)),
    ("float32", 1e300, math.inf),              # ConvertToFloat: overflow to infinity
    ("float32", float("nan"), math.nan),
    ("float16", 70000.0, math.inf),
    ("float16", 0.1, np.float16(0.1)),
    ("int8", 300, 127),                        # ConvertToInt clamps
    ("int8", -2.5, -2),                        # ... and rounds half to even
    ("int8", 3.5, 4),
    ("uint8", -5, 0),
    ("uint8", float("nan"), 0),
    ("int32", float("inf"), 2**31 - 1),
    ("uint32", 2**32 + 5, 2**32 - 1),          # unsigned range (README: §9.2 departure)
    ("uint32", 3_000_000_000, 3_000_000_000),
    ("int64", 2**70, 2**63 - 1),
    ("int64", 1e300, 2**63 - 1),
    ("int64", -(2**63), -(2**63)),
    ("uint64", 2**64 - 1, 2**64 - 1),          # bigint: exact
    ("uint64", -1.0, 0),
])
def test_constant_value_is_cast(dtype, value, expected):
    np_type = np.dtype(dtype)
    x = np.ones(2, np_type)
    got = run(lambda b, o: b.pad(o["x"], [1], [0], {"value": value}), {"x": x})
    assert got.dtype == np_type
    if np_type.kind == "f" and math.isnan(float(expected)):
        assert math.isnan(float(got[0]))
    else:
        assert got[0] == np.array(expected).astype(np_type) if np_type.kind == "f" else int(got[0]) == expected
    assert got[1] == 1


# -- validation -----------------------------------------------------------------------------------

def pad_error(shape, begin, end, options):
    async def attempt():
        context = await webnn_py.ml.createContext()
        builder = webnn_py.MLGraphBuilder(context)
        x = builder.input("x", {"dataType": "float32", "shape": list(shape)})
        with pytest.raises(TypeError) as info:
            builder.pad(x, begin, end, dict(options, label="pd"))
        return str(info.value)
    return asyncio.run(attempt())


ERRORS = [
    ("beginning size", (2, 3), [1], [1, 1], {}, r"beginningPadding \(1 items\) and endingPadding \(2 items\)"),
    ("ending size", (2, 3), [1, 1], [1, 1, 1], {}, "must both have the input's rank 2 items"),
    ("reflection beginning", (2, 3), [2, 0], [0, 0], {"mode": "reflection"},
     r"beginningPadding\[0\] 2 must be smaller than the input's dimension 2"),
    ("reflection ending", (2, 3), [0, 0], [0, 3], {"mode": "reflection"},
     r"endingPadding\[1\] 3 must be smaller than the input's dimension 3"),
    ("output too large", (2, 3), [0, 2**31 - 2], [0, 0], {}, "output dimension 2147483649"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_type_errors(case):
    _, shape, begin, end, options, message = case
    text = pad_error(shape, begin, end, options)
    assert text.startswith("[pd] pad: "), text
    assert re.search(message, text), text


def test_edge_and_constant_allow_padding_beyond_the_size():
    got = run(lambda b, o: b.pad(o["x"], [4], [5], {"mode": "edge"}), {"x": np.array([1, 2], np.int32)})
    assert got.tolist() == [1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2]


def test_support_limits():
    async def limits():
        context = await webnn_py.ml.createContext()
        return context.opSupportLimits()
    pad = asyncio.run(limits())["pad"]
    assert len(pad["input"]["dataTypes"]) == 8 and pad["input"]["rankRange"]["min"] == 0
