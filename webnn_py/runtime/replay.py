"""Step replay: a plan's C kernel calls recorded once and made again as one JavaScript call.

In Pyodide a step of a small CNN costs ~13 µs of Python around its C calls (the plan's walk, the
kernel's wrappers, argument checks and addresses, each export's crossing into JavaScript):
mobilenet_v3_small's 45 steps spend ~0.6 ms a run there, ~10 % of the run. But a plan's steps
make the same calls every dispatch: the same exports, on the same buffers, with the same sizes.
So after its first run (which checks every result), a plan records the export calls of each step
twice (kernels.Recorder, at its second and third run), and a step whose two recordings agree
is *bound*: consecutive bound steps become one segment whose calls a later run makes by one
call into JavaScript (kernels.Kernels.chain's), with no Python per step.

What makes that safe:
- Opt-in. A kernel marks itself `replayable` only where all it does is export calls on its
  inputs, its `out` and arrays it holds (its paths that compute in numpy call
  kernels.untraceable(), and the recording is refused). The kernel pool's calls are recorded
  like exports: pool.js still decides at each replayed call whether its workers take part.
- Addresses. Every address a recorded call passes (kernels.POINTER_ARGUMENTS) must lie in a
  live array: one of the step's inputs, results or `out`, or an array whose address the
  kernels took (kernels.address_of's memory: constants, packed weights, scratch). The segment
  holds those arrays, so the memory a replayed call reads or writes is never freed or reused.
  A temporary (a copy made for the call) is dead when the step returns: not bound.
- Agreement. Both recordings must give the same calls with the same arguments, in the same
  arrays (the same objects), from the same inputs (the same objects, or views of the same
  memory in the same shape and strides): nothing the calls depend on changed between two runs.
- Inputs. A segment replays only if every value it reads from outside itself is the object
  (or the same memory, in shape and strides) it was recorded with; otherwise its steps are
  walked as before, and after MISSES_TO_DISSOLVE misses in a row they are walked for good.
  A step reading a graph input is a segment of its own (a dispatch's inputs change).
- Responsiveness. A segment's recorded time is at most SEGMENT_SECONDS (a quarter of the
  page's 8 ms time slice): the timeline still gets control between segments.

Only the wasm kernels record (Kernels.recorder): on the host, ctypes calls from Python gain
nothing. A profiled run (`profile=`) walks every step, and a page's `webnnPolyfillConfig`
`stepReplay: false` walks them all (bench/threads.py --pool compares the two).
"""
from __future__ import annotations

import bisect
from functools import partial
from time import perf_counter
from typing import NamedTuple

import numpy as np

from .. import kernels

SEGMENT_SECONDS = 0.002
# webnnPolyfillConfig.stepReplay (default true; false walks every step, as before), read once.
_enabled: bool | None = None
MISSES_TO_DISSOLVE = 3
RECORDING_RUNS = 2


class StepRecording(NamedTuple):
    calls: tuple            # kernels.RecordedCall, in order
    owners: tuple           # the arrays the calls' addresses lie in
    inputs: tuple           # the step's input arrays (None for an absent optional operand)
    results: tuple          # its result arrays
    seconds: float


class Segment:
    """Consecutive bound steps (`first` to `stop`, plan step indices) as one call."""

    def __init__(self, first: int, stop: int, run, checks, sets, drops, held):
        self.first, self.stop = first, stop
        self.run = run              # the chained export calls
        self.checks = checks        # ((slot, recorded array), ...): values read from outside
        self.sets = sets            # ((slot, result), ...): what the walk would leave in the slots
        self.drops = drops          # slots the walk would clear
        self.held = held            # every array an address of the calls lies in
        self.misses = 0

    def matches(self, slots) -> bool:
        for slot, recorded in self.checks:
            value = slots[slot]
            if value is not recorded and not _same_memory(value, recorded):
                return False
        return True


class Replay:
    """A plan's recordings and, once made, its schedule: ranges of steps (walked) and Segments."""

    def __init__(self, recorder: kernels.Recorder):
        self._recorder = recorder
        self._recordings: list[list[StepRecording | None]] = []
        self._known = Spans(())
        self.schedule: list | None = None

    @staticmethod
    def for_plan() -> "Replay | None":
        """A plan's Replay where the kernels record (wasm) and the page has not switched it off."""
        global _enabled
        recorder = getattr(kernels.simd(), "recorder", None)
        if recorder is None:
            return None
        if _enabled is None:
            from ..kernels.pool import page_setting

            _enabled = bool(page_setting("stepReplay", 1))
        return Replay(recorder) if _enabled else None

    def recording_run(self) -> list:
        """A list to note this run's steps in (record_step)."""
        self._recordings.append([])
        # The arrays whose addresses the kernels took up to now, as they stand before this run:
        # the constants, packed weights and scratch that the first run's calls used.
        self._known = Spans(kernels.remembered_arrays())
        return self._recordings[-1]

    def record_step(self, run: list, step, arrays, out) -> list:
        """Run `step` (kernel(arrays, ...)) recording its calls if its kernel is replayable;
        returns its results."""
        if not getattr(step.kernel, "replayable", False):
            run.append(None)
            return _call(step, arrays, out)
        start = perf_counter()
        self._recorder.start()
        try:
            results = _call(step, arrays, out)
        finally:
            calls = self._recorder.stop()
        seconds = perf_counter() - start
        owners = None if calls is None else _owners(calls, list(arrays) + list(results) + [out], self._known)
        run.append(None if owners is None else StepRecording(calls, owners, tuple(arrays), tuple(results), seconds))
        return results

    def finish_run(self, plan) -> bool:
        """After a recording run: with every recording made, the schedule (None if no step
        is bound); whether it was made."""
        # The arrays known before the run are held only while recording (they may include
        # another plan's dead results' memory).
        self._known = Spans(())
        # A run that raised (or was closed) part way left a shorter list: not a recording.
        self._recordings = [run for run in self._recordings if len(run) == len(plan.steps)]
        if len(self._recordings) < RECORDING_RUNS:
            return False
        self.schedule = _schedule(plan, *self._recordings)
        self._recordings = []
        return True

    def dissolve(self, index: int) -> None:
        """The segment at schedule[index] walked from now on."""
        segment = self.schedule[index]
        self.schedule[index] = range(segment.first, segment.stop)


def _call(step, arrays, out):
    if out is None:
        return step.kernel(arrays, step.node.attributes, step.output_descriptors)
    return step.kernel(arrays, step.node.attributes, step.output_descriptors, out=out)


def _base(array: np.ndarray) -> np.ndarray:
    """The array that owns array's memory (the last ndarray of its .base chain)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


class Spans:
    """Arrays by where their memory starts, to find the one an address lies in."""

    def __init__(self, pairs):
        self._spans = sorted(((address, array) for address, array in pairs if array is not None),
                             key=lambda span: span[0])
        self._starts = [address for address, _ in self._spans]

    def find(self, address: int):
        """The array whose memory holds `address`, or None."""
        index = bisect.bisect_right(self._starts, address) - 1
        # Live owners never overlap, but a step's array may lie inside a known one.
        while index >= 0 and self._starts[index] + self._spans[index][1].nbytes <= address:
            index -= 1
        return None if index < 0 else self._spans[index][1]


def _owners(calls, step_arrays, known: Spans) -> tuple | None:
    """For each address the calls pass (in order), the live array it lies in: one of the step's
    own arrays or one `known` before the run; None if one lies in none (a temporary, dead
    now that the step has returned)."""
    own = Spans((base.__array_interface__["data"][0], base) for base in
                (_base(array) for array in step_arrays if isinstance(array, np.ndarray)))
    owners = []
    for call in calls:
        for position in kernels.POINTER_ARGUMENTS[call.name]:
            address = call.values[position]
            if not address:
                continue
            owner = own.find(address)
            if owner is None:
                owner = known.find(address)
                if owner is None:
                    return None
            owners.append(owner)
    return tuple(owners)


def _same_memory(a, b) -> bool:
    return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
            and a.strides == b.strides and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])


def _agree(first: StepRecording | None, second: StepRecording | None) -> bool:
    if first is None or second is None or len(first.calls) != len(second.calls):
        return False
    if any(a.name != b.name or a.values != b.values for a, b in zip(first.calls, second.calls)):
        return False
    if len(first.owners) != len(second.owners) or any(a is not b for a, b in zip(first.owners, second.owners)):
        return False
    # An input may be another view of the same memory each run (a head of attention's q, made by
    # a walked transpose): a segment checks its outside inputs the same way (Segment.matches).
    if any(a is not b and not _same_memory(a, b) for a, b in zip(first.inputs, second.inputs)):
        return False
    return len(first.results) == len(second.results) and all(
        _same_memory(a, b) for a, b in zip(first.results, second.results))


def _schedule(plan, first_run: list, second_run: list) -> list | None:
    """Segments of the steps whose recordings agree (see the module doc); None if none does."""
    steps = plan.steps
    graph_inputs = set(plan.input_slots.values())
    bound = [_agree(a, b) and bool(b.calls) for a, b in zip(first_run, second_run)]
    if not any(bound):
        return None

    def reads_input(index: int) -> bool:
        return any(slot in graph_inputs for slot in steps[index].input_slots)

    schedule: list = []
    index = 0
    while index < len(steps):
        if not bound[index]:
            stop = index + 1
            while stop < len(steps) and not bound[stop]:
                stop += 1
            schedule.append(range(index, stop))
            index = stop
            continue
        stop, seconds = index + 1, second_run[index].seconds
        if not reads_input(index):          # a step reading a graph input is a segment alone
            while (stop < len(steps) and bound[stop] and not reads_input(stop)
                   and seconds + second_run[stop].seconds <= SEGMENT_SECONDS):
                seconds += second_run[stop].seconds
                stop += 1
        schedule.append(_segment(plan, index, stop, second_run))
        index = stop
    return schedule


def _segment(plan, first: int, stop: int, run: list) -> Segment:
    steps = plan.steps
    produced: set[int] = set()
    checks, held, calls = [], [], []
    sets: dict[int, object] = {}
    drops: set[int] = set()
    for index in range(first, stop):
        step, recording = steps[index], run[index]
        for slot, array in zip(step.input_slots, recording.inputs):
            if slot >= 0 and slot not in produced and slot not in plan.constants:
                checks.append((slot, array))
        for slot, result in zip(step.output_slots, recording.results):
            produced.add(slot)
            sets[slot] = result
            drops.discard(slot)
        for slot in step.release:
            sets.pop(slot, None)
            drops.add(slot)
        held.extend(recording.owners)
        held.extend(recording.inputs)
        calls.extend(recording.calls)
    fast = kernels.simd()
    chained = fast.chain(_bound(call) for call in calls)
    # One check per slot (a value read by several steps of the segment).
    unique = tuple({slot: array for slot, array in checks}.items())
    return Segment(first, stop, chained, unique, tuple(sets.items()), tuple(drops), tuple(held))


def _bound(call):
    """A recorded call as Kernels.chain takes it: a partial of the export, no keywords."""
    return partial(call.function, *call.values)
