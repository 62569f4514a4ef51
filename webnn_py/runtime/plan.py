"""Compile the recorded graph into a flat execution plan and run it.

Compilation walks back from the outputs (the traversal of §8.9.4 build()
step 9), orders nodes topologically once, and assigns every value a slot in a
list, so executing is a walk over a list of kernel calls with no graph work.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import GeneratorType
from typing import Generator, Mapping

import numpy as np

from ..base.descriptor import OperandDescriptor
from ..ops import operator_kind
from .ir import Node, Value


@dataclass(frozen=True)
class Step:
    node: Node
    kernel: object
    input_slots: tuple[int, ...]
    output_slots: tuple[int, ...]
    output_descriptors: tuple[OperandDescriptor, ...]


class ExecutionPlan:
    def __init__(self, outputs: Mapping[str, Value]):
        self._slots: dict[int, int] = {}
        self.constants: dict[int, np.ndarray] = {}
        self.input_slots: dict[str, int] = {}
        self.steps: list[Step] = []
        for node in _topological_order(outputs.values()):
            in_slots = tuple(-1 if v is None else self._slot(v) for v in node.inputs)
            out_slots = tuple(self._slot(v) for v in node.outputs)
            self.steps.append(Step(node, operator_kind(node.kind).kernel, in_slots, out_slots,
                                   tuple(v.descriptor for v in node.outputs)))
        self.output_slots = {name: self._slot(v) for name, v in outputs.items()}
        self.slot_count = len(self._slots)

    def _slot(self, value: Value) -> int:
        key = id(value)
        if key not in self._slots:
            slot = self._slots[key] = len(self._slots)
            if value.is_constant:
                self.constants[slot] = value.constant
            elif value.is_input:
                self.input_slots[value.input_name] = slot
        return self._slots[key]

    def execute(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run every step; returns the output arrays by name (fresh arrays, never aliases of inputs)."""
        run = self.execute_iter(inputs)
        while True:
            try:
                next(run)
            except StopIteration as done:
                return done.value

    def execute_iter(self, inputs: Mapping[str, np.ndarray]) -> Generator[None, None, dict[str, np.ndarray]]:
        """`execute` as a generator that yields between steps (and wherever a
        kernel that returns a generator yields, e.g. between loop iterations),
        so that a caller can hand the thread back to the page during a long
        run. The outputs are the generator's return value."""
        slots: list[np.ndarray | None] = [None] * self.slot_count
        for slot, array in self.constants.items():
            slots[slot] = array
        for name, slot in self.input_slots.items():
            slots[slot] = inputs[name]
        for step in self.steps:
            results = step.kernel([None if i < 0 else slots[i] for i in step.input_slots],
                                  step.node.attributes, step.output_descriptors)
            if isinstance(results, GeneratorType):
                results = yield from results
            for slot, desc, result in zip(step.output_slots, step.output_descriptors, results):
                if result.shape != desc.shape or result.dtype != desc.type.numpy:
                    raise AssertionError(f"{step.node.kind} produced {result.dtype}{list(result.shape)}, expected {desc}")
                slots[slot] = result
            yield
        return {name: slots[slot] for name, slot in self.output_slots.items()}


def _topological_order(outputs) -> list[Node]:
    order: list[Node] = []
    seen: set[int] = set()
    # Iterative post-order DFS: deep graphs must not hit Python's recursion limit.
    stack: list[tuple[Value, bool]] = [(v, False) for v in outputs]
    while stack:
        value, expanded = stack.pop()
        node = value.producer
        if node is None:
            continue
        if expanded:
            if id(node) not in seen:
                seen.add(id(node))
                order.append(node)
            continue
        if id(node) in seen:
            continue
        stack.append((value, True))
        stack.extend((v, False) for v in reversed(node.inputs) if v is not None)
    return order
