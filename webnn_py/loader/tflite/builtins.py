"""The registry of the TFLite importer: every builtin operator code of the TFLite
schema (schema.BUILTIN_NAMES, the BuiltinOperator enum of schema.fbs) is either
translated or listed with the reason it is not.

  TRANSLATORS  operator name -> translate(importer); builtins and the custom
               operators we know by their custom code (MediaPipe's)
  UNSUPPORTED  builtin name -> why it is not translated (one sentence)

Read by tools/gen_loader_tables.py (the README's TFLite table) through
`table()`; keep these names stable. load() checks a model against the registry
before translating anything (`unsupported()`), so that one NotSupportedError
names every operator it cannot translate.
"""
from __future__ import annotations

from ...base.errors import NotSupportedError
from . import (ops_control, ops_conv, ops_detection, ops_elementwise, ops_layout, ops_logical, ops_norm,
               ops_pool_resize, ops_quant, ops_recurrent, ops_segment, ops_shape, ops_stablehlo, ops_state,
               ops_window)
from .schema import BUILTIN_NAMES, Model

TRANSLATORS: dict = {}
for _module in (ops_control, ops_conv, ops_detection, ops_elementwise, ops_layout, ops_logical, ops_norm,
                ops_pool_resize, ops_quant, ops_recurrent, ops_segment, ops_shape, ops_stablehlo, ops_state,
                ops_window):
    TRANSLATORS.update(_module.TRANSLATORS)

# Reasons shared by several operators.
_DYNAMIC = "its output shape depends on the input values; WebNN operands have static shapes"
_COMPLEX = "it reads or writes COMPLEX64 tensors; WebNN has no complex data type"
_STRING = "it works on STRING tensors; WebNN has no string data type"
_BITWISE = "it works on the bits of integers; WebNN has no bitwise or shift operators"
_RANDOM = "it draws random numbers; WebNN has no random number generator"
_HASH_TABLE = ("a TensorFlow lookup table resource (HASHTABLE, filled by HASHTABLE_IMPORT, read by "
               "HASHTABLE_FIND); LiteRT's kernel accepts only INT64 -> STRING and STRING -> INT64 tables, and "
               "WebNN has no string data type")
_NOT_IN_FILES = "LiteRT has no kernel for it: it is a code reserved inside the runtime, never written in a model file"
_NO_STABLEHLO_KERNEL = ("LiteRT has no kernel for it (converters lower StableHLO to TFLite builtins), so no model "
                        "that LiteRT runs contains it; its general form (dimension numbers, a body subgraph) is "
                        "not translated")

UNSUPPORTED = {
    "LSH_PROJECTION": "it hashes its input's bytes (farmhash fingerprints); WebNN has no bitwise or hash operators",
    "CONCAT_EMBEDDINGS": _NOT_IN_FILES,
    "SKIP_GRAM": _STRING,
    "CALL": _NOT_IN_FILES,
    "CUSTOM": ("a custom operator is known by its custom code: only MediaPipe's Convolution2DTransposeBias is "
               "translated; others have no definition to translate from"),
    "EMBEDDING_LOOKUP_SPARSE": _DYNAMIC,
    "DELEGATE": _NOT_IN_FILES,
    "UNIQUE": _DYNAMIC,
    "WHERE": _DYNAMIC + " (the coordinates of the true elements: as many rows as there are)",
    "RFFT2D": _COMPLEX,
    "IMAG": _COMPLEX,
    "REAL": _COMPLEX,
    "COMPLEX_ABS": _COMPLEX,
    "HASHTABLE": _HASH_TABLE,
    "HASHTABLE_FIND": _HASH_TABLE,
    "HASHTABLE_IMPORT": _HASH_TABLE,
    "HASHTABLE_SIZE": _HASH_TABLE,
    "RANDOM_STANDARD_NORMAL": _RANDOM,
    "RANDOM_UNIFORM": _RANDOM,
    "MULTINOMIAL": _RANDOM,
    "BITCAST": "it reinterprets the bytes of one type as another; WebNN's cast converts values, never bits",
    "BITWISE_XOR": _BITWISE,
    "RIGHT_SHIFT": _BITWISE,
    "STABLEHLO_SHIFT_LEFT": _BITWISE,
    "STABLEHLO_RNG_BIT_GENERATOR": _RANDOM,
    "STABLEHLO_SCATTER": ("not translated: StableHLO's scatter skips out-of-range updates and combines repeated "
                          "indices through its update subgraph (e.g. a sum), where WebNN's scatterND clamps "
                          "indices and keeps one update per element"),
    "STABLEHLO_CUSTOM_CALL": "a call to a function outside the model, known only by its name; there is nothing "
                             "to translate it from",
    **{name: _NO_STABLEHLO_KERNEL for name in (
        "STABLEHLO_CONVOLUTION", "STABLEHLO_REDUCE", "STABLEHLO_DOT_GENERAL", "STABLEHLO_SORT", "STABLEHLO_WHILE")},
}


def reason(name: str) -> str:
    """Why operator `name` (a builtin name or a custom code) is not translated."""
    if name in UNSUPPORTED:     # every builtin not translated (test_builtins.py checks it)
        return UNSUPPORTED[name]
    if name.startswith("builtin operator "):
        return "the code is not in the TFLite schema this importer knows"
    return "a custom operator with no definition to translate from"


# Subgraphs an operator runs: operator name -> option slots holding subgraph indices
# (STABLEHLO_COMPOSITE's are in builtin_options_2).
_CALLS = {"WHILE": (0, 1), "IF": (0, 1), "CALL_ONCE": (0,)}
_CALLS_2 = {"STABLEHLO_COMPOSITE": (1,)}
_CALL_LISTS_2 = {"STABLEHLO_CASE": 0}          # a vector of subgraph indices


def unsupported(model: Model, start: int) -> None:
    """Raise one NotSupportedError naming every operator, in subgraph `start` and
    the subgraphs its operators call, that the importer does not translate."""
    seen, pending, missing = set(), [start], {}
    while pending:
        index = pending.pop()
        if index in seen or not 0 <= index < len(model.subgraphs):
            continue
        seen.add(index)
        for op in model.subgraphs[index].operators:
            name = op.opcode.name
            if name not in TRANSLATORS:
                missing.setdefault(name, []).append(str(op.index) if index == start else f"{op.index} of subgraph {index}")
            else:
                for table, slots in ((op.options, _CALLS.get(name, ())), (op.options_2, _CALLS_2.get(name, ()))):
                    if table is not None:
                        pending += [table.scalar(slot, "i32", -1) for slot in slots]
                if name in _CALL_LISTS_2 and op.options_2 is not None:
                    pending += op.options_2.ints(_CALL_LISTS_2[name], "branch_subgraph_indices")
    if missing:
        parts = [f"{name} (operator{'s' if len(where) > 1 else ''} {', '.join(where[:5])}"
                 f"{', …' if len(where) > 5 else ''}: {reason(name)})" for name, where in missing.items()]
        raise NotSupportedError(f"load: the model uses {len(missing)} TFLite operator"
                                f"{'s' if len(missing) > 1 else ''} that cannot be translated: " + "; ".join(parts))


def table() -> list[tuple[str, int, bool, str]]:
    """(name, code, supported, note) for every builtin operator code, in code order."""
    return [(name, code, name in TRANSLATORS, "" if name in TRANSLATORS else reason(name))
            for code, name in sorted(BUILTIN_NAMES.items())]

