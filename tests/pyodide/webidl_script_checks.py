"""Page code run by the WebIDL conversions, with real JS values: runs only inside Pyodide
(tests/test_pyodide.py runs it under Node.js; plain asserts, no pytest).

Issue 19, items 5 and 6: what a getter, a Proxy trap, an iterator or valueOf/toString
throws is raised as a ScriptException holding exactly the thrown value (any JS value,
not a copy or a wrapper), and a BigInt is a TypeError wherever WebIDL's ToNumber runs
(every integer and floating-point type), while `bigint` unions still take it.
"""
from __future__ import annotations

from pyodide.code import run_js

from webnn_py.bindings import JsBigInt, ScriptException, convert, convert_dictionary, script_arguments

_SAME = run_js("(a, b) => Object.is(a, b)")

# JS expressions for thrown values of every kind: identity must hold for each.
_THROWN = {
    "an Error": "new Error('mine')",
    "a DOMException": "new DOMException('mine', 'DataError')",
    "a number": "42",
    "a string": "'mine'",
    "undefined": "undefined",
    "null": "null",
    "a plain object": "({ mine: true })",
    "a BigInt": "7n",
}


def _expect_thrown(fn, thrown, what):
    try:
        fn()
    except ScriptException as exc:
        assert _SAME(exc.box.value, thrown), f"{what}: a different value came back"
        return
    except Exception as exc:  # noqa: BLE001
        raise AssertionError(f"{what}: raised {type(exc).__name__}: {exc} instead of the thrown value") from None
    raise AssertionError(f"{what}: nothing was raised")


def _each_thrown(source_for):
    """(what, thrown value, JS object whose use throws it) for every kind of value."""
    for name, expression in _THROWN.items():
        pair = run_js(f"(() => {{ const thrown = {expression}; return [thrown, {source_for('thrown')}]; }})()")
        yield name, pair[0], pair[1]


def test_a_dictionary_getter_that_throws():
    for name, thrown, value in _each_thrown(lambda t: "{ get dataType() { throw " + t + "; }, shape: [1] }"):
        _expect_thrown(lambda: convert_dictionary("MLOperandDescriptor", value), thrown, f"getter throwing {name}")


def test_proxy_traps_that_throw():
    for name, thrown, value in _each_thrown(lambda t: "new Proxy({}, { get() { throw " + t + "; } })"):
        _expect_thrown(lambda: convert_dictionary("MLOperandDescriptor", value), thrown, f"get trap, {name}")
    for name, thrown, value in _each_thrown(lambda t: "new Proxy({}, { ownKeys() { throw " + t + "; } })"):
        _expect_thrown(lambda: convert(value, "record<USVString, double>"), thrown, f"ownKeys trap, {name}")


def test_iterators_that_throw():
    make = lambda t: "{ [Symbol.iterator]() { return { next() { throw " + t + "; } }; } }"  # noqa: E731
    for name, thrown, value in _each_thrown(make):
        _expect_thrown(lambda: convert(value, "sequence<unsigned long>"), thrown, f"next() throwing {name}")
    make = lambda t: "{ get [Symbol.iterator]() { throw " + t + "; } }"  # noqa: E731
    for name, thrown, value in _each_thrown(make):
        _expect_thrown(lambda: convert(value, "sequence<unsigned long>"), thrown, f"@@iterator getter, {name}")
        # In a union, the @@iterator lookup is the union's own step: rethrown too.
        _expect_thrown(lambda: convert(value, "(unsigned long or sequence<unsigned long>)"), thrown,
                       f"@@iterator getter in a union, {name}")


def test_value_of_and_to_string_that_throw():
    for name, thrown, value in _each_thrown(lambda t: "{ valueOf() { throw " + t + "; } }"):
        _expect_thrown(lambda: convert(value, "[EnforceRange] unsigned long"), thrown, f"valueOf, {name}")
        _expect_thrown(lambda: convert(value, "float"), thrown, f"valueOf for a float, {name}")
    for name, thrown, value in _each_thrown(lambda t: "{ toString() { throw " + t + "; } }"):
        _expect_thrown(lambda: convert(value, "USVString"), thrown, f"toString, {name}")


def test_iterated_values_are_converted_one_by_one_in_order():
    # WebIDL converts each item before taking the next one: element 1's valueOf runs
    # (and throws) before the iterator is asked for element 2, which would throw too.
    log = run_js("[]")
    value = run_js("""(log) => ({ *[Symbol.iterator]() {
        log.push("item 0"); yield 1;
        log.push("item 1"); yield { valueOf() { log.push("valueOf 1"); throw "first"; } };
        log.push("item 2"); throw "second";
    } })""")(log)
    try:
        convert(value, "sequence<unsigned long>")
    except ScriptException as exc:
        assert exc.box.value == "first"
    else:
        raise AssertionError("nothing was raised")
    assert log.to_py() == ["item 0", "item 1", "valueOf 1"], log.to_py()


def test_dictionary_members_are_read_and_converted_in_order():
    # WebIDL reads each member and converts it before reading the next. The bindings read
    # members in batches (one JS call), which must stop at an object-valued member: its
    # conversion (here, iterating a sequence) runs page code before the next read.
    log = run_js("[]")
    value = run_js("""(log) => {
      const sequence = (name, items) => ({ *[Symbol.iterator]() { log.push(`iterate ${name}`); yield* items; } });
      return {
        get dilations() { log.push("get dilations"); return sequence("dilations", [2, 3]); },
        get groups() { log.push("get groups"); return 1; },
        get label() { log.push("get label"); return "conv"; },
        get padding() { log.push("get padding"); return sequence("padding", [0, 1, 0, 1]); },
        get strides() { log.push("get strides"); return [1, 2]; },
      };
    }""")(log)
    out = convert_dictionary("MLConv2dOptions", value)
    # Inherited members first (label, of MLOperatorOptions), then each level's in lexicographic order.
    assert log.to_py() == ["get label", "get dilations", "iterate dilations", "get groups", "get padding",
                           "iterate padding", "get strides"], log.to_py()
    assert (out["dilations"], out["groups"], out["label"], out["padding"], out["strides"]) == \
        ([2, 3], 1, "conv", [0, 1, 0, 1], [1, 2]), out


def _type_error(fn, what):
    try:
        fn()
    except TypeError as exc:
        return str(exc)
    raise AssertionError(f"{what}: no TypeError")


def test_bigints_are_type_errors_wherever_a_number_is_expected():
    shape = run_js("({ dataType: 'float32', shape: [2n, 3n] })")
    message = _type_error(lambda: convert_dictionary("MLOperandDescriptor", shape), "shape [2n, 3n]")
    assert "BigInt 2n" in message and "shape" in message, message
    for idl_type in ("byte", "octet", "short", "unsigned short", "long", "unsigned long", "long long",
                     "unsigned long long", "[EnforceRange] unsigned long", "[Clamp] long", "float",
                     "unrestricted float", "double", "unrestricted double", "(unsigned long or sequence<long>)"):
        value = run_js("[5n]")
        item = script_arguments(value)[0]
        assert type(item) is JsBigInt and item == 5
        _type_error(lambda: convert(item, idl_type), idl_type)
    # An object whose valueOf gives a BigInt: ECMAScript's ToNumber throws its TypeError.
    value = run_js("({ valueOf() { return 5n; } })")
    try:
        convert(value, "unsigned long")
    except ScriptException as exc:
        assert run_js("(e) => e instanceof TypeError")(exc.box.value)
    else:
        raise AssertionError("valueOf returning a BigInt was accepted")


def test_bigints_still_go_where_bigint_is_accepted():
    big = script_arguments(run_js("[2n ** 60n, -3n, 4]"))
    assert big == (2 ** 60, -3, 4) and type(big[0]) is JsBigInt and type(big[2]) is int
    assert convert(big[0], "bigint") == 2 ** 60
    assert convert(big[1], "(bigint or unrestricted double)") == -3
    assert convert(big[0], "DOMString") == str(2 ** 60)          # ToString(BigInt) is fine
    assert convert(big[0], "boolean") is True
    # Dictionary members and sequence items are marked too.
    value = run_js("({ minValue: 5n })")
    assert convert_dictionary("MLClampOptions", value)["minValue"] == 5
    assert convert(run_js("[1n, 2]"), "sequence<(bigint or unrestricted double)>") == [1, 2.0]
    # ToNumeric for an object: a wrapped BigInt stays a bigint, anything else is a Number;
    # valueOf runs once.
    calls = run_js("[]")
    wrapped = run_js("(calls) => ({ valueOf() { calls.push(1); return 6n; } })")(calls)
    assert convert(wrapped, "(bigint or unrestricted double)") == 6 and calls.length == 1
    assert convert(run_js("Object(7n)"), "(bigint or unrestricted double)") == 7
    number = convert(run_js("({ valueOf() { return 2.5; } })"), "(bigint or unrestricted double)")
    assert number == 2.5 and type(number) is float


def test_plain_values_are_unchanged():
    out = convert_dictionary("MLOperandDescriptor", run_js("({ dataType: 'int32', shape: [2, 3] })"))
    assert out == {"dataType": "int32", "shape": [2, 3]}, out
    assert convert(run_js("new Set([4, 5])"), "sequence<long>") == [4, 5]
    assert convert(run_js("({ a: 1.5, b: 2 })"), "record<USVString, double>") == {"a": 1.5, "b": 2.0}
    assert convert(run_js("({ valueOf() { return 7; } })"), "unsigned long") == 7
    assert convert(run_js("({ toString() { return 'x'; } })"), "DOMString") == "x"
