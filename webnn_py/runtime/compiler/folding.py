"""Constant folding: a node whose operands are all constants (given with
constant() or folded before it) is evaluated once, at build(), by the same
kernel that would run at dispatch; its results become constants of the plan.

A kernel that fails here is left in the plan, so that the failure happens at
dispatch as it would have without folding (dispatch reports it, build() does not).
"""
from __future__ import annotations

from types import GeneratorType
from typing import Mapping

import numpy as np

from ...ops import operator_kind
from ..ir import Node, Value
from ..plan import run_to_end

# Folding trades build time and memory for dispatch time; an operation that would
# materialise a much larger array than its operands (expand, tile, a big constant
# pad) is left to run per dispatch beyond this many output elements.
MAX_FOLDED_ELEMENTS = 1 << 24


def fold_constants(order: list[Node], outputs: Mapping[str, Value]) -> tuple[dict[int, np.ndarray], list[Node]]:
    """Returns ({id(value): array} for every folded value, the folded nodes in order)."""
    known: dict[int, np.ndarray] = {}
    folded: list[Node] = []

    def constant(value: Value) -> np.ndarray | None:
        return value.constant if value.is_constant else known.get(id(value))

    for node in order:
        if node.kind == "loop":
            # A loop of constants could run up to maxIterations times inside build();
            # it runs at dispatch, where a runaway loop is reported as such.
            continue
        arrays = [None if v is None else constant(v) for v in node.inputs]
        if any(a is None for v, a in zip(node.inputs, arrays) if v is not None):
            continue
        if sum(v.descriptor.element_count for v in node.outputs) > MAX_FOLDED_ELEMENTS:
            continue
        try:
            with np.errstate(all="ignore"):
                results = operator_kind(node.kind).kernel(arrays, node.attributes,
                                                          [v.descriptor for v in node.outputs])
                if isinstance(results, GeneratorType):
                    results = run_to_end(results)
        except Exception:  # noqa: BLE001 -- see the module docstring
            continue
        if any(r.shape != v.descriptor.shape or r.dtype != v.descriptor.type.numpy
               for v, r in zip(node.outputs, results)):
            continue    # a kernel bug: the executor's first run reports it
        for value, result in zip(node.outputs, results):
            # A copy the plan owns (results may be views of other constants), read-only
            # because every dispatch shares it.
            array = np.array(result, copy=True)
            array.setflags(write=False)
            known[id(value)] = array
        folded.append(node)
    return known, folded
