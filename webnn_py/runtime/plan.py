"""The executor: a compiled graph as a flat list of steps, and the walk over it.

build() compiles the recorded graph once (runtime/compiler: topological order,
constant folding, patterns, constant re-layout, fusion, liveness); what is left for a
dispatch is a walk over `steps`, each a kernel call on the arrays in numbered
slots. Nothing is looked up, checked or laid out per dispatch.

Buffers: the results of the heavy steps (the C kernels' GEMMs, convolutions and
gelu, fused or not) go into buffers the compiler assigned (compiler._buffers: one
buffer serves every value whose lifetime does not overlap, views included),
allocated at the first run and reused by every later one. Other kernels allocate
their results, and every slot is dropped after its last reader (liveness).

Replay: in Pyodide, from the fourth run on, runs of steps whose C kernel calls were recorded
alike at the second and third run are made as one call each, without the walk (replay.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter
from types import GeneratorType
from typing import Callable, Generator, Mapping

import numpy as np

from ..base.descriptor import OperandDescriptor
from .ir import Node, Value
from .replay import MISSES_TO_DISSOLVE, Replay


@dataclass(frozen=True, eq=False)
class Step:
    """One kernel call. `kernel(arrays, node.attributes, output_descriptors)` returns
    the output arrays (or a generator returning them, e.g. loop). A fused step
    computes several graph nodes (`nodes`); its kernel was specialised when the
    graph was compiled, `node` is the first of them and `name` says what was fused
    (the key of the profile)."""

    node: Node
    kernel: Callable
    input_slots: tuple[int, ...]
    output_slots: tuple[int, ...]
    output_descriptors: tuple[OperandDescriptor, ...]
    name: str = ""
    nodes: tuple[Node, ...] = ()
    # Slots whose last reader is this step: dropped after it, so memory is freed early.
    release: tuple[int, ...] = ()
    # The plan's buffer the kernel writes its result into (`out=`), or -1: a fresh array.
    buffer: int = -1


class ExecutionPlan:
    """`input_slots` (name → slot), `output_slots` (name → slot), `constants`
    (slot → array, including folded subgraphs' results) and `steps` describe the
    compiled graph; `folded_nodes` lists the nodes evaluated at build time."""

    def __init__(self, outputs: Mapping[str, Value], *, optimize: bool = True):
        from .compiler import compile_graph

        compiled = compile_graph(outputs, optimize=optimize)
        # The graph the plan was compiled from, by output name (its nodes stay reachable
        # from the steps anyway): read by analyses of a loop body (compiler/recurrent_loop.py).
        self.output_values: dict[str, Value] = dict(outputs)
        self.steps: list[Step] = compiled.steps
        self.constants: dict[int, np.ndarray] = compiled.constants
        self.input_slots: dict[str, int] = compiled.input_slots
        self.output_slots: dict[str, int] = compiled.output_slots
        self.slot_count: int = compiled.slot_count
        self.folded_nodes: list[Node] = compiled.folded_nodes
        self.buffer_shapes: list[tuple] = compiled.buffers
        self._buffers: list[np.ndarray] | None = None        # allocated at the first run, then reused
        # The first run checks every kernel's results against the descriptors, later ones trust them.
        self._verified = False
        self._input_slot_set = frozenset(self.input_slots.values())
        # A run's slots start as a copy of this list (the constants in place): no loop over them.
        self._constant_slots: list[np.ndarray | None] = [None] * self.slot_count
        for slot, array in self.constants.items():
            self._constant_slots[slot] = array
        self._input_items = tuple(self.input_slots.items())
        self._output_items = tuple(self.output_slots.items())
        # The C kernels' calls recorded and replayed in segments (runtime/replay.py), in Pyodide.
        self._replay = Replay.for_plan() if optimize else None

    def _initial_slots(self, inputs: Mapping[str, np.ndarray]) -> list:
        slots = self._constant_slots.copy()
        for name, slot in self._input_items:
            slots[slot] = inputs[name]
        return slots

    def _results(self, slots: list) -> dict[str, np.ndarray]:
        # An output that is a constant, an input or a view (reshape, slice, expand of
        # something the plan keeps or reuses) is copied: callers keep what they get.
        results = {}
        for name, slot in self.output_slots.items():
            array = slots[slot]
            if array.base is not None or slot in self.constants or slot in self._input_slot_set:
                array = np.array(array, copy=True)
            results[name] = array
        return results

    def execute(self, inputs: Mapping[str, np.ndarray], profile: dict | None = None) -> dict[str, np.ndarray]:
        """Run every step; returns the output arrays by name: fresh arrays the caller
        may keep (never aliases of inputs, constants or anything the plan reuses).

        `profile`, if given, is a dict that accumulates seconds per step name (an
        operator kind, or e.g. "conv2d+add+clamp" for a fused step)."""
        return run_to_end(self.execute_iter(inputs, profile))

    def _walk(self, indices, slots: list, check: bool = False, profile: dict | None = None,
              recording: list | None = None):
        """The steps `indices` in order (a generator: it yields between steps)."""
        buffers = self._buffers
        for count, index in enumerate(indices):
            # A yield BETWEEN steps, none after the last: the outputs' copy belongs to the
            # last step's slice, and a one-step plan (an lstm) runs in one resumption, not
            # two (each ~0.5 µs and a clock read, a call into JavaScript, in Pyodide).
            if count:
                yield
            step = self.steps[index]
            start = perf_counter() if profile is not None else 0.0
            arrays = [None if i < 0 else slots[i] for i in step.input_slots]
            out = None if step.buffer < 0 else buffers[step.buffer]
            if recording is not None:
                results = self._replay.record_step(recording, step, arrays, out)
            elif out is None:
                results = step.kernel(arrays, step.node.attributes, step.output_descriptors)
            else:
                results = step.kernel(arrays, step.node.attributes, step.output_descriptors, out=out)
            if isinstance(results, GeneratorType):
                results = yield from results
            if check:
                _check(step, results)
            for slot, result in zip(step.output_slots, results):
                slots[slot] = result
            for slot in step.release:
                slots[slot] = None
            if profile is not None:
                profile[step.name] = profile.get(step.name, 0.0) + perf_counter() - start

    def _replayed(self, replay: Replay, slots: list):
        """The schedule (runtime/replay.py): a segment in one call where the values it reads
        are the ones it was recorded with, else its steps walked; other steps walked."""
        schedule = replay.schedule
        position = 0
        while position < len(schedule):
            if position:
                yield
            unit = schedule[position]
            if type(unit) is range:
                yield from self._walk(unit, slots)
            elif unit.matches(slots):
                unit.misses = 0
                unit.run()
                for slot, result in unit.sets:
                    slots[slot] = result
                for slot in unit.drops:
                    slots[slot] = None
            else:
                unit.misses += 1
                if unit.misses >= MISSES_TO_DISSOLVE:      # walked from now on
                    replay.dissolve(position)
                yield from self._walk(range(unit.first, unit.stop), slots)
            position += 1

    def execute_iter(self, inputs: Mapping[str, np.ndarray], profile: dict | None = None,
                     into: Mapping[str, np.ndarray] | None = None) -> Generator[None, None, Mapping[str, np.ndarray]]:
        """`execute` as a generator that yields between steps (and wherever a
        kernel that returns a generator yields, e.g. between loop iterations),
        so that a caller can hand the thread back to the page during a long
        run. The outputs are the generator's return value; with `into` (output name
        → an array of its shape and type: dispatch()'s output tensors), each is copied
        into its array once, after the last step, and `into` is returned (no fresh array
        made for an output that is a view or one of the plan's own)."""
        check = not self._verified
        slots = self._initial_slots(inputs)
        if self._buffers is None:
            self._buffers = [np.empty(shape, dtype) for shape, dtype in self.buffer_shapes]
        replay = self._replay if profile is None and not check else None
        if replay is not None and replay.schedule is not None:
            yield from self._replayed(replay, slots)
        elif replay is not None:
            yield from self._walk(range(len(self.steps)), slots, recording=replay.recording_run())
            if replay.finish_run(self) and replay.schedule is None:
                self._replay = None             # nothing to replay: walked as before
        else:
            yield from self._walk(range(len(self.steps)), slots, check, profile)
        self._verified = True
        if into is None:
            return self._results(slots)
        # Item assignment, not np.copyto(casting="no"): ~0.4 µs less a copy in Pyodide. The types
        # match: the first run checked every result against its descriptor, and dispatch() the
        # tensors against the graph's.
        for name, slot in self._output_items:
            into[name][...] = slots[slot]
        return into


def _check(step: Step, results) -> None:
    """A kernel returning the wrong shape or type is a bug: the first run of a plan checks."""
    for desc, result in zip(step.output_descriptors, results):
        if result.shape != desc.shape or result.dtype != desc.type.numpy:
            raise AssertionError(f"{step.name} produced {result.dtype}{list(result.shape)}, expected {desc}")


def run_to_end(generator):
    """Drive a generator (a plan's execute_iter, a loop kernel) to its end; returns its value."""
    while True:
        try:
            next(generator)
        except StopIteration as done:
            return done.value
