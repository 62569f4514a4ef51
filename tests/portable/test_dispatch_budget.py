"""dispatch(), writeTensor() and readTensor() never hold their caller for more than one time
slice, whatever is queued
(runtime/timeline.py; issue 19, item 8: 30 dispatch() calls of a ~14 ms graph in a row
used to run ~30 slices inside the calling task).

Structural, not timed: the timeline's clock is replaced by one that advances one
"millisecond" each time it is read, and the slice is 8 of them, so a slice is a known
number of steps whatever the machine's load. `Timeline.steps` counts the steps run.
Portable: asyncio on the host, Pyodide's WebLoop under Node.js.
"""
import asyncio

import numpy as np

import webnn_py
from webnn_py.runtime import timeline as timeline_module

F32 = {"dataType": "float32", "shape": [4]}
SLICE = 8          # "milliseconds" of the counting clock
STEPS = 14         # one dispatch: 14 steps, so ~14 clock reads (a slice and a half)


class _CountingClock:
    """Advances 1 ms per read: a slice of 8 ms allows 8 steps (each step reads it once)."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 0.001
        return self.now


async def _setup():
    context = await webnn_py.ml.createContext()
    builder = webnn_py.MLGraphBuilder(context)
    x = builder.input("x", F32)
    y = x
    for _ in range(STEPS):
        # max(y + 1, y): y is read twice, so the compiler cannot fuse the chain.
        y = builder.max(builder.add(y, builder.constant("float32", 1)), y)
    graph = await builder.build({"y": y})
    t_in = await context.createTensor({**F32, "writable": True})
    t_out = await context.createTensor({**F32, "readable": True, "writable": True})
    context.writeTensor(t_in, np.zeros(4, np.float32))
    await context.readTensor(t_out)          # everything above is done: the timeline is idle
    for _ in range(3):
        await asyncio.sleep(0)               # and the task that ended that turn has run
    return context, graph, t_in, t_out


def _with_counting_clock(test):
    async def wrapped():
        saved, saved_slice = timeline_module._clock, timeline_module.Timeline.slice_seconds
        timeline_module._clock = _CountingClock()
        try:
            await test()
        finally:
            timeline_module._clock = saved
            timeline_module.Timeline.slice_seconds = saved_slice
    wrapped.__name__ = test.__name__
    return wrapped


@_with_counting_clock
async def test_thirty_dispatches_in_a_row_hold_the_caller_for_one_slice():
    context, graph, t_in, t_out = await _setup()
    timeline = context._timeline
    timeline.slice_seconds = SLICE / 1000
    before = timeline.steps
    for _ in range(30):
        context.dispatch(graph, {"x": t_in}, {"y": t_out})
    ran_in_caller = timeline.steps - before
    # One slice (8 steps) plus the step during which it ran out, not 30 slices.
    assert 1 <= ran_in_caller <= SLICE + 1, ran_in_caller
    assert timeline.busy
    # The rest runs in later tasks, in order; the result is that of 30 dispatches of
    # x + STEPS from x = 0 (each dispatch reads the same input).
    result = np.frombuffer(await context.readTensor(t_out), np.float32)
    assert result.tolist() == [STEPS] * 4
    assert timeline.steps - before >= 30 * STEPS


@_with_counting_clock
async def test_a_dispatch_behind_queued_work_runs_nothing_in_the_callers_task():
    context, graph, t_in, t_out = await _setup()
    timeline = context._timeline
    timeline.slice_seconds = SLICE / 1000
    for _ in range(3):                                      # the first starts, suspended after a slice
        context.dispatch(graph, {"x": t_in}, {"y": t_out})
    await asyncio.sleep(0)                                  # a later task: a new turn for the caller
    assert timeline.busy                                    # (that task ran one more slice)
    before = timeline.steps
    context.dispatch(graph, {"x": t_in}, {"y": t_out})     # queued behind the suspended one
    assert timeline.steps == before
    # Queued work in front that never starts in the caller's task (createTensor's step):
    # a dispatch behind it does not run it either.
    await context.readTensor(t_out)
    for _ in range(3):
        await asyncio.sleep(0)
    assert not timeline.busy
    pending = context.createTensor({**F32, "readable": True})
    before = timeline.steps
    context.dispatch(graph, {"x": t_in}, {"y": t_out})
    assert timeline.steps == before
    await pending


@_with_counting_clock
async def test_dispatches_of_one_task_share_its_slice_and_the_next_task_gets_a_new_one():
    context, graph, t_in, t_out = await _setup()
    timeline = context._timeline
    timeline.slice_seconds = 100 / 1000                     # room for several whole dispatches
    before = timeline.steps
    for _ in range(30):
        context.dispatch(graph, {"x": t_in}, {"y": t_out})
    first_task = timeline.steps - before
    # Whole dispatches ran while the slice lasted (100 clock reads, ~1 per step), then none.
    assert STEPS <= first_task <= 100 + 1, first_task
    assert timeline.busy
    assert np.frombuffer(await context.readTensor(t_out), np.float32).tolist() == [STEPS] * 4
    for _ in range(3):
        await asyncio.sleep(0)
    assert not timeline.busy
    before = timeline.steps
    context.dispatch(graph, {"x": t_in}, {"y": t_out})
    assert timeline.steps - before >= STEPS                 # a later task: a fresh slice, done at once
    assert not timeline.busy


@_with_counting_clock
async def test_reads_and_writes_start_in_the_callers_task_only_when_nothing_is_queued_ahead():
    context, graph, t_in, t_out = await _setup()
    timeline = context._timeline
    timeline.slice_seconds = 100 / 1000                     # room for several whole dispatches
    # Idle: writeTensor, dispatch and readTensor all run at once; the read's promise
    # then settles in the next ML task (§8.3.4 step 9.1.3), so that a destroy() called
    # before it could still reject it (§8.8.2 step 2).
    before = timeline.steps
    context.writeTensor(t_in, np.full(4, 2, np.float32))
    assert timeline.steps - before == 1 and not timeline.busy
    context.dispatch(graph, {"x": t_in}, {"y": t_out})
    ran = timeline.steps
    read = context.readTensor(t_out)
    assert timeline.steps == ran + 1 and not timeline.busy and not read.done()
    await asyncio.sleep(0)
    assert read.done()
    assert np.frombuffer(read.result(), np.float32).tolist() == [2 + STEPS] * 4
    # Behind queued work (a createTensor step) they wait, in order: the read sees the
    # write and the dispatch made after the queued step, and nothing ran in this task.
    queued = context.createTensor({**F32, "readable": True})
    before = timeline.steps
    context.writeTensor(t_in, np.full(4, 5, np.float32))
    context.dispatch(graph, {"x": t_in}, {"y": t_out})
    read = context.readTensor(t_out)
    assert timeline.steps == before and not read.done()
    assert np.frombuffer(await read, np.float32).tolist() == [5 + STEPS] * 4
    assert queued.done()


@_with_counting_clock
async def test_reads_and_writes_share_the_turns_slice_with_dispatches():
    context, graph, t_in, t_out = await _setup()
    timeline = context._timeline
    timeline.slice_seconds = SLICE / 1000
    context.dispatch(graph, {"x": t_in}, {"y": t_out})      # uses up this task's slice
    assert timeline.busy
    before = timeline.steps
    read = context.readTensor(t_out)
    context.writeTensor(t_in, np.full(4, 1, np.float32))
    assert timeline.steps == before and not read.done()    # queued behind the dispatch
    assert np.frombuffer(await read, np.float32).tolist() == [STEPS] * 4
    for _ in range(3):
        await asyncio.sleep(0)
    assert not timeline.busy
    # A new task: the write ran (the next dispatch sees it).
    context.dispatch(graph, {"x": t_in}, {"y": t_out})
    assert np.frombuffer(await context.readTensor(t_out), np.float32).tolist() == [1 + STEPS] * 4


@_with_counting_clock
async def test_reads_and_writes_run_at_once_only_on_an_idle_timeline_and_draw_on_no_slice():
    # Timeline.run_at_once: the browser bridge's readTensor and writeTensor steps.
    context, graph, t_in, t_out = await _setup()
    timeline = context._timeline
    timeline.slice_seconds = SLICE / 1000
    clock = timeline_module._clock
    before, read_before = timeline.steps, clock.now
    assert timeline.run_at_once(lambda a, b: a + b, 2, 3) == 5
    for _ in range(3 * SLICE):
        assert timeline.run_at_once(lambda: "read") == "read"
    # A step each, no clock read: the dispatch after them still gets the whole slice.
    assert timeline.steps == before + 1 + 3 * SLICE and clock.now == read_before

    def failing():
        raise ValueError("the step's own error")
    try:
        timeline.run_at_once(failing)
    except ValueError as exc:
        assert str(exc) == "the step's own error"                        # raised to the caller, not logged
    else:
        raise AssertionError("run_at_once swallowed the step's error")
    before = timeline.steps
    context.dispatch(graph, {"x": t_in}, {"y": t_out})
    assert SLICE - 1 <= timeline.steps - before <= SLICE + 1, timeline.steps - before
    # Behind the suspended dispatch nothing runs at once: the caller enqueues.
    assert timeline.busy
    ran = []
    assert timeline.run_at_once(ran.append, 1) is timeline_module.NOT_RUN and ran == []
    # Through the API: a write behind it is queued, and the read after it sees it.
    context.writeTensor(t_in, np.full(4, 3, np.float32))
    context.dispatch(graph, {"x": t_in}, {"y": t_out})
    assert np.frombuffer(await context.readTensor(t_out), np.float32).tolist() == [3 + STEPS] * 4
    # A lost context: nothing at once (its steps are aborted on the queue instead).
    context.destroy()
    assert timeline.run_at_once(ran.append, 3) is timeline_module.NOT_RUN and ran == []


@_with_counting_clock
async def test_in_the_page_the_shims_task_ends_the_turn():
    # set_turn_words: the browser shim's two words, [asked, tasks]. A turn that starts asks,
    # and posts no task of the timeline's own; a turn ends when `tasks` changes (the shim's
    # later task ran), not before.
    context, graph, t_in, t_out = await _setup()
    timeline = context._timeline
    timeline.slice_seconds = 20 / 1000                      # one whole dispatch and a bit
    words = [0, 7]
    timeline_module.set_turn_words(words)
    try:
        before = timeline.steps
        context.dispatch(graph, {"x": t_in}, {"y": t_out})
        assert timeline.steps - before == STEPS and not timeline.busy
        assert words == [1, 7] and not timeline._scheduled  # asked the shim; no task of its own
        words[0] = 0                                        # the shim's answer: a task posted
        before = timeline.steps
        context.dispatch(graph, {"x": t_in}, {"y": t_out})  # the same task: the rest of the slice
        assert 1 <= timeline.steps - before < STEPS and timeline.busy
        assert words == [0, 7]                              # a turn that goes on: asked once
        assert np.frombuffer(await context.readTensor(t_out), np.float32).tolist() == [STEPS] * 4
        for _ in range(3):
            await asyncio.sleep(0)
        words[:] = [0, 8]                                   # the shim's task ran
        for _ in range(2):
            before = timeline.steps
            context.dispatch(graph, {"x": t_in}, {"y": t_out})
            assert timeline.steps - before == STEPS and not timeline.busy   # a new turn each time
            assert words[0] == 1
            words[0] = 0
            words[1] = (words[1] + 1) & 0xFFFFFFFF
    finally:
        timeline_module.set_turn_words(None)


@_with_counting_clock
async def test_in_the_page_a_dispatch_after_the_turn_is_spent_still_runs():
    # The turn's slice spent by a dispatch that finished in it (nothing left over, so no task of
    # the timeline's was posted): a read or a dispatch later in the same turn is queued, and must
    # get a task of its own (a regression: a read waited forever for one, hanging transformers.js
    # through ORT-web's WebNN EP in tests/ort/test_transformers_js.py).
    context = await webnn_py.ml.createContext()
    builder = webnn_py.MLGraphBuilder(context)
    graph = await builder.build({"y": builder.add(builder.input("x", F32), builder.constant("float32", 1))})
    t_in = await context.createTensor({**F32, "writable": True})
    t_out = await context.createTensor({**F32, "readable": True})
    context.writeTensor(t_in, np.zeros(4, np.float32))
    await context.readTensor(t_out)
    timeline = context._timeline
    timeline.slice_seconds = 1 / 1000               # the one-step plan: its dispatch reads the clock twice
    words = [0, 0]
    timeline_module.set_turn_words(words)
    try:
        context.dispatch(graph, {"x": t_in}, {"y": t_out})
        assert timeline._turn_budget <= 0 and not timeline.busy and not timeline._scheduled
        assert words[0] == 1
        words[0] = 0                                            # the shim's answer (its task not run)
        read = context.readTensor(t_out)                        # the same turn, spent: queued
        assert timeline.busy
        assert np.frombuffer(await asyncio.wait_for(read, 10), np.float32).tolist() == [1] * 4
        # The task of the timeline's that ran the read ended the turn too: a new one, at once.
        context.writeTensor(t_in, np.full(4, 5, np.float32))
        context.dispatch(graph, {"x": t_in}, {"y": t_out})
        assert not timeline.busy and words[0] == 1
        result = await asyncio.wait_for(context.readTensor(t_out), 10)
        assert np.frombuffer(result, np.float32).tolist() == [6] * 4
    finally:
        timeline_module.set_turn_words(None)
