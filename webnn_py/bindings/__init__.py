"""WebIDL bindings: the IDL definitions of idl/*.idl as data (generated.py, written
by tools/gen_bindings.py -- never edit it) and the hand-written WebIDL -> Python
conversions they use (webidl.py).

    convert_arguments("MLGraphBuilder", "conv2d", args) -> (overload_index, converted_args)
    convert_dictionary("MLOperandDescriptor", value)     -> dict
    register_interface("MLOperand", MLOperand)           # done by the implementation classes

This package imports nothing from the implementation (webnn_py.api etc.).
"""
from .webidl import (  # noqa: F401
    MISSING,
    NO_DEFAULT,
    NULL,
    BufferSource,
    IdlType,
    JsBigInt,
    ScriptException,
    convert,
    host_buffer_source,
    js_kind,
    parse_type,
    register_interface,
    resolve_overloads,
    script_arguments,
    set_platform_object_unwrapper,
)
from .generated import (  # noqa: F401
    DICTIONARIES,
    ENUMS,
    INCLUDES,
    INTERFACES,
    TYPEDEFS,
    convert_arguments,
    convert_dictionary,
)

__all__ = [
    "MISSING", "NO_DEFAULT", "NULL", "BufferSource", "IdlType", "convert", "host_buffer_source", "js_kind", "parse_type",
    "register_interface", "resolve_overloads", "set_platform_object_unwrapper", "DICTIONARIES", "ENUMS", "INCLUDES", "INTERFACES", "TYPEDEFS",
    "convert_arguments", "convert_dictionary",
]
