"""The TFLite importer's registry (webnn_py/loader/tflite/builtins.py): every
builtin operator code of LiteRT's schema is translated or has a reason, and
load() names every operator it cannot translate in one NotSupportedError."""
from __future__ import annotations

import numpy as np
import pytest

from webnn_py.base.errors import NotSupportedError
from webnn_py.loader.tflite import builtins
from webnn_py.loader.tflite.schema import BUILTIN_NAMES

from .helpers import webnn_run
from .tflite_writer import ModelWriter, options


def litert_codes() -> dict[int, str]:
    from ai_edge_litert import schema_py_generated as schema
    codes = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    codes.pop(127)          # PLACEHOLDER_FOR_GREATER_OP_CODES: a marker, not an operator
    return codes


def test_every_builtin_code_of_litert_schema_is_known():
    assert BUILTIN_NAMES == litert_codes()


def test_every_builtin_is_translated_or_has_a_reason():
    names = set(BUILTIN_NAMES.values())
    translated = names & set(builtins.TRANSLATORS)
    refused = names & set(builtins.UNSUPPORTED)
    assert translated | refused == names
    assert not translated & refused
    assert set(builtins.UNSUPPORTED) <= names        # every reason is for a builtin
    assert all(reason.strip() for reason in builtins.UNSUPPORTED.values())
    rows = builtins.table()
    assert len(rows) == len(BUILTIN_NAMES) and sum(r[2] for r in rows) == len(translated)


def test_one_error_names_every_unsupported_operator():
    """UNIQUE twice, RIGHT_SHIFT, a custom op, and an unsupported op inside a WHILE body:
    one NotSupportedError names them all, with the reasons; nothing is built."""
    w = ModelWriter()
    g = w.subgraph()
    x = g.tensor([4], name="x")
    outs = []
    for _ in range(2):
        v, i = g.tensor([4]), g.tensor([4], np.int32)
        g.op("UNIQUE", [x], [v, i])
        outs.append(v)
    a = g.tensor([4])
    g.op("RIGHT_SHIFT", [x, x], [a])
    c = g.tensor([4])
    g.op("CUSTOM", [a], [c], custom="MyFancyOp")
    cond, body = w.subgraph(), w.subgraph()
    cx, cb = cond.tensor([4]), cond.tensor([], np.bool_)
    cond.op("LESS", [cx, cx], [cb])
    cond.io([cx], [cb])
    bx, by = body.tensor([4]), body.tensor([4])
    body.op("BITCAST", [bx], [by])
    body.io([bx], [by])
    y = g.tensor([4], name="y")
    g.op("WHILE", [c], [y], options("WhileOptions", condSubgraphIndex=cond.index, bodySubgraphIndex=body.index))
    g.io([x], [y, *outs])
    with pytest.raises(NotSupportedError) as info:
        webnn_run(w.finish(), {"x": np.zeros(4, np.float32)})
    message = str(info.value)
    assert "4 TFLite operators" in message
    assert "UNIQUE (operators 0, 1: its output shape depends on the input values" in message
    assert "RIGHT_SHIFT (operator 2: it works on the bits of integers" in message
    assert "MyFancyOp (operator 3: a custom operator" in message
    assert f"BITCAST (operator 0 of subgraph {body.index}:" in message


def test_every_translated_operator_has_a_test():
    """Each translated builtin (and custom operator) is named in a test model of tests/loader."""
    import re
    from pathlib import Path
    text = "\n".join(p.read_text(encoding="utf-8") for p in Path(__file__).parent.glob("*.py"))
    untested = [name for name in builtins.TRANSLATORS if not re.search(rf"[\"']{re.escape(name)}[\"']", text)]
    assert not untested
