"""Executing `loop` (ops/loop.py; semantics: OpenVINO Loop-5,
../shared/spec/003_ea60059f0e025f60.txt).

A LoopBody wraps the body graph's compiled ExecutionPlan, captured when loop()
is called: the outer graph keeps working if the body MLGraph is destroyed later
(as a graph survives the MLTensor of constant(tensor)). Each iteration walks
the body's plan directly: the body was validated when it was built, so
nothing is re-validated per iteration.

The kernel is a generator that yields between iterations (and between the
body's steps): a dispatch suspends there when its time slice is used up, so a
long or runaway loop keeps the page responsive until it ends or reaches
maxIterations (runtime/timeline.py, README "Responsiveness"). Callers that do
not slice drive it to its end (ExecutionPlan.execute).

A loop whose body steps one lstmCell or gruCell over a sliced sequence is compiled
into one lstm/gru sequence run instead (compiler/recurrent_loop.py); that kernel
hands zero-iteration and beyond-maxIterations runs back to run_loop here.
"""
from __future__ import annotations

from types import GeneratorType
from typing import Generator

import numpy as np

from ..base.errors import OperationError, describe
from .plan import ExecutionPlan, run_to_end


class LoopBody:
    def __init__(self, plan: ExecutionPlan):
        self.plan = plan

    # -- build-time questions (ops/loop.py's static iteration count) --------------------------

    def depends_on_inputs(self, output: str) -> bool:
        dependent = set(self.plan.input_slots.values())
        for step in self.plan.steps:
            if any(slot in dependent for slot in step.input_slots):
                dependent.update(step.output_slots)
        return self.plan.output_slots[output] in dependent

    def evaluate(self, output: str) -> np.ndarray:
        """The value of a body output that reads no body input: runs only the steps it needs."""
        plan = self.plan
        needed = {plan.output_slots[output]}
        chosen = []
        for step in reversed(plan.steps):
            if needed.intersection(step.output_slots):
                chosen.append(step)
                needed.update(s for s in step.input_slots if s >= 0)
        slots: list = [None] * plan.slot_count
        for slot, array in plan.constants.items():
            slots[slot] = array
        for step in reversed(chosen):
            results = step.kernel([None if i < 0 else slots[i] for i in step.input_slots],
                                  step.node.attributes, step.output_descriptors)
            if isinstance(results, GeneratorType):     # a nested loop
                results = run_to_end(results)
            for slot, result in zip(step.output_slots, results):
                slots[slot] = result
        return slots[plan.output_slots[output]]

    # -- the kernel -------------------------------------------------------------------------

    def run_loop(self, inputs, attributes, outputs) -> Generator[None, None, list[np.ndarray]]:
        """Loop-5's pseudo-code: for (i = 0; (trip < 0 || i < trip) && cond; ++i) cond = body(...).

        A generator returning the output arrays; it yields after every iteration."""
        trip = int(inputs[0].reshape(-1)[0])
        condition = bool(inputs[1].reshape(-1)[0])
        limit = trip if trip >= 0 else None      # Loop-5: -1 means "no trip count"
        if attributes["slice_count"] is not None:
            # Iteration i reads slice i of every sliced input: there are no more iterations than slices.
            limit = attributes["slice_count"] if limit is None else min(limit, attributes["slice_count"])
        max_iterations = attributes["max_iterations"]
        condition_name = attributes["condition"]
        back_edges = attributes["back_edges"]
        current = attributes["current_iteration"]

        feeds: dict[str, np.ndarray] = {}
        sliced = []
        for (name, axis), array in zip(attributes["bindings"], inputs[2:]):
            if axis is None:
                feeds[name] = array
            else:
                sliced.append((name, axis, array))
        initial = dict(feeds)
        concatenated = {name: [] for name, axis in attributes["outputs"] if axis is not None}

        results: dict[str, np.ndarray] | None = None
        iteration = 0
        while condition and (limit is None or iteration < limit):
            if iteration >= max_iterations:
                raise OperationError(describe("loop", attributes["label"],
                                              f"the loop did not end within maxIterations ({max_iterations}) iterations"))
            for name, axis, array in sliced:
                # A view: part size 1 along `axis`, the axis kept.
                index = [slice(None)] * array.ndim
                index[axis] = slice(iteration, iteration + 1)
                feeds[name] = array[tuple(index)]
            if current is not None:
                name, dtype, shape = current
                feeds[name] = np.full(shape, iteration, dtype=dtype)
            results = yield from self.plan.execute_iter(feeds)
            condition = bool(results[condition_name].reshape(-1)[0])
            # Loop-carried values move to the next iteration as they are: execute()
            # returns fresh arrays, so no copy is needed.
            for source, target in back_edges:
                feeds[target] = results[source]
            for name, parts in concatenated.items():
                parts.append(results[name])
            iteration += 1
            yield

        sources = {source: target for source, target in back_edges}
        arrays = []
        for (name, axis), desc in zip(attributes["outputs"], outputs):
            if axis is not None:
                if not concatenated[name]:
                    raise OperationError(describe("loop", attributes["label"], f"output {name!r} is concatenated over zero iterations"))
                arrays.append(np.concatenate(concatenated[name], axis=axis))
            elif results is not None:
                arrays.append(results[name])
            elif name in sources:
                # Zero iterations: a back-edged output is its input's initial value (Loop-5, back_edges).
                arrays.append(np.array(initial[sources[name]], copy=True))
            else:
                # Zero iterations and no initial value: zeros (our choice; see idl/extensions.idl).
                arrays.append(np.zeros(desc.shape, dtype=desc.type.numpy))
        return arrays
