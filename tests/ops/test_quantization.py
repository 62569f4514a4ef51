"""dequantizeLinear (§8.9.16) and quantizeLinear (§8.9.17) against exact rational
arithmetic (Python Fractions: round half to even, saturation to the output type),
for every input/scale/zeroPoint type pair, with blockwise broadcasting (§9.1),
and every TypeError path. torch's per-tensor quantization checks the common case."""
import asyncio
from fractions import Fraction

import numpy as np
import pytest

import webnn_py
from tests.portable.expect import assert_close

from .conftest import FLOAT_TYPES, builder_and_operands, random_array, run, torch

QUANTIZED_TYPES = [np.uint8, np.int8, np.uint32, np.int32]
IDS = {"ids": lambda d: np.dtype(d).name}

# (input shape, scale/zeroPoint shape): per-tensor, per-axis and per-block layouts.
BLOCK_CASES = [
    ((4, 6), (1, 1)),
    ((4, 6), (4, 6)),
    ((4, 6), (2, 1)),
    ((4, 6), (1, 3)),
    ((4, 6), (2, 3)),
    ((2, 3, 4), (1, 3, 1)),
    ((2, 3, 4), (2, 1, 2)),
    ((), ()),
    ((8,), (4,)),
]


def upsampled(small, shape):
    """§9.1 blockwise broadcast by index arithmetic: element i of the big tensor
    uses small[i0 // block0, i1 // block1, ...]."""
    blocks = [dim // s for dim, s in zip(shape, small.shape)]
    out = np.empty(shape, dtype=object)
    for index in np.ndindex(*shape):
        out[index] = small[tuple(i // b for i, b in zip(index, blocks))]
    return out


def dequantize_reference(x, scale, zero_point):
    scale_up, zero_up = upsampled(scale, x.shape), upsampled(zero_point, x.shape)
    out = np.empty(x.shape, dtype=np.float64)
    for index in np.ndindex(*x.shape):
        exact = (int(x[index]) - int(zero_up[index])) * Fraction(float(scale_up[index]))
        out[index] = float(exact)      # correctly rounded to binary64
    with np.errstate(over="ignore"):   # float16 overflows to ±Infinity
        return out.astype(scale.dtype)


def quantize_reference(x, scale, zero_point):
    info = np.iinfo(zero_point.dtype)
    scale_up, zero_up = upsampled(scale, x.shape), upsampled(zero_point, x.shape)
    out = np.empty(x.shape, dtype=object)
    for index in np.ndindex(*x.shape):
        value, s = float(x[index]), float(scale_up[index])
        if np.isnan(value) or np.isnan(s) or (s == 0 and value == 0):
            q = 0                                  # NaN: our documented choice
        elif s == 0 or np.isinf(value) or np.isinf(s):
            q = info.max if (value > 0) == (s > 0) else info.min
            if np.isinf(s) and not np.isinf(value):
                q = int(zero_up[index])            # finite / inf = 0
        else:
            q = round(Fraction(value) / Fraction(s)) + int(zero_up[index])   # round() of a Fraction: half to even
        out[index] = min(max(q, info.min), info.max)
    return out.astype(zero_point.dtype)


def quantized_array(shape, dtype, rng):
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, size=shape, dtype=dtype)


@pytest.mark.parametrize("case", BLOCK_CASES, ids=str)
@pytest.mark.parametrize("scale_type", FLOAT_TYPES, **IDS)
@pytest.mark.parametrize("int_type", QUANTIZED_TYPES, **IDS)
def test_dequantize_linear(case, scale_type, int_type, rng):
    shape, block = case
    x = quantized_array(shape, int_type, rng)
    zero_point = quantized_array(block, int_type, rng)
    scale = random_array(block, scale_type, rng, -0.5, 2)
    got = run(lambda b, o: b.dequantizeLinear(o["x"], o["s"], o["z"]), {"x": x}, {"s": scale, "z": zero_point})
    assert got.dtype == scale_type and got.shape == shape
    # Exactly rounded for 8-bit inputs (every product fits in binary64); the
    # 32-bit ones may be double-rounded (binary64, then the scale's type).
    ulp = 0 if np.dtype(int_type).itemsize == 1 else 1
    assert_close(got, dequantize_reference(x, scale, zero_point), ulp=ulp, what=f"dequantizeLinear {case}")


@pytest.mark.parametrize("case", BLOCK_CASES, ids=str)
@pytest.mark.parametrize("float_type", FLOAT_TYPES, **IDS)
@pytest.mark.parametrize("int_type", QUANTIZED_TYPES, **IDS)
def test_quantize_linear(case, float_type, int_type, rng):
    shape, block = case
    info = np.iinfo(int_type)
    scale = random_array(block, float_type, rng, 0.05, 3)
    # Values reaching past both ends of the type's range, so saturation shows.
    span = float(min(int(info.max) - int(info.min), 60000)) * 0.1
    x = random_array(shape, float_type, rng, -span, span)
    zero_point = quantized_array(block, int_type, rng)
    got = run(lambda b, o: b.quantizeLinear(o["x"], o["s"], o["z"]), {"x": x}, {"s": scale, "z": zero_point})
    assert got.dtype == int_type and got.shape == shape
    assert_close(got, quantize_reference(x, scale, zero_point), what=f"quantizeLinear {case}")


@pytest.mark.parametrize("float_type", FLOAT_TYPES, **IDS)
@pytest.mark.parametrize("int_type", QUANTIZED_TYPES, **IDS)
def test_quantize_linear_rounding_and_saturation(float_type, int_type):
    info = np.iinfo(int_type)
    values = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.4, 3.6, -3.6, 0, -0.0, 1e4, -1e4, 65504, -65504, np.inf, -np.inf]
    x = np.array(values, float_type)
    scale = np.array([1], float_type)
    for zero in (0, 1, int(info.max), int(info.min)):
        zero_point = np.array([zero], int_type)
        got = run(lambda b, o: b.quantizeLinear(o["x"], o["s"], o["z"]), {"x": x}, {"s": scale, "z": zero_point})
        assert_close(got, quantize_reference(x, scale, zero_point), what=f"zeroPoint {zero}")
    if np.dtype(int_type) == np.int8:
        got = run(lambda b, o: b.quantizeLinear(o["x"], o["s"], o["z"]), {"x": x}, {"s": scale, "z": np.array([0], int_type)})
        # round half to even, and int8 saturates at -128..127 (not the 0..255 of the uint8 example)
        assert got[:6].tolist() == [0, 2, 2, 0, -2, -2] and got[11:].tolist() == [127, -128, 127, -128, 127, -128]


@pytest.mark.parametrize("float_type", FLOAT_TYPES, **IDS)
def test_quantize_linear_special_scales(float_type):
    # Division by zero saturates by the sign of the quotient; NaN quantizes to 0.
    x = np.array([3, -3, 0, np.nan, 2], float_type)
    scale = np.array([0, 0, 0, 1, np.inf], float_type)
    zero_point = np.array([5, 5, 5, 5, 5], np.uint8)
    got = run(lambda b, o: b.quantizeLinear(o["x"], o["s"], o["z"]), {"x": x}, {"s": scale, "z": zero_point})
    assert got.tolist() == [255, 0, 0, 0, 5]


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor")
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32])
def test_against_torch_per_tensor(dtype, rng):
    # torch's per-tensor quantization (round half to even, saturating) as a
    # second, independent reference for the common case.
    torch_type = {np.uint8: torch.quint8, np.int8: torch.qint8, np.int32: torch.qint32}[dtype]
    x = random_array((3, 5), np.float32, rng, -40, 40)
    x[0, :4] = [0.25, 0.75, -0.25, 1.25]     # ties after dividing by 0.5
    # torch adds the zero point before rounding, which agrees with the spec's
    # roundEven(x / scale) + zeroPoint only for even zero points.
    scale, zero = 0.5, {np.uint8: 128, np.int8: -4, np.int32: 1000}[dtype]
    q = torch.quantize_per_tensor(torch.from_numpy(x), scale, zero, torch_type)
    got = run(lambda b, o: b.quantizeLinear(o["x"], o["s"], o["z"]), {"x": x},
              {"s": np.full((1, 1), scale, np.float32), "z": np.full((1, 1), zero, dtype)})
    assert_close(got, q.int_repr().numpy())
    back = run(lambda b, o: b.dequantizeLinear(o["q"], o["s"], o["z"]), {"q": got},
               {"s": np.full((1, 1), scale, np.float32), "z": np.full((1, 1), zero, dtype)})
    assert_close(back, q.dequantize().numpy(), ulp=0)


# -- validation ----------------------------------------------------------------------------

DEQUANTIZE_ERRORS = [
    (("float32", (4,)), ("float32", (4,)), ("uint8", (4,)), r"input has data type float32"),
    (("int64", (4,)), ("float32", (4,)), ("int64", (4,)), r"input has data type int64"),
    (("uint8", (4,)), ("int32", (4,)), ("uint8", (4,)), r"scale has data type int32"),
    (("uint8", (4,)), ("float32", (4,)), ("float16", (4,)), r"zeroPoint has data type float16"),
    (("uint8", (4,)), ("float32", (4,)), ("int8", (4,)), r"zeroPoint's data type int8 differs from input's uint8"),
    (("int32", (4, 2)), ("float32", (4,)), ("int32", (4,)), r"scale's rank 1 differs from input's rank 2"),
    (("int32", (4, 2)), ("float32", (4, 1)), ("int32", (1, 4, 1)), r"zeroPoint's rank 3 differs from input's rank 2"),
    (("int32", (4, 2)), ("float32", (4, 1)), ("int32", (2, 1)), r"scale's shape \[4, 1\] differs from zeroPoint's shape \[2, 1\]"),
    (("int32", (4, 6)), ("float32", (3, 1)), ("int32", (3, 1)), r"scale's shape \[3, 1\] is not blockwise broadcastable"),
    (("int32", (4, 6)), ("float32", (1, 4)), ("int32", (1, 4)), r"scale's shape \[1, 4\] is not blockwise broadcastable"),
]

QUANTIZE_ERRORS = [
    (("int8", (4,)), ("int8", (4,)), ("int8", (4,)), r"input has data type int8"),
    (("float32", (4,)), ("int32", (4,)), ("uint8", (4,)), r"scale has data type int32"),
    (("float32", (4,)), ("float16", (4,)), ("uint8", (4,)), r"scale's data type float16 differs from input's float32"),
    (("float16", (4,)), ("float16", (4,)), ("float16", (4,)), r"zeroPoint has data type float16"),
    (("float16", (4,)), ("float16", (4,)), ("uint64", (4,)), r"zeroPoint has data type uint64"),
    (("float32", (4, 2)), ("float32", (4,)), ("uint8", (4,)), r"scale's rank 1 differs from input's rank 2"),
    (("float32", (4, 2)), ("float32", (4, 1)), ("uint8", ()), r"zeroPoint's rank 0 differs from input's rank 2"),
    (("float32", (4, 2)), ("float32", (1, 1)), ("uint8", (1, 2)), r"scale's shape \[1, 1\] differs from zeroPoint's"),
    (("float32", (4, 6)), ("float32", (4, 4)), ("uint8", (4, 4)), r"scale's shape \[4, 4\] is not blockwise broadcastable"),
    (("float32", (4,)), ("float32", (8,)), ("uint8", (8,)), r"scale's shape \[8\] is not blockwise broadcastable"),
]


@pytest.mark.parametrize("op, input, scale, zero_point, match",
                         [("dequantizeLinear", *case) for case in DEQUANTIZE_ERRORS] +
                         [("quantizeLinear", *case) for case in QUANTIZE_ERRORS],
                         ids=[f"dequantizeLinear {c[-1]}" for c in DEQUANTIZE_ERRORS] +
                             [f"quantizeLinear {c[-1]}" for c in QUANTIZE_ERRORS])
def test_type_errors(op, input, scale, zero_point, match):
    builder, x = builder_and_operands(x=input, s=scale, z=zero_point)
    with pytest.raises(TypeError, match=f"{op}: {match}"):
        getattr(builder, op)(x["x"], x["s"], x["z"])
    with pytest.raises(TypeError, match=rf"^\[q\] {op}: "):
        getattr(builder, op)(x["x"], x["s"], x["z"], {"label": "q"})


def test_operand_from_another_builder():
    builder, x = builder_and_operands(q=("uint8", (2,)), f=("float32", (2,)), s=("float32", (1,)))
    _, y = builder_and_operands(z=("uint8", (1,)))
    for op, data in (("dequantizeLinear", "q"), ("quantizeLinear", "f")):
        with pytest.raises(TypeError, match=f"{op}: an operand was created by another MLGraphBuilder"):
            getattr(builder, op)(x[data], x["s"], y["z"])


def test_op_support_limits():
    async def limits():
        context = await webnn_py.ml.createContext()
        return context.opSupportLimits()
    limits = asyncio.run(limits())
    quantized = ["uint8", "int8", "uint32", "int32"]
    assert limits["dequantizeLinear"]["input"]["dataTypes"] == quantized
    assert limits["dequantizeLinear"]["output"]["dataTypes"] == ["float32", "float16"]
    assert limits["quantizeLinear"]["zeroPoint"]["dataTypes"] == quantized
    assert limits["quantizeLinear"]["output"]["dataTypes"] == quantized
    assert set(limits["quantizeLinear"]) == {"input", "scale", "zeroPoint", "output"}
