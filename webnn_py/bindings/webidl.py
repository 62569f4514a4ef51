"""WebIDL -> Python value conversion, hand-written, shared by every generated binding.

The rules are those of the WebIDL Standard, "JavaScript type mapping" (one
function per IDL type family below, each naming the section it implements) and
its "overload resolution algorithm". Sections are cited by name, as the WHATWG
living standard renumbers them. `generated.py` (written by
tools/gen_bindings.py from idl/*.idl) holds only data -- enums, dictionaries,
typedefs, interfaces -- and hands it to `load_definitions`; everything that
*does* something lives here, so it can be read and tested once.

Where values come from
----------------------
* Host CPython callers pass ordinary Python values.
* Inside Pyodide the JS shim passes JS values through Pyodide's FFI, which has
  already turned primitives into Python ones: a Number becomes `int` when it is
  a safe integer and `float` otherwise, a BigInt becomes `int`, a string `str`,
  a boolean `bool`, and both `null` and `undefined` become `None`; objects stay
  `pyodide.ffi.JsProxy`.

Values that this module reads itself (dictionary members, record entries,
sequence elements) and the arguments the browser bridge passes come through small
JS helpers (`_script`) instead: a BigInt arrives as a `JsBigInt` (an `int` that
ToNumber rejects, as WebIDL requires of every integer and floating-point type),
and an exception thrown by page code that WebIDL runs -- a getter, a Proxy trap,
an iterator, valueOf/toString -- arrives as a `ScriptException` holding the thrown
value itself, which the bridge hands back to the shim to rethrow unchanged
(WebIDL's "?": the same object, not a wrapper).

So a Python `None` is read as JS `undefined` (the value of an omitted argument
or dictionary member, the common case). Callers that need a real JS `null`
(it differs from undefined for numbers, strings and dictionary members) pass the
`NULL` sentinel; Pyodide's `pyodide.ffi.jsnull`, when the runtime produces it,
means the same. A Python `int` is both a Number and a BigInt: it counts as a
Number everywhere except where a union also accepts `bigint` (MLNumber), where
it is kept as an exact `int` -- a JS BigInt would arrive as exactly that `int`.
A Python `int` that could not come from a JS Number (beyond 2**53) is handled
exactly, as a mathematical integer, instead of being rounded to a double first.

Every conversion failure WebIDL specifies is a built-in `TypeError` whose
message names the operation, argument and member path and says what is wrong.
"""
from __future__ import annotations

import decimal
import math
import numbers
import re
import struct
import sys
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

__all__ = [
    "IdlType", "DictionaryMember", "Dictionary", "Argument", "Overload", "Attribute", "Interface",
    "MISSING", "NULL", "NO_DEFAULT", "BufferSource", "JsBigInt", "ScriptException", "script_arguments",
    "load_definitions", "register_interface", "parse_type",
    "convert", "convert_arguments", "convert_dictionary", "resolve_overloads", "js_kind",
    "to_number", "convert_boolean", "convert_integer", "convert_float", "convert_bigint",
    "convert_string", "convert_enum", "convert_union", "convert_sequence", "convert_record",
    "convert_interface", "convert_buffer", "convert_object",
]

# -- the Pyodide side, imported only where it exists -----------------------------------------------
# `pyodide-py` can be pip-installed on a host too (stub modules, no `js`), so the
# platform decides, not the mere presence of a `pyodide` package.
_IN_PYODIDE = False
JsProxy: Any = ()          # isinstance(x, ()) is always False on the host
JsDoubleProxy: Any = ()
_JS_NULL: Any = object()   # replaced by pyodide.ffi.jsnull when the runtime has it
if sys.platform == "emscripten":  # pragma: no cover - exercised by tests/pyodide/
    try:
        import js as _js
        from pyodide.code import run_js as _run_js
        from pyodide.ffi import JsProxy  # type: ignore[no-redef]
        from pyodide.ffi import create_proxy as _create_proxy
        from pyodide.ffi import to_js as _to_js
        try:
            from pyodide.ffi import JsDoubleProxy  # type: ignore[no-redef]
        except ImportError:
            pass
        try:
            from pyodide.ffi import jsnull as _JS_NULL  # type: ignore[no-redef]
        except ImportError:
            pass
        _IN_PYODIDE = True
    except ImportError:
        pass


class _Sentinel:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self):
        return self._name


class JsBigInt(int):
    """A JS BigInt (Pyodide would deliver it as a plain int, like a Number). WebIDL's
    ToNumber throws a TypeError for it, so no integer or floating-point type takes
    one (`shape: [2n]`); `bigint` and unions with bigint (MLNumber) do. Host callers
    may pass one to stand for a BigInt."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}n"


class ScriptException(Exception):
    """Page script threw while a conversion ran its code (a getter, a Proxy trap, an
    iterator, valueOf/toString). WebIDL rethrows such an exception as it is (its
    "?" steps), so `box` -- a JS object whose `value` is exactly what was thrown,
    any JS value -- goes back to the shim, which throws `box.value` (synchronous
    methods) or rejects with it (promise methods)."""

    def __init__(self, box: Any) -> None:
        super().__init__("an exception thrown by page script")
        self.box = box


#: An optional argument that was not passed and has no default (WebIDL
#: "overload resolution algorithm": the special value "missing").
MISSING = _Sentinel("MISSING")
#: JS `null`, for host callers and shims that must tell it apart from undefined.
NULL = _Sentinel("NULL")
#: Marks "no default value" in the member/argument tables.
NO_DEFAULT = _Sentinel("NO_DEFAULT")


# -- parsed IDL types and the definition tables ----------------------------------------------------

class IdlType(NamedTuple):
    """One IDL type: `name` is a builtin type name ("unsigned long", "DOMString",
    "sequence", "record", "Promise", "FrozenArray", "union", ...) or an identifier
    (enum, dictionary, typedef, interface); `params` are the type arguments (union
    members for "union"); `ext` the extended attributes applying to the type
    (EnforceRange, Clamp, AllowShared, ...)."""
    name: str
    params: tuple = ()
    nullable: bool = False
    ext: tuple = ()

    def __str__(self) -> str:
        ext = f"[{', '.join(self.ext)}] " if self.ext else ""
        if self.name == "union":
            body = "(" + " or ".join(str(p) for p in self.params) + ")"
        elif self.params:
            body = f"{self.name}<{', '.join(str(p) for p in self.params)}>"
        else:
            body = self.name
        return ext + body + ("?" if self.nullable else "")


class DictionaryMember(NamedTuple):
    name: str
    type_text: str
    type: IdlType
    required: bool = False
    default: Any = NO_DEFAULT
    declared_in: str = ""


class Dictionary(NamedTuple):
    name: str
    inherits: str | None
    #: All members, inherited ones included, in WebIDL's conversion order: the
    #: most basic dictionary first, lexicographic order within each (WebIDL "Dictionaries").
    members: tuple


class Argument(NamedTuple):
    name: str
    type_text: str
    type: IdlType
    optional: bool = False
    default: Any = NO_DEFAULT
    variadic: bool = False


class Overload(NamedTuple):
    arguments: tuple
    return_type: str = "undefined"
    static: bool = False
    ext: tuple = ()


class Attribute(NamedTuple):
    name: str
    type_text: str
    type: IdlType
    readonly: bool = False
    static: bool = False
    ext: tuple = ()


class Interface(NamedTuple):
    name: str
    kind: str                      # "interface" or "mixin"
    inherits: str | None
    ext: tuple                     # ((name, value), ...), value None | str | tuple of str
    exposed: tuple
    secure_context: bool
    constructors: tuple            # Overloads
    operations: dict               # name -> tuple of Overloads (regular and static)
    attributes: tuple


_ENUMS: dict[str, tuple] = {}
_TYPEDEFS: dict[str, IdlType] = {}
_DICTIONARIES: dict[str, Dictionary] = {}
_INTERFACES: dict[str, Interface] = {}
_CLASSES: dict[str, tuple] = {}
_DEFAULTS: dict[tuple, Any] = {}


def load_definitions(enums: Mapping, typedefs: Mapping, dictionaries: Mapping, interfaces: Mapping) -> None:
    """Install the tables of generated.py. Default values are converted here, once,
    to their IDL type (WebIDL "Dictionaries" / "Operations", default values: `double alpha = 1` is the
    double 1.0), so conversions only copy them."""
    _ENUMS.update(enums)
    _TYPEDEFS.update(typedefs)
    _DICTIONARIES.update(dictionaries)
    _INTERFACES.update(interfaces)
    for d in dictionaries.values():
        for m in d.members:
            _cache_default(m.type, m.default, f"default of {d.name}.{m.name}")
    for i in interfaces.values():
        for overloads in [i.constructors, *i.operations.values()]:
            for o in overloads:
                for a in o.arguments:
                    _cache_default(a.type, a.default, f"default of {i.name} argument {a.name}")


def _cache_default(t: IdlType, literal: Any, where: str) -> None:
    if literal is NO_DEFAULT or isinstance(literal, (dict, list)):
        return
    # The literal is converted as script would see it: `0` is the Number 0.
    _DEFAULTS[(t, _literal_key(literal))] = convert(literal, t, where)


def _literal_key(literal: Any) -> tuple:
    return (type(literal).__name__, repr(literal))


def _default_value(t: IdlType, literal: Any, where: str) -> Any:
    # `{}` and `[]` give a fresh dictionary/sequence per call: callers may mutate it.
    if isinstance(literal, dict):
        return convert(None, t, where)
    if isinstance(literal, list):
        return [] if _resolve(t).name != "FrozenArray" else ()
    key = (t, _literal_key(literal))
    if key not in _DEFAULTS:
        _DEFAULTS[key] = convert(literal, t, where)
    return _DEFAULTS[key]


def register_interface(name: str, cls: type) -> type:
    """Declare `cls` as the implementation of IDL interface `name`; values of that
    interface type must then be instances of it. Returns `cls` (usable as a
    decorator). Several classes may be registered for one name."""
    _CLASSES[name] = _CLASSES.get(name, ()) + (cls,)
    _interfaces_by_class.clear()
    return cls


# -- IDL type text -> IdlType ----------------------------------------------------------------------
# Used by tools/gen_bindings.py (which imports this file by path) and by callers
# that want `convert(value, "sequence<[EnforceRange] unsigned long>")`.

_TOKEN = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_-]*)|(.))")
_PARSED: dict[str, IdlType] = {}


def parse_type(text: str) -> IdlType:
    """Parse a WebIDL type expression (WebIDL grammar "TypeWithExtendedAttributes")."""
    cached = _PARSED.get(text)
    if cached is not None:
        return cached
    tokens = [m.group(1) or m.group(2) for m in _TOKEN.finditer(text) if (m.group(1) or m.group(2))]
    parser = _TypeParser(tokens, text)
    result = parser.type()
    if parser.pos != len(tokens):
        raise ValueError(f"unexpected {tokens[parser.pos]!r} in IDL type {text!r}")
    _PARSED[text] = result
    return result


class _TypeParser:
    _GENERIC = {"sequence": 1, "FrozenArray": 1, "ObservableArray": 1, "Promise": 1, "record": 2}

    def __init__(self, tokens: list, text: str) -> None:
        self.tokens, self.text, self.pos = tokens, text, 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise ValueError(f"expected {expected or 'a type'} in IDL type {self.text!r}")
        self.pos += 1
        return tok

    def type(self) -> IdlType:
        ext = self.ext_attrs()
        if self.peek() == "(":
            self.take("(")
            members = [self.type()]
            while self.peek() == "or":
                self.take("or")
                members.append(self.type())
            self.take(")")
            t = IdlType("union", tuple(members))
        else:
            t = self.single()
        if self.peek() == "?":
            self.take("?")
            t = t._replace(nullable=True)
        return t._replace(ext=ext) if ext else t

    def ext_attrs(self) -> tuple:
        if self.peek() != "[":
            return ()
        self.take("[")
        names = []
        while True:
            name = self.take()
            if self.peek() == "=":           # e.g. [LegacyNullToEmptyString] has none; keep it general
                self.take("=")
                name += "=" + self.take()
            names.append(name)
            if self.peek() == ",":
                self.take(",")
                continue
            self.take("]")
            return tuple(names)

    def single(self) -> IdlType:
        word = self.take()
        if word in self._GENERIC:
            self.take("<")
            params = [self.type()]
            for _ in range(self._GENERIC[word] - 1):
                self.take(",")
                params.append(self.type())
            self.take(">")
            return IdlType(word, tuple(params))
        if word == "unsigned":
            word += " " + self.take()
        if word in ("long", "unsigned long") and self.peek() == "long":
            word += " " + self.take()
        elif word == "unrestricted":
            word += " " + self.take()
        return IdlType(word)


# -- which values are JS objects -------------------------------------------------------------------
# `isinstance(v, JsProxy)` runs pyodide.ffi's metaclass hooks in Python (its type flags are
# decoded on every check): it was a third of a builder call's time in the page. A JsProxy's
# class is one of a few cached subtypes, and a class's answer never changes, so the answers
# are kept per class.

_js_classes: dict[type, tuple[bool, bool]] = {}


def _js_class(cls: type) -> tuple[bool, bool]:
    known = _js_classes.get(cls)
    if known is None:
        known = _js_classes[cls] = ((issubclass(cls, JsProxy), issubclass(cls, JsDoubleProxy))
                                    if _IN_PYODIDE else (False, False))
    return known


def _is_js(v: Any) -> bool:
    """Is `v` a JS object (a pyodide.ffi.JsProxy)? Always False on the host."""
    return _js_class(type(v))[0]


def _is_js_double(v: Any) -> bool:
    """Is `v` a pyodide.ffi.JsDoubleProxy (a Python object that went to JS and came back)?"""
    return _js_class(type(v))[1]


# -- page code run on WebIDL's behalf (Pyodide) ----------------------------------------------------
# Getters, Proxy traps, iterators and valueOf/toString are page code: each is run by a
# JS helper that catches what it throws and hands it back as data (a Pyodide JsException
# would replace a thrown non-Error value by a new Error), and that marks BigInts, which
# Pyodide would turn into plain ints. The common case (a plain value) costs nothing more.

_SCRIPT_HELPERS_SOURCE = r"""
(special) => {
  "use strict";
  // The intrinsics used, captured when the helpers are made (inside a call into the
  // runtime, where the shim has put the originals back): no method of the page's
  // Array.prototype or Function.prototype is looked up later (README "Security model").
  const Reflect_get = Reflect.get, Reflect_apply = Reflect.apply, Object_keys = Object.keys;
  const bigint = (v) => (typeof v === "bigint" ? special("bigint", v) : v);
  const thrown = (e) => special("thrown", { value: e });
  const isObject = (v) => (typeof v === "object" && v !== null) || typeof v === "function";
  const Reflect_defineProperty = Reflect.defineProperty;
  return {
    get(o, key) {                                   // O.[[Get]](key)
      try { return bigint(Reflect_get(o, key)); } catch (e) { return thrown(e); }
    },
    keys(o) {                                       // own enumerable string keys, in order
      try { return Object_keys(o); } catch (e) { return thrown(e); }
    },
    toNumber(v) {                                   // ECMAScript ToNumber (a BigInt: TypeError)
      try { return +v; } catch (e) { return thrown(e); }
    },
    toNumeric(v) {                                  // ECMAScript ToNumeric: a Number or a BigInt
      try { return bigint(-(-v)); } catch (e) { return thrown(e); }   // negation keeps -0 and NaN
    },
    toString(v) {                                   // ECMAScript ToString
      try { return `${v}`; } catch (e) { return thrown(e); }
    },
    // The batch helpers below do several steps in one call from Python. They
    // stop right after a value that is an object: converting one may run page code (its
    // getters, iterator, valueOf), which must see the reads before it done and the reads
    // after it not yet. Converting a primitive runs none, so reading ahead of it is
    // unobservable. What page code throws ends the batch, as its last value.
    members(o, keys, start) {                       // O.[[Get]](key) of keys[start], keys[start + 1], ...
      const values = [];
      try {
        for (let i = start; i < keys.length; i++) {
          const value = Reflect_get(o, keys[i]);
          values[values.length] = bigint(value);   // not push(): the page may have replaced it
          if (isObject(value)) break;
        }
      } catch (e) { values[values.length] = thrown(e); }
      return values;
    },
    iterate(o, method) {                            // GetIteratorFromMethod, then as collect()
      let record;
      try {
        const iterator = Reflect_apply(method, o, []);
        if (!isObject(iterator)) throw new TypeError("the iterator is not an object");
        record = { iterator, next: iterator.next };
      } catch (e) { return [null, thrown(e)]; }
      return collect(record);
    },
    collect,
    // record<K, I> with I an interface type: [key, value, key, value, ...] in one call,
    // each value that is an I wrapper replaced by the PyProxy it owns (`proxyOf`, the
    // shim's), which Python receives as the object itself. Converting such a value runs
    // no page code, so reading ahead of it is unobservable; the batch ends after a value
    // that is not one (its conversion fails: WebIDL reads nothing after it). Elements are
    // defined, not assigned: no setter on Array.prototype sees a PyProxy.
    platformRecord(o, proxyOf, name) {
      const out = [];
      const put = (v) => Reflect_defineProperty(out, out.length,
                                                { __proto__: null, value: v, writable: true, enumerable: true, configurable: true });
      try {
        const keys = Object_keys(o);
        for (let i = 0; i < keys.length; i++) {
          const value = Reflect_get(o, keys[i]);
          const inner = proxyOf(value, name);
          put(keys[i]);
          put(inner === undefined ? bigint(value) : inner);
          if (inner === undefined) break;
        }
      } catch (e) { put(thrown(e)); }
      return out;
    },
    arguments(args) {                               // an argument list, BigInts marked
      for (let i = 0; i < args.length; i++) {
        if (typeof args[i] !== "bigint") continue;
        const marked = [];
        for (let j = 0; j < args.length; j++) marked[j] = bigint(args[j]);
        return marked;
      }
      return args;
    },
  };
  function collect(record) {                        // IteratorStepValue until done: [record or null, values...]
    const batch = [record];
    try {
      for (;;) {
        const result = Reflect_apply(record.next, record.iterator, []);
        if (!isObject(result)) throw new TypeError("the iterator result is not an object");
        if (result.done) { batch[0] = null; break; }
        const value = result.value;
        batch[batch.length] = bigint(value);
        if (isObject(value)) break;
      }
    } catch (e) { batch[0] = null; batch[batch.length] = thrown(e); }
    return batch;
  }
}
"""


class _Special:
    """What a helper returns instead of a plain value: ("bigint", int) or ("thrown", box)."""

    __slots__ = ("kind", "value")

    def __init__(self, kind: str, value: Any = None) -> None:
        self.kind, self.value = kind, value


_DONE = object()                  # the end of an iteration
_script_helpers: dict = {}        # name -> the JS function, made at first use


def _script(helper: str, *args: Any) -> Any:
    """Run one of the JS helpers: its value, a JsBigInt for a BigInt; what page code
    threw is raised as a ScriptException."""
    _script_helper_functions()
    return _from_script(_script_helpers[helper](*args))


def _script_helper_functions() -> None:
    if not _script_helpers:
        helpers = _run_js(_SCRIPT_HELPERS_SOURCE)(_create_proxy(_Special))
        _script_helpers.update((name, getattr(helpers, name)) for name in _js.Object.keys(helpers))


def _from_script(value: Any) -> Any:
    if type(value) is _Special:
        if value.kind == "bigint":
            return JsBigInt(value.value)
        raise ScriptException(value.value)       # "thrown"
    return value


def _script_batch(helper: str, *args: Any) -> list:
    """Run one of the batch helpers: its JS array of values as a list, in one crossing
    (the values still marked: each goes through _from_script as it is used)."""
    _script_helper_functions()
    return _script_helpers[helper](*args).to_py(depth=1)


def script_arguments(args: Any) -> tuple:
    """An argument list from the shim (a JS array) as a tuple, BigInts as JsBigInt.
    The browser bridge calls it on every operation's arguments."""
    if _is_js(args):
        return tuple(map(_from_script, _script_batch("arguments", args)))
    return tuple(args)


# -- classification of values (what JS type a Python value stands for) -----------------------------

_INTEGER_TYPES = {
    "byte": (8, True), "octet": (8, False), "short": (16, True), "unsigned short": (16, False),
    "long": (32, True), "unsigned long": (32, False),
    "long long": (64, True), "unsigned long long": (64, False),
}
_FLOAT_TYPES = {"float", "unrestricted float", "double", "unrestricted double"}
_NUMERIC_TYPES = set(_INTEGER_TYPES) | _FLOAT_TYPES
_STRING_TYPES = {"DOMString", "USVString", "ByteString"}
_TYPED_ARRAYS = {
    "Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array",
    "Uint32Array", "BigInt64Array", "BigUint64Array", "Float16Array", "Float32Array", "Float64Array",
}
#: Buffer source types (WebIDL "Buffer source types", and its typedefs
#: ArrayBufferView, BufferSource, AllowSharedBufferSource),
#: mapped to which kinds of buffer objects they accept.
_BUFFER_TYPES = {"ArrayBuffer", "SharedArrayBuffer", "ArrayBufferView", "BufferSource",
                 "AllowSharedBufferSource", "DataView"} | _TYPED_ARRAYS


def _is_numpy_bool(v: Any) -> bool:
    t = type(v)
    return t.__module__ == "numpy" and t.__name__ in ("bool_", "bool")


def _is_null(v: Any) -> bool:
    return v is NULL or v is _JS_NULL


def _is_nullish(v: Any) -> bool:
    return v is None or _is_null(v)


def js_kind(v: Any, buffers: bool = True) -> str:
    """Which JS type `v` stands for: "undefined", "null", "boolean", "number",
    "string", "symbol" or, for objects, "platform" (an instance of a registered
    interface, or a GPUDevice), "ArrayBuffer", "SharedArrayBuffer", "view"
    (typed array / DataView), "function" or "object". With `buffers=False` a JS buffer
    object is "object" too (telling them apart costs failing brand checks in JS)."""
    if v is None:
        return "undefined"
    if _is_null(v):
        return "null"
    if isinstance(v, bool) or _is_numpy_bool(v):
        return "boolean"
    if isinstance(v, JsBigInt):
        return "bigint"
    if isinstance(v, numbers.Real):
        return "number"
    if isinstance(v, str):
        return "string"
    v = _unwrap_js(v)
    if _is_platform_object(v):
        return "platform"
    if _is_js(v):
        typeof = v.typeof
        if typeof in ("symbol", "bigint"):
            return typeof
        info = _js_buffer_info(v) if buffers else None
        if info is not None:
            return info[0]
        return "function" if typeof == "function" else "object"
    host = _host_buffer_kind(v)
    return host or "object"


def _is_an_object(v: Any) -> bool:
    """WebIDL's "is an Object" alone (records, dictionaries, sequences): for a JS value its
    typeof, without js_kind's buffer and platform-object classification (JS calls)."""
    if _is_js(v) and not _is_nullish(v) and not _is_js_double(v):
        return v.typeof in ("object", "function")
    return _is_object(js_kind(v))


def _is_object(kind: str) -> bool:
    return kind in ("platform", "ArrayBuffer", "SharedArrayBuffer", "view", "function", "object")


_platform_object_unwrapper = None
_platform_proxy_of = None


def set_platform_object_unwrapper(unwrap, proxy_of=None) -> None:
    """Installed by the browser bridge: `unwrap(js_object)` returns the Python
    object behind one of the shim's JS wrappers (MLOperand, MLTensor, ...), or
    None for any other JS value. Conversions then see the Python object, so
    interface types, unions and overloads treat wrappers as platform objects.
    `proxy_of(js_value, interface)`, a JS function, gives the PyProxy a wrapper of that
    interface owns (undefined for anything else): records of interface objects
    (dispatch()'s MLNamedTensors) are then read in one crossing (convert_record)."""
    global _platform_object_unwrapper, _platform_proxy_of
    _platform_object_unwrapper = unwrap
    _platform_proxy_of = proxy_of


def _unwrap_js(v: Any) -> Any:
    if _is_js(v):
        if _is_js_double(v):
            # A Python object that went to JS through create_proxy() comes back
            # wrapped; PyProxies made by returning objects to JS come back unwrapped.
            return v.unwrap()
        if _platform_object_unwrapper is not None:
            inner = _platform_object_unwrapper(v)
            if inner is not None:
                return inner
    return v


_interfaces_by_class: dict[type, frozenset] = {}   # a class -> the interfaces its instances implement


def _interfaces_of(v: Any) -> frozenset:
    """The IDL interfaces `v` implements: those whose registered classes it is an instance
    of, and the interfaces they inherit from. Kept per class (register_interface resets it)."""
    cls = type(v)
    names = _interfaces_by_class.get(cls)
    if names is None:
        found = set()
        for iface, classes in _CLASSES.items():
            if issubclass(cls, classes):
                seen = iface
                while seen and seen not in found:
                    found.add(seen)
                    info = _INTERFACES.get(seen)
                    seen = info.inherits if info else None
        names = _interfaces_by_class[cls] = frozenset(found)
    return names


def _is_platform_object(v: Any) -> bool:
    # GPUDevice is left out on purpose: recognising one reads JS properties, which
    # a Proxy could observe, so it is only tried where GPUDevice is a candidate type.
    return bool(_interfaces_of(v))


def _implements(v: Any, name: str) -> bool:
    """Does `v` implement interface `name` (or an interface inheriting from it)?"""
    if name == "GPUDevice":
        return _is_gpu_device(v)
    return name in _interfaces_of(v)


_gpu_device_check = None


def _is_gpu_device(v: Any) -> bool:
    # GPUDevice belongs to WebGPU, which we do not implement: on the host nothing
    # is a GPUDevice; in the browser a real one is a JS object whose constructor
    # (found on its prototype) is named GPUDevice.
    global _gpu_device_check
    if not (_is_js(v)):
        return False
    if _gpu_device_check is None:
        _gpu_device_check = _run_js(
            "(v) => { try { const p = Object.getPrototypeOf(v);"
            " return !!p && typeof p.constructor === 'function' && p.constructor.name === 'GPUDevice'; }"
            " catch (e) { return false; } }")
    return bool(_gpu_device_check(v))


def _describe(v: Any) -> str:
    kind = js_kind(v)
    if kind in ("undefined", "null"):
        return kind
    if kind == "bigint" and isinstance(v, JsBigInt):
        return f"the BigInt {int(v)}n"
    if kind == "number":
        return _number_to_string(float(v)) if not isinstance(v, numbers.Integral) else str(int(v))
    if kind == "boolean":
        return "true" if v else "false"
    if kind == "string":
        text = v if len(v) <= 40 else v[:37] + "..."
        return repr(text)
    if _is_js(v):
        return f"a JS {kind if kind != 'view' else 'ArrayBufferView'}"
    text = repr(v)
    return f"{type(v).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def _fail(where: str, problem: str) -> TypeError:
    return TypeError(f"{where}: {problem}")


# -- WebIDL "Integer types", "float", "double", "bigint" -------------------------------------------

_JS_WHITESPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008" \
                 "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_DECIMAL_LITERAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")
_RADIX_LITERAL = re.compile(r"0(?:[xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)\Z")


def _string_to_number(s: str) -> float:
    """ECMAScript StringToNumber (ECMA-262 §7.1.4.1.1)."""
    s = s.strip(_JS_WHITESPACE)
    if not s:
        return 0.0
    if _RADIX_LITERAL.match(s):
        return float(int(s, 0))
    if s in ("Infinity", "+Infinity"):
        return math.inf
    if s == "-Infinity":
        return -math.inf
    if _DECIMAL_LITERAL.match(s):
        return float(s)
    return math.nan


def _number_to_string(x: float) -> str:
    """ECMAScript Number::toString(x) (ECMA-262 §6.1.6.1.20): shortest digits, JS layout."""
    if math.isnan(x):
        return "NaN"
    if x == 0:
        return "0"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    sign = "-" if x < 0 else ""
    digits_t = decimal.Decimal(repr(abs(x))).normalize().as_tuple()
    digits = "".join(map(str, digits_t.digits))
    k = len(digits)
    n = digits_t.exponent + k
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        body = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + body


def to_number(v: Any, where: str = "value") -> int | float:
    """ECMAScript ToNumber, as WebIDL's numeric conversions begin. Python ints are
    returned exactly (see the module docstring); everything else as a float."""
    if v is None:
        return math.nan
    if _is_null(v):
        return 0
    if isinstance(v, bool) or _is_numpy_bool(v):
        return 1 if v else 0
    if isinstance(v, JsBigInt):
        # ECMA-262 ToNumber step "BigInt: throw a TypeError", which every WebIDL integer
        # type (ConvertToInt step 1), float and double conversion begins with.
        raise _fail(where, f"{_describe(v)} cannot be converted to a number (use a Number, not a BigInt)")
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    if isinstance(v, str):
        return _string_to_number(v)
    if _is_js(v):
        if v.typeof == "symbol":
            raise _fail(where, "a JS symbol cannot be converted to a number")
        # valueOf/toString are page code: what they throw is rethrown as it is, and a
        # BigInt they return is ECMAScript's TypeError.
        return _script("toNumber", v)
    raise _fail(where, f"{_describe(v)} cannot be converted to a number")


def convert_integer(v: Any, type_name: str, ext: tuple = (), where: str = "value") -> int:
    """WebIDL "Integer types", via the abstract operation ConvertToInt: with
    [EnforceRange] non-finite -> TypeError, truncate, out of range -> TypeError;
    with [Clamp] clamp then round half to even; otherwise truncate and wrap
    modulo 2^bitLength. 64-bit types are limited to +-(2^53 - 1) by the first two."""
    bits, signed = _INTEGER_TYPES[type_name]
    if bits == 64:
        lower, upper = (-(2 ** 53 - 1) if signed else 0), 2 ** 53 - 1
    else:
        lower = -(2 ** (bits - 1)) if signed else 0
        upper = 2 ** (bits - 1) - 1 if signed else 2 ** bits - 1
    x = to_number(v, where)
    label = ("[EnforceRange] " if "EnforceRange" in ext else "") + type_name
    if "EnforceRange" in ext:
        if isinstance(x, float):
            if not math.isfinite(x):
                raise _fail(where, f"{_describe(x)} is not a finite number, as {label} requires")
            x = int(x)                       # IntegerPart; -0 becomes 0
        if not lower <= x <= upper:
            raise _fail(where, f"{_describe(x)} is outside the range of {label} ({lower} to {upper})")
        return x
    if "Clamp" in ext:
        if isinstance(x, float):
            if math.isnan(x):
                return 0
            x = min(max(x, lower), upper)
            return int(round(x))             # round() is round-half-to-even, as [Clamp] says
        return min(max(x, lower), upper)
    if isinstance(x, float):
        if not math.isfinite(x):
            return 0
        x = int(x)
    x %= 2 ** bits
    if signed and x >= 2 ** (bits - 1):
        x -= 2 ** bits
    return x


def _round_to_float32(x: float) -> float:
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:                    # rounds to +-Infinity in binary32
        return math.copysign(math.inf, x)


def convert_float(v: Any, type_name: str, where: str = "value") -> float:
    """WebIDL "float", "unrestricted float", "double", "unrestricted double".
    The restricted types reject NaN and +-Infinity (also a float that overflows
    binary32) with a TypeError."""
    x = to_number(v, where)
    try:
        x = float(x)
    except OverflowError:                    # an exact Python int beyond double range
        x = math.inf if x > 0 else -math.inf
    restricted = not type_name.startswith("unrestricted")
    if restricted and not math.isfinite(x):
        raise _fail(where, f"{_describe(x)} is not a finite number, as {type_name} requires")
    if type_name.endswith("float"):
        y = _round_to_float32(x)
        if restricted and math.isinf(y):
            raise _fail(where, f"{_describe(x)} is outside the range of float")
        return y
    return x


def convert_bigint(v: Any, where: str = "value") -> int:
    """WebIDL "bigint" (ECMAScript ToBigInt). A Python int is accepted as a
    BigInt (Pyodide delivers both safe-integer Numbers and BigInts as int); a
    float is a non-integral or unsafe Number, which ToBigInt rejects."""
    if isinstance(v, bool) or _is_numpy_bool(v):
        return int(bool(v))
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, str):
        s = v.strip(_JS_WHITESPACE)
        if not s:
            return 0
        if _RADIX_LITERAL.match(s):
            return int(s, 0)
        if re.fullmatch(r"[+-]?\d+", s):
            return int(s)
        # ECMAScript would throw a SyntaxError here; a TypeError is what WebIDL
        # callers are prepared for and names the argument.
        raise _fail(where, f"{_describe(v)} is not a valid BigInt literal")
    raise _fail(where, f"{_describe(v)} cannot be converted to a BigInt")


def convert_boolean(v: Any, where: str = "value") -> bool:
    """WebIDL "boolean": ECMAScript ToBoolean, never an error."""
    if _is_nullish(v):
        return False
    if isinstance(v, bool) or _is_numpy_bool(v):
        return bool(v)
    if isinstance(v, numbers.Real):
        return not (v == 0 or v != v)
    if isinstance(v, str):
        return len(v) > 0
    return True


# -- WebIDL "DOMString", "ByteString", "USVString", "Enumeration types" ----------------------------

def _to_usv(s: str) -> str:
    """USVString: pair up surrogates, replace lone ones by U+FFFD (WebIDL "USVString")."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def convert_string(v: Any, type_name: str = "DOMString", ext: tuple = (), where: str = "value") -> str:
    """WebIDL "DOMString", "ByteString", "USVString", via
    ECMAScript ToString. Host callers may pass str, bool, numbers, None (undefined)
    or NULL; other Python objects have no JS string form and are a TypeError.
    A JsProxy goes through JS String(), as ToString would."""
    if isinstance(v, str):
        s = v
    elif v is None:
        s = "undefined"
    elif _is_null(v):
        s = "" if "LegacyNullToEmptyString" in ext else "null"
    elif isinstance(v, bool) or _is_numpy_bool(v):
        s = "true" if v else "false"
    elif isinstance(v, numbers.Integral):
        s = str(int(v))
    elif isinstance(v, numbers.Real):
        s = _number_to_string(float(v))
    elif _is_js(v):
        if v.typeof == "symbol":
            raise _fail(where, "a Symbol cannot be converted to a string")
        s = str(_script("toString", v))      # toString/valueOf may throw: rethrown as it is
    else:
        raise _fail(where, f"{_describe(v)} cannot be converted to a {type_name}")
    if type_name == "USVString":
        return _to_usv(s)
    if type_name == "ByteString" and any(ord(c) > 0xFF for c in s):
        raise _fail(where, f"{_describe(s)} has characters above U+00FF, which a ByteString cannot hold")
    return s


def convert_enum(v: Any, enum_name: str, where: str = "value") -> str:
    """WebIDL "Enumeration types": ToString, then the value must be one of
    the enumeration's values, else TypeError."""
    s = convert_string(v, "DOMString", (), where)
    values = _ENUMS[enum_name]
    if s not in values:
        raise _fail(where, f"{_describe(s)} is not a valid value of enum {enum_name} "
                           f"({', '.join(repr(x) for x in values)})")
    return s


# -- WebIDL "object", "Interface types" ------------------------------------------------------------

def convert_object(v: Any, where: str = "value") -> Any:
    """WebIDL "object": any object, passed through; primitives -> TypeError."""
    if not _is_an_object(v):
        raise _fail(where, f"{_describe(v)} is not an object")
    return v


def convert_interface(v: Any, name: str, where: str = "value") -> Any:
    """WebIDL "Interface types": `v` must implement the interface (an
    instance of a class passed to register_interface, or of a derived one)."""
    if _implements(v, name):
        return v
    hint = "" if name in _CLASSES or name == "GPUDevice" else " (no class is registered for it)"
    raise _fail(where, f"{_describe(v)} is not of type '{name}'{hint}")


# -- WebIDL "Buffer source types" ------------------------------------------------------------------

_FORMAT_TYPED_ARRAY = {
    ("b", 1): "Int8Array", ("B", 1): "Uint8Array", ("c", 1): "Uint8Array",
    ("h", 2): "Int16Array", ("H", 2): "Uint16Array",
    ("i", 4): "Int32Array", ("l", 4): "Int32Array", ("I", 4): "Uint32Array", ("L", 4): "Uint32Array",
    ("q", 8): "BigInt64Array", ("l", 8): "BigInt64Array", ("n", 8): "BigInt64Array",
    ("Q", 8): "BigUint64Array", ("L", 8): "BigUint64Array", ("N", 8): "BigUint64Array",
    ("e", 2): "Float16Array", ("f", 4): "Float32Array", ("d", 8): "Float64Array",
}
_NATIVE_LITTLE = sys.byteorder == "little"


def _element_type_of(mv: memoryview) -> str:
    """The JS typed array a host buffer corresponds to; "DataView" when none does
    (bool, complex, structured or non-native byte order: a JS typed array is always
    in the platform's byte order)."""
    fmt = mv.format
    if fmt[:1] in ("<", ">", "!", "="):
        if (fmt[0] == "<") != _NATIVE_LITTLE and fmt[0] != "=":
            return "DataView"
        fmt = fmt[1:]
    elif fmt[:1] == "@":
        fmt = fmt[1:]
    return _FORMAT_TYPED_ARRAY.get((fmt, mv.itemsize), "DataView")


def _host_buffer_kind(v: Any) -> str | None:
    if isinstance(v, (bytes, bytearray)):
        return "ArrayBuffer"
    try:
        memoryview(v).release()
    except TypeError:
        return None
    return "view"


class BufferSource:
    """A converted buffer source argument (ArrayBuffer, SharedArrayBuffer or a view
    on one), still referring to the caller's memory -- nothing is copied until a
    copy_* / to_bytes call.

    byte_length  -- bytes in the view (its byteLength, not the whole buffer's)
    is_view      -- True for typed arrays / DataView / numpy arrays / memoryviews
    element_type -- "Float32Array", ..., "DataView" for views; None for buffers
    source       -- the object the caller passed
    """

    __slots__ = ("byte_length", "is_view", "element_type", "is_shared", "source", "_mv", "_u8")

    def __init__(self, source: Any, byte_length: int, is_view: bool, element_type: str | None,
                 is_shared: bool = False, mv: memoryview | None = None, u8: Any = None) -> None:
        self.source = source
        self.byte_length = byte_length
        self.is_view = is_view
        self.element_type = element_type
        self.is_shared = is_shared
        self._mv = mv          # host: a flat unsigned-byte memoryview of the caller's buffer
        self._u8 = u8          # Pyodide: a JS Uint8Array over exactly the caller's bytes

    def __repr__(self) -> str:
        what = self.element_type or ("SharedArrayBuffer" if self.is_shared else "ArrayBuffer")
        return f"<BufferSource {what} byte_length={self.byte_length}>"

    def _check_detached(self, what: str) -> None:
        # A JS buffer can be detached (transferred) after conversion; its views then
        # have byteLength 0. WebIDL makes the spec algorithms throw a TypeError then.
        if self._u8 is not None and self._u8.byteLength != self.byte_length:
            raise TypeError(f"{what}: the buffer has been detached")

    def copy_to(self, dest: Any) -> None:
        """Copy all bytes into `dest`, a writable buffer of exactly byte_length bytes."""
        target = memoryview(dest)
        if target.readonly:
            raise ValueError("copy_to: the destination is read-only")
        if target.nbytes != self.byte_length:
            raise ValueError(f"copy_to: the destination holds {target.nbytes} bytes, the source {self.byte_length}")
        if self._u8 is not None:
            self._check_detached("copy_to")
            if self.byte_length:
                self._u8.assign_to(target.cast("B") if target.format != "B" or target.ndim != 1 else target)
        else:
            target.cast("B")[:] = self._mv

    def copy_from(self, src: Any) -> None:
        """Overwrite the caller's buffer with `src` (exactly byte_length bytes): how
        readTensor(tensor, outputData) fills outputData in place."""
        data = memoryview(src)
        if data.nbytes != self.byte_length:
            raise ValueError(f"copy_from: the data holds {data.nbytes} bytes, the buffer {self.byte_length}")
        if data.format != "B" or data.ndim != 1:
            data = data.cast("B")
        if self._u8 is not None:
            self._check_detached("copy_from")
            if self.byte_length:
                self._u8.assign(data)
        else:
            if self._mv.readonly:
                raise TypeError("copy_from: the buffer is read-only")
            self._mv[:] = data

    def to_bytes(self) -> bytes:
        """A copy of the bytes."""
        if self._u8 is not None:
            self._check_detached("to_bytes")
            return self._u8.to_bytes()
        return self._mv.tobytes()


# Brand checks done in JS with the intrinsic getters, so that a plain object
# claiming Symbol.toStringTag "Float32Array" is not taken for one (WebIDL's
# conversions test internal slots, not names).
_JS_BUFFER_INFO_SOURCE = r"""
(() => {
  // Intrinsics captured when this is made (inside a call into the runtime, where the shim
  // has put the originals back): `call` is Reflect.apply, not Function.prototype.call
  // looked up on each getter later.
  const Reflect_apply = Reflect.apply, noArguments = [];
  const call = (get, v) => Reflect_apply(get, v, noArguments);
  const getter = (proto, key) => {
    const d = Object.getOwnPropertyDescriptor(proto, key);
    return d ? d.get : undefined;
  };
  const TA = Object.getPrototypeOf(Uint8Array.prototype);
  const taName = getter(TA, Symbol.toStringTag);
  const taBuffer = getter(TA, "buffer"), taOffset = getter(TA, "byteOffset"), taLength = getter(TA, "byteLength");
  const dvBuffer = getter(DataView.prototype, "buffer");
  const dvOffset = getter(DataView.prototype, "byteOffset"), dvLength = getter(DataView.prototype, "byteLength");
  const abLength = getter(ArrayBuffer.prototype, "byteLength"), isView = ArrayBuffer.isView;
  const abResizable = getter(ArrayBuffer.prototype, "resizable");
  const abDetached = getter(ArrayBuffer.prototype, "detached");
  // Pages that are not cross-origin isolated have no SharedArrayBuffer global,
  // yet shared wasm memory still hands out shared buffers: find the prototype
  // through one of those when the global is missing.
  let sabProto = typeof SharedArrayBuffer === "function" ? SharedArrayBuffer.prototype : undefined;
  if (!sabProto && typeof WebAssembly === "object") {
    try {
      sabProto = Object.getPrototypeOf(new WebAssembly.Memory({ initial: 0, maximum: 0, shared: true }).buffer);
    } catch (e) { /* no shared memory at all */ }
  }
  const hasSAB = sabProto !== undefined;
  const sabLength = hasSAB ? getter(sabProto, "byteLength") : undefined;
  const sabGrowable = hasSAB ? getter(sabProto, "growable") : undefined;
  const brand = (get, v) => { try { call(get, v); return true; } catch (e) { return false; } };
  const isDetached = (b) => {
    if (abDetached) return call(abDetached, b);
    try { new Uint8Array(b); return false; } catch (e) { return true; }
  };
  // A failed brand check throws; with no stack trace to capture, that costs
  // ~1 us instead of ~25 (every record and dictionary argument is tried).
  return (v) => {
    if (v === null || typeof v !== "object") return null;
    const limit = Error.stackTraceLimit;
    try { Error.stackTraceLimit = 0; } catch (e) { /* frozen by the page */ }
    try {
      return classify(v);
    } finally {
      try { Error.stackTraceLimit = limit; } catch (e) { /* frozen by the page */ }
    }
  };
  // Views first: isView answers without a throw, and only objects that are not views
  // pay for the failing brand checks.
  function classify(v) {
    let kind, name = null, buffer, offset = 0, length = 0;
    const view = isView(v);
    const n = view ? call(taName, v) : undefined;
    if (n !== undefined) {
      kind = "view"; name = n; buffer = call(taBuffer, v);
      offset = call(taOffset, v); length = call(taLength, v);
    } else if (view) {
      kind = "view"; name = "DataView"; buffer = call(dvBuffer, v);
      try { offset = call(dvOffset, v); length = call(dvLength, v); } catch (e) { /* detached */ }
    } else if (brand(abLength, v)) {
      kind = "ArrayBuffer"; buffer = v; length = call(abLength, v);
    } else if (hasSAB && brand(sabLength, v)) {
      kind = "SharedArrayBuffer"; buffer = v; length = call(sabLength, v);
    } else {
      return null;
    }
    const shared = hasSAB && !brand(abLength, buffer);
    const resizable = shared ? (sabGrowable ? call(sabGrowable, buffer) : false)
                             : (abResizable ? call(abResizable, buffer) : false);
    const detached = !shared && isDetached(buffer);
    const bytes = detached ? new Uint8Array(0) : new Uint8Array(buffer, offset, length);
    return [kind, name, shared, resizable, detached, bytes];
  }
})()
"""
_js_buffer_info_fn = None


def _js_buffer_info(v: Any) -> tuple | None:
    """(kind, typed array name, shared, resizable, detached, Uint8Array) or None."""
    global _js_buffer_info_fn
    if _js_buffer_info_fn is None:
        _js_buffer_info_fn = _run_js(_JS_BUFFER_INFO_SOURCE)
    info = _js_buffer_info_fn(v)
    if info is None:
        return None
    return tuple(info)


def _buffer_accepts(type_name: str, kind: str, element_type: str | None, allow_shared: bool) -> bool:
    """Does the IDL buffer type `type_name` take a buffer of this kind?"""
    if type_name == "AllowSharedBufferSource":
        return True
    if type_name == "ArrayBuffer":
        return kind == "ArrayBuffer"
    if type_name == "SharedArrayBuffer":
        return kind == "SharedArrayBuffer"
    if type_name == "BufferSource":
        return kind in ("ArrayBuffer", "view")
    if type_name == "ArrayBufferView":
        return kind == "view"
    return kind == "view" and element_type == type_name      # DataView or a typed array name


def convert_buffer(v: Any, type_name: str, ext: tuple = (), where: str = "value") -> BufferSource:
    """WebIDL "Buffer source types": ArrayBuffer, SharedArrayBuffer, DataView,
    typed arrays, and the ArrayBufferView / BufferSource / AllowSharedBufferSource
    typedefs. Views of a SharedArrayBuffer need [AllowShared] (implied by
    AllowSharedBufferSource), resizable buffers need [AllowResizable].

    Host: bytes and bytearray are ArrayBuffers; anything else with the buffer
    protocol (memoryview, array.array, numpy arrays...) is a view, whose element
    type follows its format. It must be C-contiguous, as a JS view always is."""
    allow_shared = "AllowShared" in ext or type_name == "AllowSharedBufferSource"
    if _is_js(v):
        info = _js_buffer_info(v)
        if info is None:
            raise _fail(where, f"{_describe(v)} is not an {type_name}")
        kind, name, shared, resizable, _detached, u8 = info
        if not _buffer_accepts(type_name, kind, name, allow_shared):
            raise _fail(where, f"a {name or kind} is not an {type_name}")
        if kind == "view" and shared and not allow_shared:
            raise _fail(where, f"a view on a SharedArrayBuffer is not an {type_name} (needs [AllowShared])")
        if resizable and "AllowResizable" not in ext:
            raise _fail(where, f"a view on a resizable buffer is not an {type_name}" if kind == "view"
                        else f"a resizable {kind} is not an {type_name}")
        return BufferSource(v, int(u8.byteLength), kind == "view", name if kind == "view" else None,
                            shared, u8=u8)
    kind = _host_buffer_kind(v)
    if kind is None:
        raise _fail(where, f"{_describe(v)} is not an {type_name} (no buffer protocol)")
    mv = memoryview(v)
    if not mv.c_contiguous:
        raise _fail(where, f"{_describe(v)} is not C-contiguous, so it cannot stand for an {type_name}")
    source = _host_buffer_source(v, kind, mv)
    if not _buffer_accepts(type_name, kind, source.element_type, allow_shared):
        raise _fail(where, f"{_describe(v)} is not an {type_name}")
    return source


def _host_buffer_source(v: Any, kind: str, mv: memoryview) -> BufferSource:
    """The BufferSource of a host buffer of this kind, `mv` its C-contiguous memoryview."""
    element_type = None if kind == "ArrayBuffer" else _element_type_of(mv)
    flat = mv.cast("B") if (mv.format != "B" or mv.ndim != 1) else mv
    return BufferSource(v, flat.nbytes, kind == "view", element_type, False, mv=flat)


#: Exact host types whose buffer kind is known from the type alone (numpy.ndarray is added
#: at its first sight: this module does not import numpy).
_PLAIN_HOST_BUFFERS: dict[type, str] = {bytes: "ArrayBuffer", bytearray: "ArrayBuffer", memoryview: "view"}


def host_buffer_source(v: Any) -> BufferSource | None:
    """What convert(v, "AllowSharedBufferSource") gives for a plain host buffer -- exactly a
    bytes or bytearray (an ArrayBuffer), a memoryview or a numpy.ndarray (a view), C-contiguous
    --, without convert()'s general steps (the per-run calls' fast path: api/idl.py); None for
    anything else, JS values and subclasses included, which then takes convert() and its
    errors."""
    cls = type(v)
    kind = _PLAIN_HOST_BUFFERS.get(cls)
    if kind is None:
        if cls.__name__ != "ndarray" or cls.__module__ != "numpy":
            return None
        kind = _PLAIN_HOST_BUFFERS[cls] = "view"
    try:
        mv = memoryview(v)
    except (TypeError, ValueError):     # e.g. a released memoryview, a datetime64 array
        return None
    if not mv.c_contiguous:
        return None
    return _host_buffer_source(v, kind, mv)


# -- WebIDL "Sequences — sequence<T>", "Frozen arrays", "Records — record<K, V>" -------------------

_symbols: dict = {}


def _iterator_symbol() -> Any:
    """Symbol.iterator, read once (two JS crossings)."""
    if not _symbols:
        _symbols["iterator"] = _js.Symbol.iterator
    return _symbols["iterator"]


def _iterator_method(v: Any) -> Any:
    """ECMAScript GetMethod(V, @@iterator) for an object `v`: the method (a JsProxy), True
    for an iterable host object, or None. A getter or Proxy trap that throws is rethrown."""
    if _is_js(v):
        method = _script("get", v, _iterator_symbol())
        return None if _is_nullish(method) else method
    if isinstance(v, (str, Mapping, bytes, bytearray)):
        # A dict stands for a plain JS object and bytes for an ArrayBuffer:
        # neither has @@iterator in JS.
        return None
    return True if isinstance(v, Iterable) else None


def _js_iteration(v: Any, method: Any):
    """The values of a JS iterable, one IteratorStepValue per item (WebIDL "create a
    sequence from an iterable": each item is converted before the next step)."""
    if not (_is_js(method) and method.typeof == "function"):
        raise TypeError("the value's [Symbol.iterator] is not a function")
    batch = _script_batch("iterate", v, method)
    while True:
        record = batch[0]
        for item in batch[1:]:
            yield _from_script(item)
        if record is None:
            return
        batch = _script_batch("collect", record)


def convert_sequence(v: Any, t: IdlType, where: str = "value", method: Any = None) -> list | tuple:
    """WebIDL "Sequences" (a list) and "Frozen arrays" (a tuple): the value
    must be an iterable object (a list, tuple, numpy array, generator..., or a JS
    iterable; not a str or dict); each element is converted to T. `method` is its
    @@iterator when the caller (a union, overload resolution) has read it already."""
    if not _is_an_object(v):
        raise _fail(where, f"{_describe(v)} is not an iterable object, as {t} requires")
    if method is None:
        method = _iterator_method(v)
    if method is None:
        raise _fail(where, f"{_describe(v)} is not an iterable object, as {t} requires")
    inner = t.params[0]
    if _is_js(v):
        try:
            items = _js_iteration(v, method)
            first = next(items, _DONE)
        except TypeError as exc:
            raise _fail(where, f"{exc}, as {t} requires") from None
        items = items if first is _DONE else _chain_first(first, items)
    else:
        try:
            items = iter(v)
        except TypeError:         # e.g. a 0-d numpy array
            raise _fail(where, f"{_describe(v)} is not iterable, as {t} requires") from None
    out = [convert(item, inner, f"{where}: element {i}") for i, item in enumerate(items)]
    return tuple(out) if t.name == "FrozenArray" else out


def _chain_first(first: Any, rest):
    yield first
    yield from rest


def convert_record(v: Any, t: IdlType, where: str = "value") -> dict:
    """WebIDL "Records — record<K, V>": the value's own enumerable string-keyed
    properties, in order. Host: a Mapping (dict); JS: any object, read through
    Object.keys and Reflect.get."""
    if not _is_an_object(v):
        raise _fail(where, f"{_describe(v)} is not an object, as {t} requires")
    key_t, value_t = t.params
    if _is_js(v):
        # Proxy traps and getters are page code: the helpers rethrow what they throw.
        interface = _resolve(value_t).name
        if _platform_proxy_of is not None and interface in _CLASSES:
            pairs = _platform_record_pairs(v, interface)
        else:
            pairs = ((k, _script("get", v, k)) for k in _script("keys", v))
    elif isinstance(v, Mapping):
        pairs = iter(list(v.items()))
    else:
        raise _fail(where, f"{_describe(v)} is not a dict, as {t} requires")
    out: dict = {}
    for key, value in pairs:
        typed_key = convert(key, key_t, f"{where}: key {_describe(key)}")
        out[typed_key] = convert(value, value_t, f"{where}: value of key {typed_key!r}")
    return out


def _platform_record_pairs(v: Any, interface: str):
    """(key, value) of a JS record whose values convert to `interface`, from one
    crossing (the "platformRecord" helper): a wrapper value arrives as its Python object."""
    batch = _script_batch("platformRecord", v, _platform_proxy_of, interface)
    for i in range(0, len(batch), 2):
        key = _from_script(batch[i])
        yield key, _from_script(batch[i + 1])


# -- WebIDL "Dictionary types" ---------------------------------------------------------------------

def convert_dictionary(name: str, v: Any, where: str | None = None) -> dict:
    """WebIDL "Dictionary types". undefined/None (or null) -> all defaults.
    Members are read base dictionary first, lexicographically within each; a
    member that is None/undefined is "not present" and takes its default; a
    missing required member is a TypeError; unknown members are ignored.
    Result: a plain dict keyed by the IDL (camelCase) member names, holding the
    present members and the ones with defaults. Any other non-object -> TypeError.
    Host objects other than Mappings are read with getattr."""
    d = _DICTIONARIES[name]
    where = where or name
    nullish = _is_nullish(v)
    if not nullish and not _is_an_object(v):
        raise _fail(where, f"{_describe(v)} is not an object, so it cannot be a {name} dictionary")
    if nullish:
        get = None
    elif _is_js(v):
        # Reflect.get is exactly JS [[Get]] (getters, prototype chain), and unlike
        # getattr it cannot pick up a JsProxy method of the same name; a getter or
        # Proxy trap that throws is rethrown as it is. Read in batches (the "members"
        # helper), in member order, each member converted before the next object is read.
        member_values = _js_member_values(v, d)

        def get(key: str, _values=member_values) -> Any:
            return next(_values)
    elif isinstance(v, Mapping):
        get = v.get
    else:
        def get(key: str, _v=v) -> Any:
            return getattr(_v, key, None)
    out: dict = {}
    wheres = _member_wheres.get((name, where))
    if wheres is None:
        wheres = _member_wheres[(name, where)] = [f"{where}: member '{m.name}' of {m.declared_in or name}"
                                                  for m in d.members]
    for m, member_where in zip(d.members, wheres):
        value = None if get is None else get(m.name)
        if value is not None:
            out[m.name] = convert(value, m.type, member_where)
        elif m.default is not NO_DEFAULT:
            out[m.name] = _default_value(m.type, m.default, member_where)
        elif m.required:
            raise _fail(where, f"required member '{m.name}' of {m.declared_in or name} is missing")
    return out


_member_wheres: dict[tuple, list] = {}   # (dictionary, where) -> each member's place, for messages
_member_keys: dict[str, Any] = {}        # dictionary -> a JS array of its member names, in order


def _js_member_values(v: Any, d: Dictionary):
    """The values of dictionary `d`'s members read from the JS object `v`, in order."""
    keys = _member_keys.get(d.name)
    if keys is None:
        keys = _member_keys[d.name] = _to_js([m.name for m in d.members])
    start, count = 0, len(d.members)
    while start < count:
        batch = _script_batch("members", v, keys, start)
        start += len(batch)
        for item in batch:
            yield _from_script(item)


# -- WebIDL "Union types" --------------------------------------------------------------------------

def _resolve(t: IdlType) -> IdlType:
    """Expand typedefs (keeping the use site's nullability and extended attributes)."""
    seen = 0
    while t.name in _TYPEDEFS and seen < 32:
        target = _TYPEDEFS[t.name]
        t = target._replace(nullable=target.nullable or t.nullable, ext=tuple(dict.fromkeys(target.ext + t.ext)))
        seen += 1
    return t


def _flatten(t: IdlType) -> list[IdlType]:
    """The flattened member types of a union (WebIDL "Union types"), typedefs expanded."""
    t = _resolve(t)
    if t.name != "union":
        return [t._replace(nullable=False)]
    out: list[IdlType] = []
    for member in t.params:
        out.extend(_flatten(member))
    return out


def _includes_nullable(t: IdlType) -> bool:
    t = _resolve(t)
    if t.nullable:
        return True
    return t.name == "union" and any(_includes_nullable(p) for p in t.params)


def _category(t: IdlType) -> str:
    name = t.name
    if name in _INTEGER_TYPES or name in _FLOAT_TYPES:
        return "numeric"
    if name in _STRING_TYPES or name in _ENUMS:
        return "string"
    if name in ("boolean", "bigint", "any", "undefined", "object", "record", "Promise"):
        return name
    if name in ("sequence", "FrozenArray", "ObservableArray"):
        return "sequence"
    if name in _BUFFER_TYPES:
        return "buffer"
    if name in _DICTIONARIES:
        return "dictionary"
    return "interface"


def convert_union(v: Any, t: IdlType, where: str = "value") -> Any:
    """WebIDL "Union types": JS value -> IDL union value, step by step."""
    flat = _flatten(t)
    cats = {_category(m) for m in flat}
    kind = js_kind(v)

    def first(cat: str) -> IdlType | None:
        return next((m for m in flat if _category(m) == cat), None)

    if "undefined" in cats and v is None:
        return None
    if _includes_nullable(t) and _is_nullish(v):
        return None
    if _is_nullish(v) and "dictionary" in cats:
        return convert(v, first("dictionary"), where)
    if kind == "platform":
        for m in flat:
            if _category(m) == "interface" and _implements(v, m.name):
                return v
    if kind in ("ArrayBuffer", "SharedArrayBuffer", "view"):
        info_element = None
        if kind == "view":
            info_element = (_js_buffer_info(v)[1] if _is_js(v)
                            else _element_type_of(memoryview(v)))
        for m in flat:
            if _category(m) == "buffer" and _buffer_accepts(m.name, kind, info_element, True):
                return convert(v, m, where)
    if _is_object(kind):
        if "object" in cats:
            return v
        if "sequence" in cats:
            method = _iterator_method(v)
            if method is not None:
                return convert_sequence(v, first("sequence"), where, method)
        for cat in ("dictionary", "record"):
            if cat in cats:
                return convert(v, first(cat), where)
    if kind == "boolean" and "boolean" in cats:
        return convert_boolean(v, where)
    if kind == "number":
        # A Python int is also what a JS BigInt arrives as: keep it exact when the
        # union can hold a bigint (MLNumber), see the module docstring.
        if isinstance(v, numbers.Integral) and "bigint" in cats:
            return int(v)
        if "numeric" in cats:
            return convert(v, first("numeric"), where)
    if kind == "bigint" and "bigint" in cats:
        return convert_bigint(v, where)
    if "string" in cats:
        return convert(v, first("string"), where)
    if "numeric" in cats and "bigint" in cats:
        # ToNumeric: a BigInt primitive was taken above; an object whose valueOf gives
        # one (Object(5n)) is a bigint too; everything else becomes a Number.
        if _is_js(v):
            x = _script("toNumeric", v)
            return int(x) if isinstance(x, JsBigInt) else convert(x, first("numeric"), where)
        return convert(v, first("numeric"), where)
    if "numeric" in cats:
        return convert(v, first("numeric"), where)
    if "boolean" in cats:
        return convert_boolean(v, where)
    if "bigint" in cats:
        return convert_bigint(v, where)
    if "any" in cats:
        return v
    raise _fail(where, f"{_describe(v)} is not any of the types in {t}")


# -- the dispatcher --------------------------------------------------------------------------------

def convert(v: Any, t: IdlType | str, where: str = "value") -> Any:
    """Convert `v` to IDL type `t` (an IdlType or IDL type text)."""
    if isinstance(t, str):
        t = parse_type(t)
    v = _unwrap_js(v)
    t = _resolve(t)
    if t.nullable and _is_nullish(v) and t.name != "union":
        return None                                   # WebIDL "Nullable types — T?"
    name = t.name
    if name in _INTEGER_TYPES:
        return convert_integer(v, name, t.ext, where)
    if name in _FLOAT_TYPES:
        return convert_float(v, name, where)
    if name == "boolean":
        return convert_boolean(v, where)
    if name == "bigint":
        return convert_bigint(v, where)
    if name in _STRING_TYPES:
        return convert_string(v, name, t.ext, where)
    if name == "union":
        return convert_union(v, t, where)
    if name in ("sequence", "FrozenArray", "ObservableArray"):
        return convert_sequence(v, t, where)
    if name == "record":
        return convert_record(v, t, where)
    if name in ("any", "undefined", "Promise"):
        # Promise<T> arguments would be resolved promises; WebNN takes none.
        return v
    if name == "object":
        return convert_object(v, where)
    if name in _BUFFER_TYPES:
        return convert_buffer(v, name, t.ext, where)
    if name in _ENUMS:
        return convert_enum(v, name, where)
    if name in _DICTIONARIES:
        return convert_dictionary(name, v, where)
    return convert_interface(v, name, where)


# -- WebIDL "Overload resolution algorithm" --------------------------------------------------------

class _Entry(NamedTuple):
    index: int            # which overload
    types: tuple          # IdlTypes of the first `len(types)` arguments
    optional: tuple       # per argument: "required" / "optional" / "variadic"


def _effective_overload_set(overloads: tuple, n: int) -> list[_Entry]:
    """WebIDL "compute the effective overload set" for argument count n."""
    entries = []
    for index, o in enumerate(overloads):
        args = o.arguments
        types = [a.type for a in args]
        opt = ["variadic" if a.variadic else ("optional" if a.optional else "required") for a in args]
        if args and args[-1].variadic:
            for _ in range(len(args), n):
                types.append(args[-1].type)
                opt.append("variadic")
        entries.append(_Entry(index, tuple(types), tuple(opt)))
        k = len(args) - 1
        while k >= 0 and (args[k].optional or args[k].variadic):
            entries.append(_Entry(index, tuple(types[:k]), tuple(opt[:k])))
            k -= 1
    return entries


def _required_count(overload: Overload) -> int:
    count = 0
    for a in overload.arguments:
        if a.optional or a.variadic:
            break
        count += 1
    return count


def _matches_at(t: IdlType, pred) -> bool:
    """Does `t` -- or, if a (nullable) union, one of its flattened members -- satisfy pred?"""
    return any(pred(m) for m in _flatten(t))


_takes_buffers: dict[tuple, bool] = {}     # the types at d of an overload set -> any buffer or object


def _select_entry(S: list[_Entry], d: int, v: Any) -> _Entry | None:
    """WebIDL overload resolution algorithm, the distinguishing step: pick the entry by the JS type of the
    value at the distinguishing index."""
    # Whether V is a buffer only matters where an entry takes a buffer or `object` at d;
    # elsewhere a buffer goes the way of any other object.
    types_at_d = tuple(e.types[d] for e in S)
    buffers = _takes_buffers.get(types_at_d)
    if buffers is None:
        buffers = _takes_buffers[types_at_d] = any(
            _matches_at(t, lambda m: _category(m) in ("buffer", "object")) for t in types_at_d)
    kind = js_kind(v, buffers)

    def find(pred) -> _Entry | None:
        return next((e for e in S if _matches_at(e.types[d], pred)), None)

    if v is None:
        hit = next((e for e in S if e.optional[d] == "optional"), None)
        if hit:
            return hit
    if kind in ("undefined", "null"):
        hit = next((e for e in S if _includes_nullable(e.types[d])
                    or _matches_at(e.types[d], lambda m: _category(m) == "dictionary")), None)
        if hit:
            return hit
    if kind == "object" and any(_matches_at(e.types[d], lambda m: m.name == "GPUDevice") for e in S):
        if _is_gpu_device(v):
            kind = "platform"
    if kind == "platform":
        hit = find(lambda m: (_category(m) == "interface" and _implements(v, m.name)) or m.name == "object")
        if hit:
            return hit
    if kind in ("ArrayBuffer", "SharedArrayBuffer", "view"):
        element = None
        if kind == "view":
            element = (_js_buffer_info(v)[1] if _is_js(v)
                       else _element_type_of(memoryview(v)))
        hit = find(lambda m: (_category(m) == "buffer" and _buffer_accepts(m.name, kind, element, True))
                   or m.name == "object")
        if hit:
            return hit
    if _is_object(kind):
        if any(_matches_at(e.types[d], lambda m: _category(m) == "sequence") for e in S) \
                and _iterator_method(v) is not None:
            hit = find(lambda m: _category(m) == "sequence")
            if hit:
                return hit
        hit = find(lambda m: _category(m) in ("dictionary", "record", "object"))
        if hit:
            return hit
    if kind == "boolean":
        hit = find(lambda m: _category(m) == "boolean")
        if hit:
            return hit
    if kind == "number":
        hit = find(lambda m: _category(m) == "numeric")
        if hit:
            return hit
        if isinstance(v, numbers.Integral):
            hit = find(lambda m: _category(m) == "bigint")
            if hit:
                return hit
    if kind == "bigint":
        hit = find(lambda m: _category(m) == "bigint")
        if hit:
            return hit
    for cat in ("string", "numeric", "boolean", "bigint", "any"):
        hit = find(lambda m, cat=cat: _category(m) == cat)
        if hit:
            return hit
    return None


class _OverloadPlan(NamedTuple):
    """What overload resolution decides from the argument count alone (its steps up to the
    distinguishing argument index): the same for every call with that many arguments."""
    entries: list          # the effective overload set S, entries of length argcount
    argcount: int
    distinguishing: int    # the distinguishing argument index d (-1: S has one entry)
    wheres: tuple          # wheres[overload index][i]: "Failed to ...: parameter i+1 ('name')"


def _overload_plan(overloads: tuple, n: int, where: str) -> _OverloadPlan:
    maxarg = max((len(o.arguments) for o in overloads), default=0)
    if any(o.arguments and o.arguments[-1].variadic for o in overloads):
        maxarg = max(maxarg, n)
    argcount = min(maxarg, n)
    S = [e for e in _effective_overload_set(overloads, n) if len(e.types) == argcount]
    if not S:
        need = min(_required_count(o) for o in overloads)
        raise TypeError(f"{where}: {need} argument{'s' if need != 1 else ''} required, but only {n} present.")
    d = next(k for k in range(argcount) if len({e.types[k] for e in S}) > 1) if len(S) > 1 else -1
    wheres = tuple(
        tuple(f"{where}: parameter {i + 1} ('{o.arguments[min(i, len(o.arguments) - 1)].name}')"
              for i in range(max(n, len(o.arguments)))) if o.arguments else ()
        for o in overloads)
    return _OverloadPlan(S, argcount, d, wheres)


def resolve_overloads(overloads: tuple, args: tuple | list, where: str,
                      plan: _OverloadPlan | None = None) -> tuple[int, list]:
    """WebIDL "overload resolution algorithm" plus argument conversion.

    Returns (index of the chosen overload, converted arguments): one value per
    argument of that overload, with defaults filled in for omitted optional
    arguments and MISSING for omitted optional arguments without a default;
    variadic arguments are appended. Too few arguments -> TypeError. `plan`: the
    overloads' _OverloadPlan for len(args) arguments, when the caller keeps one."""
    args = tuple(args)
    if plan is None:
        plan = _overload_plan(overloads, len(args), where)
    S, argcount, d, wheres = plan
    values: list = []
    i = 0
    if d >= 0:
        first = overloads[S[0].index].arguments
        while i < d:
            values.append(_convert_argument(args[i], first[i], wheres[S[0].index][i]))
            i += 1
        entry = _select_entry(S, d, args[d])
        if entry is None:
            raise TypeError(f"{where}: parameter {d + 1} is {_describe(args[d])}, which no overload accepts.")
    else:
        entry = S[0]
    o_args = overloads[entry.index].arguments
    where_at = wheres[entry.index]
    last = len(o_args) - 1
    while i < argcount:
        values.append(_convert_argument(args[i], o_args[i if i < last else last], where_at[i]))
        i += 1
    while i <= last:
        a = o_args[i]
        if a.variadic:
            break
        values.append(_default_value(a.type, a.default, where_at[i]) if a.default is not NO_DEFAULT else MISSING)
        i += 1
    return entry.index, values


def _convert_argument(v: Any, a: Argument, where: str) -> Any:
    if a.optional and v is None:
        # An optional argument given as undefined is as if omitted (overload resolution).
        return _default_value(a.type, a.default, where) if a.default is not NO_DEFAULT else MISSING
    return convert(v, a.type, where)


def _find_overloads(interface: str, operation: str) -> tuple[tuple, str]:
    name = interface
    while name:
        info = _INTERFACES.get(name)
        if info is None:
            break
        if operation == "constructor" and info.constructors:
            return info.constructors, f"Failed to construct '{interface}'"
        if operation in info.operations:
            return info.operations[operation], f"Failed to execute '{operation}' on '{interface}'"
        name = info.inherits
    raise KeyError(f"{interface} has no operation {operation!r} in the IDL")


def convert_arguments(interface: str, operation: str, args: tuple | list) -> tuple[int, list]:
    """Overload resolution and argument conversion for `interface.operation(*args)`
    ("constructor" for the constructor). Returns (overload_index, converted_args)."""
    key = (interface, operation, len(args))
    found = _plans.get(key)
    if found is None:
        overloads, where = _find_overloads(interface, operation)
        found = _plans[key] = (overloads, where, _overload_plan(overloads, len(args), where))
    overloads, where, plan = found
    return resolve_overloads(overloads, args, where, plan)


_plans: dict[tuple, tuple] = {}    # (interface, operation, argument count) -> (overloads, where, plan)
