"""cast (§8.9.7) for every pair of the eight data types, against references
computed without numpy's conversions: Python integers for int -> int, Python's
struct packing ('f' / 'e', which round a double to nearest even) for -> float,
and math.trunc for float -> int."""
import asyncio
import math
import struct

import numpy as np
import pytest

import webnn_py

from .conftest import ALL_TYPES, run

NAMES = [np.dtype(t).name for t in ALL_TYPES]


def values_for(source: str) -> list:
    """Interesting values exactly representable in `source`: the type's limits, the
    limits of every smaller type and one past them, and a few others."""
    dtype = np.dtype(source)
    if dtype.kind == "f":
        common = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.75, -0.75, 127.0, 128.0, -128.0, -129.0, 255.0, 256.0,
                  1000.5, -1000.5, 65504.0, -65504.0, math.inf, -math.inf, math.nan]
        if source == "float32":
            common += [65520.0, 1e5, 2.0**24 + 2, 2.0**31, -2.0**31, 2.0**31 - 128, 4294967040.0, 2.0**32,
                       2.0**63, -2.0**63, 2.0**64, 1.5e38, -3e38, 1e-40]
        return common
    info = np.iinfo(dtype)
    candidates = [0, 1, -1, 2, 100, -100, 127, 128, -128, -129, 255, 256, 1000, 65504, 65519, 65520, 65536,
                  2**24 + 1, 2**24 + 3, 2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**32 - 1, 2**32,
                  2**53 + 1, 2**63 - 1, -2**63, 2**64 - 1, int(info.min), int(info.max)]
    return sorted({v for v in candidates if info.min <= v <= info.max})


def wrap(value: int, target: np.dtype) -> int:
    """The lowest N bits of `value`, read as the target type (two's complement when signed)."""
    bits = target.itemsize * 8
    value %= 1 << bits
    return value - (1 << bits) if target.kind == "i" and value >= 1 << (bits - 1) else value


def round_to_float(value, target: np.dtype) -> float:
    """Nearest float32/float16 of an exact value (an int or a double); +/-Infinity out of range."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return value
    fmt = "f" if target == np.float32 else "e"
    if isinstance(value, int):
        # An int is rounded once, to the target: split off what a double holds exactly
        # and let the remainder break ties (only matters beyond 2**53).
        as_double = float(value)
        rest = value - int(as_double)
        if rest != 0:
            # Nudge the double toward the exact value so struct's rounding sees the true side.
            as_double = math.nextafter(as_double, math.inf if rest > 0 else -math.inf)
        value = as_double
    try:
        return struct.unpack(fmt, struct.pack(fmt, value))[0]
    except (OverflowError, struct.error):
        return math.copysign(math.inf, value)


def float_to_int(value: float, target: np.dtype) -> int:
    """Truncation in range; our implementation-defined choice elsewhere: saturate, NaN -> 0."""
    info = np.iinfo(target)
    if math.isnan(value):
        return 0
    if math.isinf(value):
        return int(info.max) if value > 0 else int(info.min)
    return min(max(math.trunc(value), int(info.min)), int(info.max))


def reference(values: list, source: str, target: str) -> list:
    src, dst = np.dtype(source), np.dtype(target)
    out = []
    for v in values:
        if dst.kind == "f":
            out.append(round_to_float(v if src.kind == "f" else int(v), dst))
        elif src.kind == "f":
            out.append(float_to_int(v, dst))
        else:
            out.append(wrap(int(v), dst))
    return out


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b


@pytest.mark.parametrize("target", NAMES)
@pytest.mark.parametrize("source", NAMES)
def test_every_pair(source, target):
    values = values_for(source)
    x = np.array(values, dtype=source)
    got = run(lambda b, o: b.cast(o["x"], target), {"x": x})
    assert got.dtype == np.dtype(target) and got.shape == x.shape
    expected = reference([float(v) if x.dtype.kind == "f" else int(v) for v in x], source, target)
    actual = [float(v) if got.dtype.kind == "f" else int(v) for v in got]
    bad = [(v, a, e) for v, a, e in zip(values, actual, expected) if not same(a, e)]
    assert not bad, f"cast {source} -> {target}: (input, got, expected) {bad[:6]}"


def test_spec_note_examples():
    # §8.9.7's note: casting -1 from int8 to uint8 yields 255.
    got = run(lambda b, o: b.cast(o["x"], "uint8"), {"x": np.array([-1, -128, 127], np.int8)})
    assert got.tolist() == [255, 128, 127]


def test_shapes_and_rank_zero():
    got = run(lambda b, o: b.cast(o["x"], "int32"), {"x": np.array(-7.9, np.float32)})
    assert got.shape == () and got.dtype == np.int32 and int(got) == -7
    x = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    got = run(lambda b, o: b.cast(o["x"], "float16"), {"x": x})
    assert got.shape == (2, 3, 4) and got.tolist() == x.astype(float).tolist()


def test_cast_to_same_type_is_a_copy():
    x = np.array([1, 2, 3], np.int64)
    got = run(lambda b, o: [b.cast(o["x"], "int64"), b.neg(b.cast(o["x"], "int64"))], {"x": x})
    assert got[0].tolist() == [1, 2, 3] and got[1].tolist() == [-1, -2, -3]


def test_chained_casts_through_constants():
    got = run(lambda b, o: b.add(b.cast(o["c"], "float32"), o["x"]),
              {"x": np.full(3, 0.5, np.float32)}, {"c": np.array([-1, 0, 300], np.int64)})
    assert got.tolist() == [-0.5, 0.5, 300.5]


# -- validation -------------------------------------------------------------------------------

def _builder():
    context = asyncio.run(webnn_py.ml.createContext())
    return context, webnn_py.MLGraphBuilder(context)


def test_operand_from_another_builder():
    context, builder = _builder()
    x = webnn_py.MLGraphBuilder(context).input("x", {"dataType": "float32", "shape": [2]})
    with pytest.raises(TypeError, match=r"^\[c1\] cast: an operand was created by another MLGraphBuilder"):
        builder.cast(x, "int32", {"label": "c1"})


@pytest.mark.parametrize("data_type", ["float64", "bool", "Float32", ""])
def test_unknown_data_type(data_type):
    # MLOperandDataType's enum conversion rejects these before step 3 is reached.
    _, builder = _builder()
    x = builder.input("x", {"dataType": "float32", "shape": [2]})
    with pytest.raises(TypeError):
        builder.cast(x, data_type)


def test_step_3_rejects_a_type_the_output_does_not_allow():
    # Every MLOperandDataType is allowed for the output, so step 3 is only reachable
    # from below the bindings (as the model loaders call build steps directly).
    from webnn_py.ops import operator_kind
    from webnn_py.ops.registry import BuildContext

    class Context(BuildContext):
        def descriptor(self, operand):
            return operand

        def emit(self, inputs, outputs, attributes=None, kind=None):
            return list(outputs)

    from webnn_py.base.descriptor import OperandDescriptor
    desc = OperandDescriptor("float32", (2,))
    with pytest.raises(TypeError, match=r"^\[l\] cast: dataType bfloat16 is not an allowed output data type"):
        operator_kind("cast").build(Context("cast", "l"), desc, "bfloat16", {})
    assert operator_kind("cast").build(Context("cast"), desc, "uint64", {}) == OperandDescriptor("uint64", (2,))


def test_output_descriptor_and_support_limits():
    context, builder = _builder()
    x = builder.input("x", {"dataType": "float16", "shape": [3, 1]})
    y = builder.cast(x, "uint64")
    assert (y.dataType, y.shape) == ("uint64", [3, 1])
    limits = context.opSupportLimits()["cast"]
    assert sorted(limits["input"]["dataTypes"]) == sorted(NAMES)
    assert sorted(limits["output"]["dataTypes"]) == sorted(NAMES)
