"""The JsProxy paths of webnn_py/bindings/webidl.py, with real JS values: runs only inside Pyodide.

Plain functions named test_* with plain asserts (pytest is absent in Pyodide);
tests/test_pyodide.py runs this module through tests/pyodide/run_portable.mjs.
Its file name does not start with test_, so host pytest does not collect it.
"""
from __future__ import annotations

import array
import math

from pyodide.code import run_js
from pyodide.ffi import JsProxy, create_proxy

from webnn_py.bindings import (
    BufferSource,
    convert,
    convert_arguments,
    convert_dictionary,
    register_interface,
)


class _Operand:
    pass


class _Tensor:
    pass


register_interface("MLOperand", _Operand)
register_interface("MLTensor", _Tensor)


def _raises_type_error(fn, *args, contains=None):
    try:
        fn(*args)
    except TypeError as exc:
        assert contains is None or contains in str(exc), str(exc)
        return
    raise AssertionError(f"{fn.__name__}{args!r} did not raise TypeError")


# -- dictionaries -----------------------------------------------------------------------------------

def test_dictionary_from_js_object():
    obj = run_js("({shape: [2, 3.9], dataType: 'float32', readable: 1, writable: undefined, extra: {}})")
    assert isinstance(obj, JsProxy)
    out = convert_dictionary("MLTensorDescriptor", obj)
    assert out == {"dataType": "float32", "shape": [2, 3], "readable": True, "writable": False}, out


def test_dictionary_member_read_order_and_getters():
    # A Proxy records every [[Get]]: base dictionary first, lexicographic per level.
    obj = run_js("""
      globalThis.__reads = [];
      new Proxy({dataType: 'int8', shape: []}, {
        get(target, key) { if (typeof key === 'string') __reads.push(key); return target[key]; }
      })""")
    run_js("__reads.length = 0")      # forget Pyodide's own probing while it made the JsProxy
    convert_dictionary("MLTensorDescriptor", obj)
    reads = list(run_js("__reads"))
    assert reads == ["dataType", "shape", "readable", "writable"], reads
    # Members inherited through the prototype chain and getters count (JS [[Get]]).
    obj = run_js("Object.create({dataType: 'uint8'}, {shape: {get() { return [4]; }}})")
    assert convert_dictionary("MLOperandDescriptor", obj) == {"dataType": "uint8", "shape": [4]}


def test_dictionary_missing_required_and_null_member():
    _raises_type_error(convert_dictionary, "MLOperandDescriptor", run_js("({dataType: 'float32'})"),
                       contains="required member 'shape'")
    # null arrives as None (unless the runtime hands out jsnull): not present -> default.
    out = convert_dictionary("MLConv2dOptions", run_js("({groups: null, bias: null})"))
    assert out["groups"] == 1 and "bias" not in out


def test_dictionary_non_object():
    _raises_type_error(convert_dictionary, "MLConv2dOptions", run_js("42"), contains="is not an object")
    _raises_type_error(convert_dictionary, "MLConv2dOptions", run_js("'str'"), contains="is not an object")
    assert convert_dictionary("MLConv2dOptions", run_js("undefined"))["groups"] == 1


# -- sequences and records ----------------------------------------------------------------------------

def test_sequence_from_js_iterables():
    seq = "sequence<[EnforceRange] unsigned long>"
    assert convert(run_js("[1, 2.7, 3]"), seq) == [1, 2, 3]
    assert convert(run_js("new Uint32Array([4, 5])"), seq) == [4, 5]
    assert convert(run_js("new Set([7, 8])"), seq) == [7, 8]
    assert convert(run_js("(function* () { yield 9; yield 10; })()"), seq) == [9, 10]
    _raises_type_error(convert, run_js("({length: 2, 0: 1, 1: 2})"), seq, contains="not an iterable object")
    _raises_type_error(convert, run_js("'12'"), seq)
    _raises_type_error(convert, run_js("[1, -1]"), seq, contains="element 1")


def test_record_from_js_object():
    op = _Operand()
    handle = create_proxy(op)         # outlives the call, unlike a borrowed argument proxy
    obj = run_js("(op) => { const o = Object.create({inherited: op}); o.b = op; o.a = op;"
                 " o[Symbol('s')] = op; Object.defineProperty(o, 'hidden', {value: op, enumerable: false});"
                 " return o; }")(handle)
    out = convert(obj, "MLNamedOperands")
    assert list(out) == ["b", "a"] and out["a"] is op, out
    handle.destroy()
    # The shim's way: Python returns an operand to JS (Pyodide makes a PyProxy),
    # JS puts it in a record, the record comes back to Python.
    obj = run_js("(make) => ({x: make()})")(lambda: op)
    assert convert(obj, "MLNamedOperands")["x"] is op
    _raises_type_error(convert, run_js("({x: 5})"), "MLNamedOperands", contains="is not of type 'MLOperand'")


# -- buffer sources -----------------------------------------------------------------------------------

def test_float32array_and_subarray_offsets():
    whole = run_js("new Float32Array([0, 1, 2, 3, 4, 5])")
    bs = convert(whole, "AllowSharedBufferSource")
    assert isinstance(bs, BufferSource)
    assert (bs.byte_length, bs.is_view, bs.element_type) == (24, True, "Float32Array")
    sub = whole.subarray(2, 5)                                   # byteOffset 8, byteLength 12
    bs = convert(sub, "AllowSharedBufferSource")
    assert bs.byte_length == 12
    assert bs.to_bytes() == array.array("f", [2, 3, 4]).tobytes()
    dest = array.array("f", [0, 0, 0])
    bs.copy_to(dest)
    assert list(dest) == [2, 3, 4]
    # copy_from writes into the caller's JS buffer, only within the view.
    bs.copy_from(array.array("f", [20, 30, 40]))
    assert list(whole.to_py()) == [0, 1, 20, 30, 40, 5], list(whole.to_py())


def test_array_buffer_and_data_view():
    buf = run_js("new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]).buffer")
    bs = convert(buf, "ArrayBuffer")
    assert (bs.byte_length, bs.is_view, bs.element_type) == (12, False, None)
    assert bs.to_bytes() == bytes(range(1, 13))
    dv = run_js("(b) => new DataView(b, 4, 6)")(buf)
    bs = convert(dv, "AllowSharedBufferSource")
    assert (bs.byte_length, bs.is_view, bs.element_type) == (6, True, "DataView")
    assert bs.to_bytes() == bytes(range(5, 11))
    bs.copy_from(b"abcdef")
    assert bytes(run_js("(b) => new Uint8Array(b)")(buf).to_py()) == bytes([1, 2, 3, 4]) + b"abcdef" + bytes([11, 12])
    out = bytearray(6)
    bs.copy_to(out)
    assert out == b"abcdef"
    _raises_type_error(convert, dv, "ArrayBuffer")
    _raises_type_error(convert, buf, "ArrayBufferView")


def test_shared_array_buffer():
    sab = run_js("new SharedArrayBuffer(8)")
    bs = convert(sab, "AllowSharedBufferSource")
    assert (bs.byte_length, bs.is_view, bs.is_shared) == (8, False, True)
    bs.copy_from(b"12345678")
    assert bytes(run_js("(b) => new Uint8Array(b)")(sab).to_py()) == b"12345678"
    view = run_js("(b) => new Int16Array(b, 2, 2)")(sab)
    bs = convert(view, "AllowSharedBufferSource")
    assert (bs.byte_length, bs.element_type, bs.to_bytes()) == (4, "Int16Array", b"3456")
    _raises_type_error(convert, sab, "ArrayBuffer")
    _raises_type_error(convert, view, "ArrayBufferView", contains="SharedArrayBuffer")
    assert convert(view, "[AllowShared] ArrayBufferView").byte_length == 4


def test_buffer_rejections():
    _raises_type_error(convert, run_js("({[Symbol.toStringTag]: 'Float32Array', byteLength: 4})"),
                       "AllowSharedBufferSource")
    _raises_type_error(convert, run_js("[1, 2]"), "AllowSharedBufferSource")
    _raises_type_error(convert, run_js("new ArrayBuffer(8, {maxByteLength: 16})"), "ArrayBuffer",
                       contains="resizable")
    _raises_type_error(convert, run_js("new Float32Array(new ArrayBuffer(8, {maxByteLength: 16}))"),
                       "AllowSharedBufferSource", contains="resizable")


def test_detached_buffer():
    buf = run_js("new ArrayBuffer(8)")
    bs = convert(run_js("(b) => new Float32Array(b)")(buf), "AllowSharedBufferSource")
    run_js("(b) => structuredClone(b, {transfer: [b]})")(buf)      # detaches buf
    _raises_type_error(bs.copy_from, bytes(8), contains="detached")
    _raises_type_error(bs.to_bytes, contains="detached")
    assert convert(buf, "ArrayBuffer").byte_length == 0


# -- primitives through the FFI and objects ----------------------------------------------------------

def test_numbers_and_strings_from_js():
    assert convert(run_js("4294967295"), "[EnforceRange] unsigned long") == 4294967295
    _raises_type_error(convert, run_js("4294967296"), "[EnforceRange] unsigned long")
    _raises_type_error(convert, run_js("NaN"), "[EnforceRange] unsigned long")
    assert convert(run_js("({valueOf() { return 7.5; }})"), "[EnforceRange] unsigned long") == 7
    assert convert(run_js("-1"), "unsigned long") == 4294967295
    assert convert(run_js("({toString() { return 'x'; }})"), "DOMString") == "x"
    _raises_type_error(convert, run_js("Symbol('s')"), "DOMString")
    assert convert(run_js("[1, 2]"), "DOMString") == "1,2"
    # MLNumber: a safe-integer Number and a BigInt both arrive as int; other Numbers as float.
    assert convert(run_js("5"), "MLNumber") == 5
    assert convert(run_js("2n ** 70n"), "MLNumber") == 2 ** 70
    value = convert(run_js("0.5"), "MLNumber")
    assert value == 0.5 and type(value) is float
    assert math.isnan(convert(run_js("undefined"), "MLNumber"))


def test_overloads_with_js_values():
    desc = run_js("({dataType: 'float32', shape: [2]})")
    index, args = convert_arguments("MLGraphBuilder", "constant", (desc, run_js("new Float32Array(2)")))
    assert index == 0 and args[1].element_type == "Float32Array"
    assert convert_arguments("MLGraphBuilder", "constant", ("float32", run_js("1.5"))) == (1, ["float32", 1.5])
    tensor = _Tensor()
    assert convert_arguments("MLGraphBuilder", "constant", (tensor,)) == (2, [tensor])
    index, args = convert_arguments("ML", "createContext", (run_js("({powerPreference: 'low-power'})"),))
    assert index == 0 and args[0]["powerPreference"] == "low-power"
    gpu = run_js("(() => { class GPUDevice {} return new GPUDevice(); })()")
    index, args = convert_arguments("ML", "createContext", (gpu,))
    assert index == 1 and args[0] is gpu
    _raises_type_error(convert_arguments, "MLGraphBuilder", "relu", (run_js("({})"),),
                       contains="is not of type 'MLOperand'")


def test_js_null_sentinel_if_available():
    try:
        from pyodide.ffi import jsnull
    except ImportError:
        return
    assert convert(jsnull, "long?") is None
    assert convert(jsnull, "double") == 0.0
    assert convert(jsnull, "DOMString") == "null"
