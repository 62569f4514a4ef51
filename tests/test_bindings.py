"""Host tests of the WebIDL bindings (webnn_py/bindings) and their generator.

Expected values are worked out by hand from the WebIDL Standard ("JavaScript type
mapping", "overload resolution algorithm") and ECMAScript's ToNumber/ToString;
section names are given where a rule is tested.
"""
from __future__ import annotations

import array
import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from webnn_py.bindings import (
    DICTIONARIES,
    ENUMS,
    INCLUDES,
    INTERFACES,
    MISSING,
    NULL,
    TYPEDEFS,
    BufferSource,
    convert,
    convert_arguments,
    convert_dictionary,
    parse_type,
    register_interface,
)
from webnn_py.bindings import generated, webidl

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT.parent / "shared" / "spec" / "000_077db81a5c98f1f1.txt"
INF, NAN = math.inf, math.nan


def type_error(fn, *args, match=None):
    with pytest.raises(TypeError, match=match):
        fn(*args)


# Local stand-ins for the implementation classes (which live in webnn_py.api and
# are deliberately not imported here: the bindings must not need them).
class FakeOperand:
    pass


class FakeTensor:
    pass


class FakeContext:
    pass


class FakeGraph:
    pass


class SubOperand(FakeOperand):
    pass


for _name, _cls in [("MLOperand", FakeOperand), ("MLTensor", FakeTensor), ("MLContext", FakeContext),
                    ("MLGraph", FakeGraph)]:
    register_interface(_name, _cls)


# -- integer types, WebIDL "Integer types" (ConvertToInt) ------------------------------------------

ER_UL = "[EnforceRange] unsigned long"


@pytest.mark.parametrize("value, expected", [
    (0, 0), (1, 1), (4294967295, 4294967295),
    (3.9, 3),              # IntegerPart truncates toward zero
    (-0.9, 0),             # IntegerPart(-0.9) is -0, which becomes +0: in range
    (-0.0, 0),
    (True, 1), (False, 0),
    (NULL, 0),             # ToNumber(null) = 0
    ("42", 42), (" 0x10 ", 16), ("", 0), ("1e3", 1000),
    (np.uint32(7), 7), (np.float64(2.5), 2),
])
def test_enforce_range_unsigned_long_accepts(value, expected):
    result = convert(value, ER_UL)
    assert result == expected and type(result) is int


@pytest.mark.parametrize("value", [
    NAN, INF, -INF,
    None,                  # undefined -> NaN
    -1, -1.0, 4294967296, 4294967296.0, 2 ** 64,
    "abc", "1_000", "inf", "Infinity",
])
def test_enforce_range_unsigned_long_rejects(value):
    type_error(convert, value, ER_UL)


def test_enforce_range_messages_say_why():
    with pytest.raises(TypeError, match=r"NaN is not a finite number"):
        convert(NAN, ER_UL, "shape")
    with pytest.raises(TypeError, match=r"^axis: -1 is outside the range of \[EnforceRange\] unsigned long"):
        convert(-1, ER_UL, "axis")


@pytest.mark.parametrize("type_text, value, expected", [
    ("[EnforceRange] long", -2147483648, -2147483648),
    ("[EnforceRange] long", 2147483647, 2147483647),
    ("[EnforceRange] long", -3.7, -3),
    ("[EnforceRange] unsigned long long", 2 ** 53 - 1, 2 ** 53 - 1),
    ("[EnforceRange] unsigned long long", 9007199254740991.0, 9007199254740991),
    ("[EnforceRange] long long", -(2 ** 53 - 1), -(2 ** 53 - 1)),
    ("[EnforceRange] octet", 255, 255),
    ("[EnforceRange] byte", -128, -128),
])
def test_enforce_range_bounds(type_text, value, expected):
    assert convert(value, type_text) == expected


@pytest.mark.parametrize("type_text, value", [
    ("[EnforceRange] long", -2147483649),
    ("[EnforceRange] long", 2147483648),
    ("[EnforceRange] unsigned long long", 2 ** 53),        # 64-bit types stop at 2^53 - 1
    ("[EnforceRange] unsigned long long", -1),
    ("[EnforceRange] long long", -(2 ** 53)),
    ("[EnforceRange] octet", 256),
    ("[EnforceRange] byte", 128),
])
def test_enforce_range_out_of_bounds(type_text, value):
    type_error(convert, value, type_text)


@pytest.mark.parametrize("type_text, value, expected", [
    # No extended attribute: NaN/Infinity -> 0, truncate, then modulo 2^bits (ConvertToInt, last steps)
    ("unsigned long", -1, 4294967295),
    ("unsigned long", 4294967296, 0),
    ("unsigned long", 4294967297.9, 1),
    ("unsigned long", -4294967297, 4294967295),
    ("unsigned long", 3 * 2 ** 32 + 5, 5),
    ("unsigned long", NAN, 0), ("unsigned long", INF, 0), ("unsigned long", -INF, 0),
    ("unsigned long", None, 0),          # undefined -> NaN -> 0
    ("unsigned long", -0.5, 0),
    ("unsigned long", "-2", 4294967294),
    ("long", 2147483648, -2147483648),
    ("long", 4294967295, -1),
    ("long", -2147483649, 2147483647),
    ("long", 3.99, 3), ("long", -3.99, -3),
    ("unsigned long long", -1, 2 ** 64 - 1),
    ("long long", 2 ** 63, -(2 ** 63)),
    ("octet", 256, 0), ("octet", -1, 255),
    ("byte", 128, -128), ("byte", 255, -1),
    ("unsigned short", 65537, 1), ("short", 32768, -32768),
])
def test_integer_wraparound_without_enforce_range(type_text, value, expected):
    assert convert(value, type_text) == expected


@pytest.mark.parametrize("value, expected", [
    (-5, 0), (1e20, 4294967295), (2.5, 2), (3.5, 4), (NAN, 0), (INF, 4294967295), (-INF, 0), (7, 7),
])
def test_clamp(value, expected):
    # [Clamp]: clamp into range, round half to even; NaN -> 0.
    assert convert(value, "[Clamp] unsigned long") == expected


# -- WebIDL "float" / "double" and their unrestricted forms ----------------------------------------

def test_double():
    assert convert(1, "double") == 1.0 and type(convert(1, "double")) is float
    assert convert("2.5", "double") == 2.5
    assert convert(NULL, "double") == 0.0
    for bad in (NAN, INF, -INF, None, "x"):
        type_error(convert, bad, "double")
    with pytest.raises(TypeError, match="epsilon: NaN is not a finite number"):
        convert(NAN, "double", "epsilon")


def test_unrestricted_double():
    assert math.isnan(convert(NAN, "unrestricted double"))
    assert convert(-INF, "unrestricted double") == -INF
    assert math.isnan(convert(None, "unrestricted double"))
    assert convert(2 ** 1100, "unrestricted double") == INF    # beyond double range
    type_error(convert, 2 ** 1100, "double")


def test_float_rounds_to_binary32():
    assert convert(0.1, "float") == 0.10000000149011612
    # Above FLT_MAX but below the rounding midpoint: rounds down to FLT_MAX.
    assert convert(3.4028235e38, "float") == 3.4028234663852886e38
    type_error(convert, 1e40, "float")                      # rounds to Infinity
    assert convert(1e40, "unrestricted float") == INF
    assert convert(-1e40, "unrestricted float") == -INF
    assert math.isnan(convert(NAN, "unrestricted float"))
    assert convert([1.1], "sequence<float>") == [np.float32(1.1).item()]


# -- bigint and MLNumber ---------------------------------------------------------------------------

def test_bigint():
    assert convert(5, "bigint") == 5
    assert convert(2 ** 70 + 1, "bigint") == 2 ** 70 + 1
    assert convert(True, "bigint") == 1
    assert convert("123", "bigint") == 123 and convert("0x1f", "bigint") == 31
    for bad in (1.5, None, NULL, "1.5", [1]):
        type_error(convert, bad, "bigint")


@pytest.mark.parametrize("value, expected, kind", [
    (5, 5, int),
    (-(2 ** 64) - 1, -(2 ** 64) - 1, int),     # stays exact: a BigInt
    (np.int64(7), 7, int),
    (5.0, 5.0, float),
    (2.5, 2.5, float),
    (np.float32(1.5), 1.5, float),
    (INF, INF, float),
    (True, 1.0, float),                        # ToNumeric(true) is the Number 1
    ("2.5", 2.5, float),
    (NULL, 0.0, float),
])
def test_mlnumber(value, expected, kind):
    result = convert(value, "MLNumber")
    assert result == expected and type(result) is kind


def test_mlnumber_undefined_and_nan_are_nan():
    assert math.isnan(convert(None, "MLNumber"))
    assert math.isnan(convert(NAN, "MLNumber"))
    assert math.isnan(convert("abc", "MLNumber"))


# -- boolean, strings, enums -----------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    (True, True), (False, False), (0, False), (-0.0, False), (NAN, False), (2, True), ("", False),
    ("0", True), ("false", True), (None, False), (NULL, False), ([], True), ({}, True), (np.bool_(True), True),
])
def test_boolean(value, expected):
    assert convert(value, "boolean") is expected


@pytest.mark.parametrize("value, expected", [
    ("x", "x"), (5, "5"), (-5, "-5"), (1.5, "1.5"), (1.0, "1"), (-0.0, "0"), (1e21, "1e+21"), (1e-7, "1e-7"),
    (123456789012345680000.0, "123456789012345680000"), (0.000001, "0.000001"), (NAN, "NaN"), (-INF, "-Infinity"),
    (None, "undefined"), (NULL, "null"), (True, "true"),
])
def test_domstring_tostring(value, expected):
    assert convert(value, "DOMString") == expected


def test_strings():
    type_error(convert, [], "DOMString")
    type_error(convert, object(), "USVString")
    assert convert("\ud800x", "USVString") == "\ufffdx"                      # lone surrogate
    assert convert("\ud83d\ude00", "USVString") == "\U0001F600"               # a pair joins up
    assert convert("\ud800x", "DOMString") == "\ud800x"                      # DOMString keeps it
    assert convert("\xff", "ByteString") == "\xff"
    type_error(convert, "\u0100", "ByteString")


def test_enums():
    assert ENUMS["MLOperandDataType"] == generated.MLOperandDataType == (
        "float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8")
    assert convert("nhwc", "MLInputOperandLayout") == "nhwc"
    with pytest.raises(TypeError, match=r"'NCHW' is not a valid value of enum MLInputOperandLayout"):
        convert("NCHW", "MLInputOperandLayout")
    type_error(convert, None, "MLInputOperandLayout")     # ToString(undefined) = "undefined"
    type_error(convert, 5, "MLInputOperandLayout")


def test_nullable():
    assert convert(None, "long?") is None
    assert convert(NULL, "long?") is None
    assert convert(5, "long?") == 5
    assert convert(None, "MLOperand?") is None
    type_error(convert, None, "MLOperand")


# -- sequences and records -------------------------------------------------------------------------

SEQ = "sequence<[EnforceRange] unsigned long>"


@pytest.mark.parametrize("value", [[1, 2, 3], (1, 2, 3), (x for x in (1, 2, 3)), np.array([1, 2, 3]),
                                   range(1, 4), array.array("i", [1, 2, 3]), [1.9, 2, "3"]])
def test_sequence_from_iterables(value):
    result = convert(value, SEQ)
    assert result == [1, 2, 3] and type(result) is list


@pytest.mark.parametrize("value", ["123", {"0": 1}, 5, None, NULL, np.float32(1.0), np.array(5), b"\x01"])
def test_sequence_rejects_non_iterable_objects(value):
    type_error(convert, value, SEQ)


def test_sequence_errors_name_the_element():
    with pytest.raises(TypeError, match=r"^padding: element 1: -1 is outside the range"):
        convert([1, -1], SEQ, "padding")


def test_nested_sequence_and_frozen_array():
    assert convert([[1], (2, 3)], "sequence<sequence<long>>") == [[1], [2, 3]]
    assert convert([1, 2], "FrozenArray<unsigned long>") == (1, 2)
    assert convert([], SEQ) == []
    assert convert(["relu", "tanh"], "sequence<MLRecurrentNetworkActivation>") == ["relu", "tanh"]
    type_error(convert, ["relu", "gelu"], "sequence<MLRecurrentNetworkActivation>")


def test_record():
    a, b = FakeOperand(), FakeOperand()
    assert convert({"x": a, "y": b}, "MLNamedOperands") == {"x": a, "y": b}
    assert list(convert({"b": a, "a": b}, "MLNamedOperands")) == ["b", "a"]       # insertion order kept
    assert convert({}, "MLNamedOperands") == {}
    assert convert({"\ud800": a}, "MLNamedOperands") == {"\ufffd": a}              # USVString keys
    with pytest.raises(TypeError, match=r"value of key 'y'.*is not of type 'MLOperand'"):
        convert({"x": a, "y": 3}, "MLNamedOperands", "outputs")
    for bad in ([a], 5, "x", None):
        type_error(convert, bad, "MLNamedOperands")
    assert convert({5: a}, "MLNamedOperands") == {"5": a}     # keys are ToString'ed, as JS property keys
    type_error(convert, {(1, 2): a}, "MLNamedOperands")       # a tuple has no JS string form
    type_error(convert, {"x": None}, "MLNamedTensors")          # undefined is not an MLTensor


# -- WebIDL "Dictionary types" ---------------------------------------------------------------------

class RecordingMapping(Mapping):
    """A dict that records the order in which members are read."""

    def __init__(self, data):
        self.data, self.reads = dict(data), []

    def __getitem__(self, key):
        return self.data[key]

    def get(self, key, default=None):
        self.reads.append(key)
        return self.data.get(key, default)

    def __iter__(self):
        return iter(self.data)

    def __len__(self):
        return len(self.data)


def test_dictionary_defaults():
    assert convert_dictionary("MLConv2dOptions", None) == {
        "label": "", "filterLayout": "oihw", "groups": 1, "inputLayout": "nchw"}
    assert convert_dictionary("MLConv2dOptions", {}) == convert_dictionary("MLConv2dOptions", None)
    assert convert_dictionary("MLContextOptions", None) == {
        "accelerated": True, "devicePreference": "auto", "modelFormat": "tflite", "numThreads": 0,
        "powerPreference": "default"}
    # Defaults are converted to the member's type: `double alpha = 1` is 1.0 ...
    elu = convert_dictionary("MLEluOptions", None)
    assert elu["alpha"] == 1.0 and type(elu["alpha"]) is float
    bn = convert_dictionary("MLBatchNormalizationOptions", None)
    assert bn == {"label": "", "axis": 1, "epsilon": 1e-5}
    # ... and `MLNumber value = 0` is what script's 0 converts to.
    assert convert_dictionary("MLPadOptions", None) == {"label": "", "mode": "constant", "value": 0}


def test_dictionary_members_converted_and_unknown_ignored():
    bias = FakeOperand()
    out = convert_dictionary("MLConv2dOptions", {
        "padding": [1, 2.7, 3, "4"], "groups": 2.9, "bias": bias, "label": 5, "unknown": object(),
        "filter_layout": "nope"})
    assert out == {"label": "5", "bias": bias, "filterLayout": "oihw", "groups": 2, "inputLayout": "nchw",
                   "padding": [1, 2, 3, 4]}
    assert list(out) == ["label", "bias", "filterLayout", "groups", "inputLayout", "padding"]


def test_dictionary_none_member_is_not_present():
    assert convert_dictionary("MLConv2dOptions", {"groups": None, "bias": None})["groups"] == 1
    assert "bias" not in convert_dictionary("MLConv2dOptions", {"bias": None})
    # An explicit JS null is present (WebIDL): converted, here ToBoolean(null) = false.
    assert convert_dictionary("MLTensorDescriptor", {"dataType": "int8", "shape": [], "readable": NULL})[
        "readable"] is False
    type_error(convert_dictionary, "MLConv2dOptions", {"bias": NULL})


def test_dictionary_required_members():
    assert convert_dictionary("MLOperandDescriptor", {"dataType": "float32", "shape": (2, 3)}) == {
        "dataType": "float32", "shape": [2, 3]}
    with pytest.raises(TypeError, match=r"required member 'shape' of MLOperandDescriptor is missing"):
        convert_dictionary("MLOperandDescriptor", {"dataType": "float32"})
    with pytest.raises(TypeError, match=r"required member 'dataType'"):
        convert_dictionary("MLOperandDescriptor", None)
    with pytest.raises(TypeError, match=r"required member 'dataType'"):
        convert_dictionary("MLOperandDescriptor", {"dataType": None, "shape": []})


def test_dictionary_inheritance_and_read_order():
    value = RecordingMapping({"shape": [4], "dataType": "uint8", "writable": 1})
    out = convert_dictionary("MLTensorDescriptor", value)
    assert out == {"dataType": "uint8", "shape": [4], "readable": False, "writable": True}
    # Base dictionary first, then each level in lexicographic order.
    assert value.reads == ["dataType", "shape", "readable", "writable"]
    options = RecordingMapping({})
    convert_dictionary("MLConv2dOptions", options)
    assert options.reads == ["label", "bias", "dilations", "filterLayout", "groups", "inputLayout", "padding",
                             "strides"]


def test_dictionary_member_errors_name_the_member():
    with pytest.raises(TypeError, match=r"member 'padding' of MLConv2dOptions: element 1: NaN"):
        convert_dictionary("MLConv2dOptions", {"padding": [1, NAN]})
    with pytest.raises(TypeError, match=r"member 'label' of MLOperatorOptions"):
        convert_dictionary("MLConv2dOptions", {"label": []})


@pytest.mark.parametrize("value", [5, 1.5, "str", True])
def test_dictionary_rejects_non_objects(value):
    with pytest.raises(TypeError, match="is not an object"):
        convert_dictionary("MLConv2dOptions", value)


def test_dictionary_from_plain_objects_and_nesting():
    assert convert_dictionary("MLOperandDescriptor", SimpleNamespace(dataType="int32", shape=[1]))[
        "shape"] == [1]
    # A list is an object without such members: all defaults.
    assert convert_dictionary("MLOperatorOptions", [1, 2]) == {"label": ""}
    assert convert_dictionary("MLTensorLimits", {"rankRange": {"min": 1}, "dataTypes": ["int8"]}) == {
        "dataTypes": ["int8"], "rankRange": {"min": 1}}


def test_dictionary_tables():
    members = DICTIONARIES["MLTensorDescriptor"].members
    assert [(m.name, m.declared_in) for m in members] == [
        ("dataType", "MLOperandDescriptor"), ("shape", "MLOperandDescriptor"),
        ("readable", "MLTensorDescriptor"), ("writable", "MLTensorDescriptor")]
    shape = members[1]
    assert shape.type_text == "sequence<[EnforceRange] unsigned long>" and shape.required
    assert shape.default is webidl.NO_DEFAULT
    assert DICTIONARIES["MLTensorDescriptor"].inherits == "MLOperandDescriptor"
    # Partial dictionaries merged: argMin/argMax come from a `partial dictionary MLOpSupportLimits`.
    names = [m.name for m in DICTIONARIES["MLOpSupportLimits"].members]
    assert "argMin" in names and "where" in names and names == sorted(names)
    # Typedefs
    assert TYPEDEFS["MLNumber"] == parse_type("(bigint or unrestricted double)")
    assert INCLUDES == (("Navigator", "NavigatorML"), ("WorkerNavigator", "NavigatorML"))


# -- interface types -------------------------------------------------------------------------------

def test_interfaces():
    op = FakeOperand()
    assert convert(op, "MLOperand") is op
    assert convert(SubOperand(), "MLOperand").__class__ is SubOperand
    with pytest.raises(TypeError, match=r"is not of type 'MLOperand'"):
        convert(FakeTensor(), "MLOperand")
    with pytest.raises(TypeError, match=r"^input: 5 is not of type 'MLOperand'"):
        convert(5, "MLOperand", "input")
    type_error(convert, {"dataType": "float32"}, "MLOperand")
    type_error(convert, SimpleNamespace(), "GPUDevice")           # never on the host
    assert convert("anything", "any") == "anything"
    assert convert(op, "object") is op
    type_error(convert, 5, "object")


def test_register_interface_returns_the_class():
    class Thing:
        pass
    assert register_interface("MLTestOnlyThing", Thing) is Thing
    assert convert(Thing(), "MLTestOnlyThing").__class__ is Thing


# -- WebIDL "Buffer source types" ------------------------------------------------------------------

def test_buffer_bytes_are_array_buffers():
    bs = convert(b"abcd", "AllowSharedBufferSource")
    assert isinstance(bs, BufferSource)
    assert (bs.byte_length, bs.is_view, bs.element_type) == (4, False, None)
    assert bs.to_bytes() == b"abcd"
    type_error(bs.copy_from, b"wxyz")                            # bytes are immutable
    ba = bytearray(b"\0\0\0")
    convert(ba, "ArrayBuffer").copy_from(b"xyz")
    assert ba == bytearray(b"xyz")


def test_buffer_numpy_view_with_offset():
    base = np.arange(8, dtype=np.float32)
    view = base[2:5]                                              # byte offset 8 into base
    bs = convert(view, "AllowSharedBufferSource")
    assert (bs.byte_length, bs.is_view, bs.element_type) == (12, True, "Float32Array")
    assert bs.to_bytes() == np.array([2, 3, 4], np.float32).tobytes()
    dest = np.zeros(3, np.float32)
    bs.copy_to(memoryview(dest.view(np.uint8)))
    assert dest.tolist() == [2, 3, 4]
    bs.copy_from(np.array([20, 30, 40], np.float32))             # writes into the caller's array
    assert base.tolist() == [0, 1, 20, 30, 40, 5, 6, 7]
    bs.copy_from(bytes(np.array([7, 8, 9], np.float32).view(np.uint8)))
    assert base.tolist() == [0, 1, 7, 8, 9, 5, 6, 7]


def test_buffer_copy_size_must_match():
    bs = convert(np.zeros(4, np.int32), "ArrayBufferView")
    with pytest.raises(ValueError):
        bs.copy_to(bytearray(15))
    with pytest.raises(ValueError):
        bs.copy_from(b"\0" * 17)


@pytest.mark.parametrize("value, element_type, nbytes", [
    (np.zeros((2, 3), np.float32), "Float32Array", 24),
    (np.zeros(2, np.float16), "Float16Array", 4),
    (np.zeros(2, np.int64), "BigInt64Array", 16),
    (np.zeros(2, np.uint64), "BigUint64Array", 16),
    (np.zeros(2, np.int8), "Int8Array", 2),
    (np.zeros(2, np.uint8), "Uint8Array", 2),
    (np.zeros(2, np.int32), "Int32Array", 8),
    (np.zeros(2, np.uint32), "Uint32Array", 8),
    (np.zeros(2, np.float64), "Float64Array", 16),
    (np.zeros(2, ">f4"), "DataView", 8),           # non-native byte order: no typed array matches
    (np.zeros(2, np.bool_), "DataView", 2),
    (np.zeros(0, np.float32), "Float32Array", 0),
    (array.array("d", [1.0]), "Float64Array", 8),
    (memoryview(bytearray(5)), "Uint8Array", 5),
])
def test_buffer_view_element_types(value, element_type, nbytes):
    bs = convert(value, "AllowSharedBufferSource")
    assert (bs.is_view, bs.element_type, bs.byte_length) == (True, element_type, nbytes)


def test_buffer_type_restrictions():
    type_error(convert, np.zeros(8)[::2], "AllowSharedBufferSource")   # not contiguous
    for bad in (5, [1, 2], "abc", None, {"a": 1}):
        type_error(convert, bad, "AllowSharedBufferSource")
    type_error(convert, b"abc", "ArrayBufferView")                     # a buffer is not a view
    type_error(convert, np.zeros(2, np.float32), "ArrayBuffer")         # a view is not a buffer
    type_error(convert, np.zeros(2, np.int32), "Float32Array")
    assert convert(np.zeros(2, np.float32), "Float32Array").element_type == "Float32Array"
    assert convert(b"", "BufferSource").byte_length == 0
    readonly = np.zeros(2, np.float32)
    readonly.flags.writeable = False
    type_error(convert(readonly, "ArrayBufferView").copy_from, np.zeros(2, np.float32))


# -- WebIDL "overload resolution algorithm" --------------------------------------------------------

def test_convert_arguments_defaults_and_optional():
    a, b = FakeOperand(), FakeOperand()
    index, args = convert_arguments("MLGraphBuilder", "conv2d", (a, b))
    assert index == 0 and args[:2] == [a, b]
    assert args[2] == {"label": "", "filterLayout": "oihw", "groups": 1, "inputLayout": "nchw"}
    # undefined for an optional argument is as if omitted; extra arguments are ignored.
    assert convert_arguments("MLGraphBuilder", "conv2d", (a, b, None))[1] == [a, b, args[2]]
    assert len(convert_arguments("MLGraphBuilder", "conv2d", (a, b, {}, 99, 100))[1]) == 3
    # Each call gets its own dictionary.
    assert convert_arguments("MLGraphBuilder", "conv2d", (a, b))[1][2] is not args[2]


def test_convert_arguments_too_few():
    with pytest.raises(TypeError, match=r"^Failed to execute 'conv2d' on 'MLGraphBuilder': "
                                        r"2 arguments required, but only 1 present\.$"):
        convert_arguments("MLGraphBuilder", "conv2d", (FakeOperand(),))
    with pytest.raises(TypeError, match=r"1 argument required, but only 0 present"):
        convert_arguments("MLGraphBuilder", "constant", ())
    with pytest.raises(TypeError, match=r"Failed to construct 'MLGraphBuilder'"):
        convert_arguments("MLGraphBuilder", "constructor", ())


def test_convert_arguments_names_the_parameter():
    with pytest.raises(TypeError, match=r"'argMin' on 'MLGraphBuilder': parameter 2 \('axis'\): NaN"):
        convert_arguments("MLGraphBuilder", "argMin", (FakeOperand(), NAN))
    with pytest.raises(TypeError, match=r"parameter 1 \('input'\).*is not of type 'MLOperand'"):
        convert_arguments("MLGraphBuilder", "relu", (FakeTensor(),))
    # cumulativeSum's axis has no [EnforceRange]: it wraps.
    assert convert_arguments("MLGraphBuilder", "cumulativeSum", (FakeOperand(), -1))[1][1] == 4294967295


def test_constant_overloads():
    tensor = FakeTensor()
    desc = {"dataType": "float32", "shape": [2]}
    index, args = convert_arguments("MLGraphBuilder", "constant", (desc, np.zeros(2, np.float32)))
    assert index == 0 and isinstance(args[1], BufferSource)
    assert convert_arguments("MLGraphBuilder", "constant", ("int64", 2 ** 60 + 1)) == (1, ["int64", 2 ** 60 + 1])
    assert convert_arguments("MLGraphBuilder", "constant", ("float32", 0.5)) == (1, ["float32", 0.5])
    assert convert_arguments("MLGraphBuilder", "constant", (tensor,)) == (2, [tensor])
    # A number at the distinguishing index goes to the string (enum) overload and fails there.
    type_error(convert_arguments, "MLGraphBuilder", "constant", (5, 5), match="not a valid value of enum")
    # null/undefined picks the dictionary overload; its required members are missing.
    type_error(convert_arguments, "MLGraphBuilder", "constant", (None, b""), match="required member")
    # One argument: only constant(MLTensor) has that length.
    type_error(convert_arguments, "MLGraphBuilder", "constant", ("float32",), match="not of type 'MLTensor'")


def test_create_context_overloads():
    defaults = {"accelerated": True, "devicePreference": "auto", "modelFormat": "tflite", "numThreads": 0,
                "powerPreference": "default"}
    assert convert_arguments("ML", "createContext", ()) == (0, [defaults])
    assert convert_arguments("ML", "createContext", (None,)) == (0, [defaults])
    assert convert_arguments("ML", "createContext", ({"powerPreference": "low-power", "numThreads": 4},)) == (
        0, [dict(defaults, powerPreference="low-power", numThreads=4)])
    assert convert_arguments("ML", "createContext", (SimpleNamespace(accelerated=False),))[1][0][
        "accelerated"] is False
    # Neither a GPUDevice nor an object: no overload takes a number.
    type_error(convert_arguments, "ML", "createContext", (5,), match="no overload accepts")
    # The loader draft's "auto" power preference is not WebNN's (see idl/model_loader.idl).
    type_error(convert_arguments, "ML", "createContext", ({"powerPreference": "auto"},))


def test_read_tensor_overloads_by_count():
    tensor = FakeTensor()
    assert convert_arguments("MLContext", "readTensor", (tensor,)) == (0, [tensor])
    index, args = convert_arguments("MLContext", "readTensor", (tensor, bytearray(4)))
    assert index == 1 and args[1].byte_length == 4
    type_error(convert_arguments, "MLContext", "readTensor", (tensor, None))


def test_split_union_argument():
    op = FakeOperand()
    assert convert_arguments("MLGraphBuilder", "split", (op, 3))[1][1] == 3
    assert convert_arguments("MLGraphBuilder", "split", (op, [1, 2.5]))[1][1] == [1, 2]
    assert convert_arguments("MLGraphBuilder", "split", (op, "4"))[1][1] == 4
    type_error(convert_arguments, "MLGraphBuilder", "split", (op, -1))
    type_error(convert_arguments, "MLGraphBuilder", "split", (op, {}))       # ToNumber({}) is NaN


def test_other_members():
    ctx, graph, tensor = FakeContext(), FakeGraph(), FakeTensor()
    assert convert_arguments("MLGraphBuilder", "constructor", (ctx,)) == (0, [ctx])
    assert convert_arguments("MLContext", "dispatch", (graph, {"x": tensor}, {})) == (0, [graph, {"x": tensor}, {}])
    assert convert_arguments("MLContext", "destroy", ()) == (0, [])
    index, args = convert_arguments("MLContext", "createTensor", ({"dataType": "int32", "shape": [3],
                                                                    "readable": True},))
    assert args == [{"dataType": "int32", "shape": [3], "readable": True, "writable": False}]
    with pytest.raises(KeyError):
        convert_arguments("MLGraphBuilder", "noSuchOperation", ())


def test_model_loader_members():
    assert convert_arguments("MLModelLoader", "constructor", (FakeContext(),))[0] == 0
    assert convert_arguments("MLModelLoader", "load", (b"TFL3",))[1][0].to_bytes() == b"TFL3"
    type_error(convert_arguments, "MLModelLoader", "load", (np.zeros(4, np.uint8),))   # a view, not an ArrayBuffer
    data = np.array([10], np.float32)
    _, (inputs,) = convert_arguments("MLModel", "compute", ({"x": {"data": data, "dimensions": [1]}},))
    assert inputs["x"]["dimensions"] == [1] and inputs["x"]["data"].element_type == "Float32Array"
    type_error(convert_arguments, "MLModel", "compute", ({"x": {"data": b"\0\0\0\0", "dimensions": [1]}},))


def test_missing_for_optional_without_default():
    overloads = (webidl.Overload((webidl.Argument("a", "long", parse_type("long")),
                                  webidl.Argument("b", "long", parse_type("long"), optional=True))),)
    assert webidl.resolve_overloads(overloads, (1,), "f") == (0, [1, MISSING])
    assert webidl.resolve_overloads(overloads, (1, None), "f") == (0, [1, MISSING])
    assert webidl.resolve_overloads(overloads, (1, 2), "f") == (0, [1, 2])


def test_variadic():
    overloads = (webidl.Overload((webidl.Argument("a", "DOMString", parse_type("DOMString")),
                                  webidl.Argument("rest", "long", parse_type("long"), variadic=True))),)
    assert webidl.resolve_overloads(overloads, ("x",), "f") == (0, ["x"])
    assert webidl.resolve_overloads(overloads, ("x", 1, 2.5, "3"), "f") == (0, ["x", 1, 2, 3])


# -- the IDL type parser ---------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "unsigned long long", "unrestricted double", "sequence<[EnforceRange] unsigned long>",
    "([EnforceRange] unsigned long or sequence<[EnforceRange] unsigned long>)", "record<USVString, MLTensor>",
    "Promise<record<DOMString, MLModelTensor>>", "MLOperand?", "FrozenArray<unsigned long>", "long long",
])
def test_parse_type_round_trips(text):
    assert str(parse_type(text)) == text


def test_parse_type_structure():
    t = parse_type("sequence<[EnforceRange] unsigned long>?")
    assert t == webidl.IdlType("sequence", (webidl.IdlType("unsigned long", ext=("EnforceRange",)),), True)
    with pytest.raises(ValueError):
        parse_type("sequence<long")


# -- generated data and metadata -------------------------------------------------------------------

def test_interface_tables():
    builder = INTERFACES["MLGraphBuilder"]
    assert builder.exposed == ("Window", "Worker") and builder.secure_context
    assert len(builder.constructors) == 1
    assert [len(o.arguments) for o in builder.operations["constant"]] == [2, 2, 1]
    axis = builder.operations["argMin"][0].arguments[1]
    assert axis.type.ext == ("EnforceRange",) and axis.type_text == "[EnforceRange] unsigned long"
    options = builder.operations["argMin"][0].arguments[2]
    assert options.optional and options.default == {}
    assert INTERFACES["NavigatorML"].kind == "mixin"
    ml_attr = INTERFACES["NavigatorML"].attributes[0]
    assert ml_attr.readonly and dict(ml_attr.ext) == {"SecureContext": None, "SameObject": None}
    assert INTERFACES["MLModel"].exposed == ("Window", "Worker")   # idl/model_loader.idl widens the draft


def load_metadata() -> dict:
    text = (ROOT / "js_shim" / "generated" / "webidl_metadata.js").read_text(encoding="utf-8")
    assert text.startswith("// GENERATED by tools/gen_bindings.py from idl/*.idl \u2014 do not edit")
    body = re.search(r"const WEBNN_IDL_METADATA = (\{.*?\});\n", text, re.S).group(1)
    return json.loads(body)


def test_js_metadata():
    meta = load_metadata()
    builder = meta["interfaces"]["MLGraphBuilder"]
    assert builder["exposed"] == ["Window", "Worker"] and builder["secureContext"] is True
    assert builder["hasConstructor"] and builder["ctor"]["length"] == 1
    ops = {op["name"]: op for op in builder["operations"]}
    assert ops["constant"]["length"] == 1 and len(ops["constant"]["overloads"]) == 3
    assert ops["conv2d"]["length"] == 2 and ops["gru"]["length"] == 5 and ops["build"]["length"] == 1
    ml_ops = {op["name"]: op for op in meta["interfaces"]["ML"]["operations"]}
    assert ml_ops["createContext"]["length"] == 0                   # options are optional
    assert meta["interfaces"]["ML"]["hasConstructor"] is False
    assert {op["name"]: op["length"] for op in meta["interfaces"]["MLContext"]["operations"]}["readTensor"] == 1
    assert meta["includes"] == [{"target": "Navigator", "mixin": "NavigatorML"},
                                {"target": "WorkerNavigator", "mixin": "NavigatorML"}]
    ml_attr = meta["mixins"]["NavigatorML"]["attributes"][0]
    assert (ml_attr["name"], ml_attr["sameObject"], ml_attr["secureContext"], ml_attr["readonly"]) == (
        "ml", True, True, True)
    shape = next(a for a in meta["interfaces"]["MLOperand"]["attributes"] if a["name"] == "shape")
    assert shape["type"] == "FrozenArray<unsigned long>"
    assert meta["enums"]["MLPowerPreference"] == ["default", "high-performance", "low-power"]
    assert meta["dictionaries"]["MLTensorDescriptor"]["inherits"] == "MLOperandDescriptor"


def run_generator(*args, root=ROOT):
    return subprocess.run([sys.executable, str(root / "tools" / "gen_bindings.py"), *args],
                          capture_output=True, text=True, cwd=root)


def test_generated_files_are_not_stale():
    result = run_generator("--check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_reports_stale_files(tmp_path):
    shutil.copytree(ROOT / "idl", tmp_path / "idl")
    shutil.copytree(ROOT / "tools", tmp_path / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "webnn_py" / "bindings", tmp_path / "webnn_py" / "bindings",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "js_shim" / "generated", tmp_path / "js_shim" / "generated")
    assert run_generator("--check", root=tmp_path).returncode == 0
    idl = tmp_path / "idl" / "extensions.idl"
    idl.write_text(idl.read_text() + "\nenum MLTestOnly { \"a\" };\n")
    result = run_generator("--check", root=tmp_path)
    assert result.returncode == 1
    assert "webnn_py/bindings/generated.py" in result.stderr
    assert "js_shim/generated/webidl_metadata.js" in result.stderr
    assert run_generator(root=tmp_path).returncode == 0
    assert "MLTestOnly = ('a',)" in (tmp_path / "webnn_py" / "bindings" / "generated.py").read_text()
    assert run_generator("--check", root=tmp_path).returncode == 0
    # A syntax error is reported, not silently skipped.
    idl.write_text("interface { };\n")
    result = run_generator("--check", root=tmp_path)
    assert result.returncode == 2 and "widlparser reported errors" in result.stderr


def test_generation_is_deterministic():
    spec = importlib.util.spec_from_file_location("_gen_bindings_under_test", ROOT / "tools" / "gen_bindings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    first, second = module.generate(), module.generate()
    assert first == second
    assert first[module.PY_OUT].startswith("# GENERATED by tools/gen_bindings.py from idl/*.idl \u2014 do not edit")


# -- the IDL files themselves ----------------------------------------------------------------------

IDL_FILES = sorted((ROOT / "idl").glob("*.idl"))


@pytest.mark.parametrize("path", IDL_FILES, ids=[p.name for p in IDL_FILES])
def test_idl_parses_with_widlparser(path):
    import widlparser

    messages = []

    class UI:
        def warn(self, msg):
            messages.append(msg)

        def note(self, msg):
            pass

    parser = widlparser.Parser(path.read_text(encoding="utf-8"), UI())
    assert messages == []
    assert all(type(c).__name__ != "SyntaxError" for c in parser.constructs)


def _webidl2_dir() -> Path | None:
    candidates = [ROOT / "node_modules"] + [Path(p) for p in os.environ.get("NODE_PATH", "").split(os.pathsep) if p]
    for base in candidates:
        if (base / "webidl2" / "package.json").exists():
            return base
    return None


def test_idl_parses_with_webidl2():
    base = _webidl2_dir()
    if base is None:
        pytest.skip("npm webidl2 is not installed (node_modules/webidl2 absent; the setup scripts install it)")
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH")
    script = (
        "const fs = require('fs'); const w = require('webidl2');"
        "const files = JSON.parse(process.argv[1]);"
        "const asts = files.map(f => w.parse(fs.readFileSync(f, 'utf8'), {sourceName: f}));"
        "const errors = w.validate(asts).map(e => e.message);"
        "console.log(JSON.stringify({counts: asts.map(a => a.length), errors}));"
    )
    env = dict(os.environ, NODE_PATH=str(base))
    result = subprocess.run(["node", "-e", script, json.dumps([str(p) for p in IDL_FILES])],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["errors"] == []
    counts = dict(zip([p.name for p in IDL_FILES], report["counts"]))
    assert counts["webnn.idl"] > 100 and counts["extensions.idl"] > 0


def spec_idl_index() -> str:
    lines = SPEC.read_text(encoding="utf-8").splitlines()
    start = lines.index("IDL 索引")
    # The index runs to the end of the file except for the issue index that follows it.
    end = lines.index("課題索引", start)
    return "\n".join(lines[start + 1:end])


def test_webnn_idl_is_the_spec_idl_index():
    if not SPEC.exists():
        pytest.skip(f"the spec text is not at {SPEC}")
    ours = (ROOT / "idl" / "webnn.idl").read_text(encoding="utf-8")
    assert re.sub(r"\s+", "", ours) == re.sub(r"\s+", "", spec_idl_index())


# -- BigInts and exceptions from page code (issue 19, items 5 and 6) --------------------------------

@pytest.mark.parametrize("idl_type", ["byte", "octet", "short", "unsigned short", "long", "unsigned long",
                                      "long long", "unsigned long long", "[EnforceRange] unsigned long",
                                      "[Clamp] long", "float", "unrestricted float", "double",
                                      "unrestricted double", "sequence<[EnforceRange] unsigned long>",
                                      "(unsigned long or sequence<long>)"])
def test_a_bigint_is_a_type_error_wherever_webidl_runs_to_number(idl_type):
    # ConvertToInt step 1 and the float/double conversions start with ToNumber, which
    # throws a TypeError for a BigInt (ECMA-262 ToNumber, "BigInt: throw").
    value = webidl.JsBigInt(3)
    with pytest.raises(TypeError, match=r"the BigInt 3n cannot be converted to a number"):
        webidl.convert([value] if idl_type.startswith("sequence") else value, idl_type, "shape")


def test_a_bigint_goes_where_bigint_is_accepted_and_a_number_stays_a_number():
    big = webidl.JsBigInt(2 ** 60)
    assert webidl.convert(big, "bigint") == 2 ** 60
    assert webidl.convert(big, "(bigint or unrestricted double)") == 2 ** 60
    assert webidl.convert(big, "DOMString") == str(2 ** 60)        # ToString(BigInt) is defined
    assert webidl.convert(big, "boolean") is True
    assert webidl.js_kind(big) == "bigint" and webidl.js_kind(3) == "number"
    assert webidl.convert(3, "[EnforceRange] unsigned long") == 3
    out = webidl.convert_dictionary("MLOperandDescriptor", {"dataType": "int32", "shape": [2, 3]})
    assert out == {"dataType": "int32", "shape": [2, 3]}
    with pytest.raises(TypeError, match=r"member 'shape'.*element 0.*BigInt 2n"):
        webidl.convert_dictionary("MLOperandDescriptor", {"dataType": "int32", "shape": [webidl.JsBigInt(2)]})


def test_exceptions_from_host_code_run_by_a_conversion_propagate_unchanged():
    # On the host, "page code" is Python: a property, __iter__, a Mapping's get.
    mine = ValueError("mine")

    class Descriptor:
        @property
        def dataType(self):
            raise mine

    class Shape:
        def __iter__(self):
            raise mine

    for value, idl_type in ((Descriptor(), "MLOperandDescriptor"),
                            ({"dataType": "int32", "shape": Shape()}, "MLOperandDescriptor")):
        with pytest.raises(ValueError) as caught:
            webidl.convert(value, idl_type)
        assert caught.value is mine


def test_script_arguments_on_the_host_is_the_arguments_as_given():
    assert webidl.script_arguments([1, "a", None]) == (1, "a", None)
