"""Hostile constants for the breadth translators: every one-operator model of
test_ops_breadth.py again, with each constant input replaced by an empty, a
huge, a negative or a wrongly shaped value. load() may succeed or fail, but only
with DataError or NotSupportedError (never IndexError, ValueError, a crash).
(A huge value that load() accepts is the builder's to bound: a FILL of 2^31 - 1
elements fails build() with its own error.)"""
from __future__ import annotations

import asyncio
import inspect

import numpy as np
import pytest

from webnn_py.base.errors import DataError, NotSupportedError

from webnn_py import ml
from webnn_py.loader import MLModelLoader

from . import test_ops_breadth as breadth

CLEAN = (DataError, NotSupportedError)
VARIANTS = {
    "empty": lambda c: np.zeros(0, c.dtype),
    "huge": lambda c: np.full(c.shape, np.iinfo(np.int32).max if c.dtype.kind in "iu" else 3e38, c.dtype),
    "negative": lambda c: np.full(c.shape, -7, c.dtype),
    "reshaped": lambda c: np.resize(c, (2, 2, 2)).astype(c.dtype),
}


def recorded_models() -> list[tuple]:
    """The one_op calls of every test of test_ops_breadth.py (run with the LiteRT
    comparison switched off), as (test name, call arguments)."""
    calls = []
    original = breadth.one_op

    def record(code, inputs, outputs, consts=(), opts=None, const_first=False):
        calls.append((code, inputs, outputs, consts, opts, const_first))
        return original(code, inputs, outputs, consts, opts, const_first)

    saved = breadth.one_op, breadth.check, breadth.check_quantized, breadth.webnn_run
    random_state = breadth.RNG.bit_generator.state      # the breadth tests' own inputs stay the same
    breadth.one_op, breadth.check = record, lambda *a, **k: None
    breadth.check_quantized = lambda *a, **k: None
    breadth.webnn_run = lambda *a, **k: None
    try:
        for name, test in inspect.getmembers(breadth, inspect.isfunction):
            if not name.startswith("test_"):
                continue
            marks = getattr(test, "pytestmark", [])
            params = [m for m in marks if m.name == "parametrize"]
            kwargs = {}
            for mark in params:          # the first value of each parameter is enough here
                names = [n.strip() for n in mark.args[0].split(",")]
                first = mark.args[1][0]
                kwargs.update(zip(names, first if len(names) > 1 else [first]))
            try:
                test(**kwargs)
            except (Exception, pytest.fail.Exception):  # noqa: BLE001 - tests that need the real outputs
                pass
    finally:
        breadth.one_op, breadth.check, breadth.check_quantized, breadth.webnn_run = saved
        breadth.RNG.bit_generator.state = random_state
    return [call for call in calls if call[3]]


def load(model: bytes) -> None:
    async def go():
        await MLModelLoader(await ml.createContext()).load(model)
    asyncio.run(go())


CALLS = recorded_models()


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("call", CALLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(CALLS)])
def test_hostile_constant(call, variant):
    code, inputs, outputs, consts, opts, const_first = call
    for k, value in enumerate(consts):
        if value is None:
            continue
        hostile = list(consts)
        hostile[k] = VARIANTS[variant](np.asarray(value))
        model, _ = breadth.one_op(code, inputs, outputs, hostile, opts, const_first)
        try:
            load(model)
        except CLEAN:
            pass
