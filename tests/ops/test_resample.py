"""resample2d (§8.9.41) for float32, float16, int8 and uint8: linear against
torch's bilinear interpolation (half-pixel, align_corners=False) and exact
rational arithmetic, nearest-neighbor against the spec's formula evaluated with
Python fractions (and torch's nearest-exact where the two agree); plus every
TypeError of the build step."""
import asyncio
import math
import re
from fractions import Fraction

import numpy as np
import pytest

import webnn_py
from tests.portable.expect import assert_close

from .conftest import FLOAT_TYPES, run, torch

F = torch.nn.functional
TYPES = FLOAT_TYPES + [np.int8, np.uint8]


def name(dtype):
    return np.dtype(dtype).name


def spec_coordinate(o, in_size, out_size):
    """§8.9.41: clamp((o + 0.5) / (out/in) - 0.5, 0, in - 1), exactly."""
    c = (Fraction(2 * o + 1, 2) * in_size) / out_size - Fraction(1, 2)
    return min(max(c, Fraction(0)), Fraction(in_size - 1))


def fraction_resample(x, axes, out_shape, mode):
    """The spec's sampling formulas on exact rationals (small arrays only)."""
    ax_y, ax_x = axes
    moved = np.moveaxis(x, (ax_y, ax_x), (-2, -1))
    out_hw = (out_shape[ax_y], out_shape[ax_x])
    in_h, in_w = moved.shape[-2:]
    out = np.empty(moved.shape[:-2] + out_hw, dtype=object)
    for index in np.ndindex(*moved.shape[:-2]):
        plane = moved[index]
        for oy in range(out_hw[0]):
            cy = spec_coordinate(oy, in_h, out_hw[0])
            for ox in range(out_hw[1]):
                cx = spec_coordinate(ox, in_w, out_hw[1])
                if mode == "nearest-neighbor":
                    value = Fraction(int(plane[math.ceil(cy - Fraction(1, 2)), math.ceil(cx - Fraction(1, 2))])) \
                        if plane.dtype.kind != "f" else Fraction(float(plane[math.ceil(cy - Fraction(1, 2)),
                                                                             math.ceil(cx - Fraction(1, 2))]))
                else:
                    x0, x1, y0, y1 = math.floor(cx), math.ceil(cx), math.floor(cy), math.ceil(cy)
                    tx, ty = cx - x0, cy - y0

                    def v(yy, xx):
                        return Fraction(plane[yy, xx].item())
                    vy0 = v(y0, x0) * (1 - tx) + v(y0, x1) * tx
                    vy1 = v(y1, x0) * (1 - tx) + v(y1, x1) * tx
                    value = vy0 * (1 - ty) + vy1 * ty
                out[index + (oy, ox)] = value
    return np.moveaxis(out, (-2, -1), (ax_y, ax_x))


def to_type(values, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.vectorize(float, otypes=[np.float64])(values).astype(dtype)
    # Integers: round half to even (Python's round on Fractions), as the kernel documents.
    return np.vectorize(round, otypes=[object])(values).astype(dtype)


def random_input(shape, dtype, rng):
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-5, 5, shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


CASES = {
    "upsample-scales": dict(x=(1, 2, 3, 4), options={"scales": [2.0, 3.0]}),
    "downsample-scales": dict(x=(1, 2, 6, 8), options={"scales": [0.5, 0.5]}),
    "sizes": dict(x=(2, 1, 4, 5), options={"sizes": [7, 3]}),
    "sizes-override-scales": dict(x=(1, 1, 4, 4), options={"sizes": [6, 5], "scales": [4.0, 4.0]}),
    "fractional-scale": dict(x=(1, 2, 3, 5), options={"scales": [1.5, 0.7]}),
    "axes-0-1": dict(x=(3, 4, 2, 2), options={"axes": [0, 1], "sizes": [5, 6]}),
    "axes-1-2": dict(x=(1, 3, 4, 2), options={"axes": [1, 2], "scales": [2.0, 0.5]}),
    "axes-reversed": dict(x=(1, 2, 3, 4), options={"axes": [3, 2], "sizes": [6, 5]}),
    "axes-0-3": dict(x=(2, 3, 2, 3), options={"axes": [0, 3], "sizes": [3, 5]}),
    "default-scales": dict(x=(1, 2, 3, 3), options={}),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("mode", ["nearest-neighbor", "linear"])
@pytest.mark.parametrize("dtype", TYPES, ids=name)
def test_against_exact_spec_formula(dtype, mode, case, rng):
    spec = CASES[case]
    x = random_input(spec["x"], dtype, rng)
    options = dict(spec["options"], mode=mode)
    got = run(lambda b, o: b.resample2d(o["x"], options), {"x": x})
    axes = options.get("axes", [2, 3])
    shape = list(x.shape)
    for i, axis in enumerate(axes):
        shape[axis] = options["sizes"][i] if "sizes" in options else \
            math.floor(x.shape[axis] * options.get("scales", [1.0, 1.0])[i])
    assert list(got.shape) == shape
    expected = fraction_resample(x, axes, shape, mode)
    if np.dtype(dtype).kind == "f":
        # nearest copies values (exact); linear: a few ULP of rounding in the two passes.
        assert_close(got, to_type(expected, np.float64),
                     **({"ulp": 0} if mode == "nearest-neighbor" else {"atol": 8 * float(np.finfo(dtype).eps) * 5}),
                     what=f"{mode} {case}")
    else:
        # Exact: the kernel evaluates the formula on exact rationals for 8-bit integers.
        assert_close(got, to_type(expected, dtype), what=f"{mode} {case}")
    assert got.dtype == dtype


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=name)
@pytest.mark.parametrize("size", [(8, 6), (3, 2), (5, 7), (4, 9)])
def test_linear_against_torch_bilinear(dtype, size, rng):
    x = rng.uniform(-5, 5, (2, 3, 4, 3)).astype(dtype)
    got = run(lambda b, o: b.resample2d(o["x"], {"mode": "linear", "sizes": list(size)}), {"x": x})
    expected = F.interpolate(torch.from_numpy(x.astype(np.float64)), size=size, mode="bilinear",
                             align_corners=False).numpy()
    assert_close(got, expected, atol=40 * float(np.finfo(dtype).eps), what=f"linear {size}")


@pytest.mark.parametrize("dtype", FLOAT_TYPES + [np.uint8], ids=name)
def test_nearest_upsampling_against_torch_nearest_exact(dtype, rng):
    # Integer upsampling factors never hit a tie, where the spec's ceil(c - 0.5)
    # (ties toward the lower index) and torch's nearest-exact would differ.
    x = random_input((1, 2, 3, 4), dtype, rng)
    got = run(lambda b, o: b.resample2d(o["x"], {"scales": [3.0, 2.0]}), {"x": x})
    expected = F.interpolate(torch.from_numpy(x), scale_factor=(3, 2), mode="nearest-exact").numpy()
    assert_close(got, expected, ulp=0) if np.dtype(dtype).kind == "f" else assert_close(got, expected)


def test_spec_example_and_nearest_ties():
    x = np.array([0, 1, 2, 3, 0, 1, 2, 3, 12, 13, 14, 15, 12, 13, 14, 15], np.float32).reshape(1, 1, 4, 4)
    got = run(lambda b, o: b.resample2d(o["x"], {"mode": "linear", "sizes": [8, 8]}), {"x": x})
    row = [0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3]
    assert got[0, 0].tolist() == [[v + base for v in row] for base in (0, 0, 0, 3, 9, 12, 12, 12)]
    # Halving: c - 0.5 = 2o is an exact tie between 2o and 2o + 1; ceil picks 2o.
    got = run(lambda b, o: b.resample2d(o["x"], {"scales": [0.5, 0.5]}), {"x": x})
    assert got[0, 0].tolist() == [[0, 2], [12, 14]]


def test_integer_linear_rounds_half_to_even():
    # 2x upsampling of [0, 1] and [2, 3] gives quarter values: 0.25 -> 0, 0.75 -> 1, 2.5 -> 2
    x = np.array([[[[0, 1]], [[2, 3]]]], np.uint8)       # [1, 2, 1, 2]
    got = run(lambda b, o: b.resample2d(o["x"], {"mode": "linear", "axes": [2, 3], "scales": [1.0, 2.0]}),
              {"x": x})
    assert got[0, :, 0].tolist() == [[0, 0, 1, 1], [2, 2, 3, 3]]
    x = np.array([[[[1, 4]]]], np.int8)
    got = run(lambda b, o: b.resample2d(o["x"], {"mode": "linear", "sizes": [1, 4]}), {"x": x})
    # exact: 1, 1.75, 3.25, 4
    assert got.ravel().tolist() == [1, 2, 3, 4]


# -- validation -----------------------------------------------------------------------------------

def resample_error(shape, options, dtype="float32"):
    async def attempt():
        context = await webnn_py.ml.createContext()
        builder = webnn_py.MLGraphBuilder(context)
        x = builder.input("x", {"dataType": dtype, "shape": list(shape)})
        with pytest.raises(TypeError) as info:
            builder.resample2d(x, dict(options, label="r"))
        return str(info.value)
    return asyncio.run(attempt())


S = (1, 2, 4, 4)
ERRORS = [
    ("data type", S, {}, "int32", "input has data type int32"),
    ("rank", (2, 4, 4), {}, "float32", "input has rank 3"),
    ("scales size", S, {"scales": [2.0]}, "float32", "scales must be 2 values greater than 0"),
    ("scales zero", S, {"scales": [2.0, 0.0]}, "float32", "scales must be 2 values greater than 0"),
    ("scales negative", S, {"scales": [-1.0, 1.0]}, "float32", "scales must be 2 values greater than 0"),
    ("sizes size", S, {"sizes": [2, 2, 2]}, "float32", "sizes must be 2 values greater than 0"),
    ("sizes zero", S, {"sizes": [0, 2]}, "float32", "sizes must be 2 values greater than 0"),
    ("axes size", S, {"axes": [2]}, "float32", "axes must have 2 items"),
    ("axes duplicate", S, {"axes": [2, 2]}, "float32", r"axes \[2, 2\] contain a duplicate"),
    ("axes range", S, {"axes": [3, 4]}, "float32", "axes item 4 is out of range for rank 4"),
    ("output size zero", S, {"scales": [0.1, 1.0]}, "float32", "output size 0 of axis 2 is not a valid dimension"),
    ("output size too large", S, {"scales": [1.0, 1e9]}, "float32", "output size 4000000000 of axis 3"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_type_errors(case):
    _, shape, options, dtype, message = case
    text = resample_error(shape, options, dtype)
    assert text.startswith("[r] resample2d: "), text
    assert re.search(message, text), text


@pytest.mark.parametrize("dtype", ["uint32", "int64", "uint64"])
def test_rejects_other_types(dtype):
    assert "allowed: float32, float16, uint8, int8" in resample_error(S, {}, dtype)


def test_support_limits():
    async def limits():
        context = await webnn_py.ml.createContext()
        return context.opSupportLimits()
    assert asyncio.run(limits())["resample2d"]["input"] == {
        "dataTypes": ["float32", "float16", "uint8", "int8"], "rankRange": {"min": 4, "max": 4}}
