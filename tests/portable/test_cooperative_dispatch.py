"""Cooperative dispatch (runtime/timeline.py, README "Responsiveness"): with a time
slice set, as the browser bridge does, a dispatch runs in several tasks of the
event loop, other tasks run in between, and the timeline's order, results and
lifetimes are those of an unsliced run.

Portable: on the host the event loop is asyncio, inside Pyodide under Node.js
Pyodide's WebLoop. Each test gives its own context a zero budget (one step per
task), so nothing depends on timing. Expected values are hand-computed.
"""
import asyncio
import logging

import numpy as np

import webnn_py

from webnn_py.base.errors import InvalidStateError

from .expect import raises, rejects

F32 = {"dataType": "float32", "shape": [4]}
I32 = {"dataType": "int32", "shape": [2]}


async def _sliced_context():
    context = await webnn_py.ml.createContext()
    context._timeline.slice_seconds = 0.0      # hand the thread back after every step
    return context


async def _chain(context, n):
    """y = x + 1 + 1 + ... (n adds): n steps, so n slices. Each step is max(y + 1, y):
    y is read twice, so the compiler cannot fuse the chain into fewer steps."""
    builder = webnn_py.MLGraphBuilder(context)
    x = builder.input("x", F32)
    y = x
    for _ in range(n):
        y = builder.max(builder.add(y, builder.constant("float32", 1)), y)
    return await builder.build({"y": y})


async def _counting_loop(context, trip, max_iterations=1_000_000):
    """out = acc + trip (acc += 1 per iteration; trip -1 with a true condition never ends)."""
    bb = webnn_py.MLGraphBuilder(context)
    body = await bb.build({"next": bb.add(bb.input("acc", I32), bb.constant("int32", 1)),
                           "cond": bb.identity(bb.constant("uint8", 1))})
    builder = webnn_py.MLGraphBuilder(context)
    acc = builder.input("acc", I32)
    out = builder.loop(builder.constant("int32", trip), builder.constant("uint8", 1), body, "cond",
                       [{"bodyInput": "acc", "value": acc}], [{"bodyOutput": "next"}],
                       {"backEdges": [{"from": "next", "to": "acc"}], "maxIterations": max_iterations})[0]
    return await builder.build({"out": out})


async def _tensors(context, desc, data):
    t_in = await context.createTensor({**desc, "writable": True})
    t_out = await context.createTensor({**desc, "readable": True, "writable": True})
    context.writeTensor(t_in, data)
    return t_in, t_out


async def _ticker(ticks: list, stop: asyncio.Event):
    while not stop.is_set():
        ticks.append(1)
        await asyncio.sleep(0)


async def _settle_tasks(n=4):
    for _ in range(n):
        await asyncio.sleep(0)


async def test_other_tasks_run_between_the_steps_of_one_dispatch():
    context = await _sliced_context()
    graph = await _chain(context, 40)
    t_in, t_out = await _tensors(context, F32, np.array([0, 1, 2, 3], np.float32))
    ticks, stop = [], asyncio.Event()
    ticker = asyncio.ensure_future(_ticker(ticks, stop))
    slices_before = context._timeline.slices
    context.dispatch(graph, {"x": t_in}, {"y": t_out})
    result = np.frombuffer(await context.readTensor(t_out), np.float32)
    stop.set()
    await ticker
    assert result.tolist() == [40, 41, 42, 43]
    assert context._timeline.slices - slices_before >= 40       # one task per step
    assert len(ticks) >= 20                                     # the other task kept running


async def test_a_long_loop_yields_between_iterations_and_gives_the_unsliced_result():
    sliced = await _sliced_context()
    whole = await webnn_py.ml.createContext()
    results = []
    for context in (sliced, whole):
        graph = await _counting_loop(context, 300)
        t_in, t_out = await _tensors(context, I32, np.array([5, -7], np.int32))
        before = context._timeline.slices
        context.dispatch(graph, {"acc": t_in}, {"out": t_out})
        results.append((np.frombuffer(await context.readTensor(t_out), np.int32).tolist(),
                        context._timeline.slices - before))
    assert results[0][0] == results[1][0] == [305, 293]
    assert results[0][1] >= 300          # at least a task per iteration when sliced
    assert results[1][1] <= 3            # unsliced (the host default): the dispatch runs in one task


async def test_reads_and_writes_made_during_a_suspended_dispatch_stay_in_timeline_order():
    context = await _sliced_context()
    graph = await _chain(context, 20)
    t_in, t_out = await _tensors(context, F32, np.zeros(4, np.float32))
    context.dispatch(graph, {"x": t_in}, {"y": t_out})
    await _settle_tasks()
    assert context._timeline._current is not None               # suspended mid-dispatch
    first = context.readTensor(t_out)
    context.writeTensor(t_in, np.full(4, 100, np.float32))       # after the dispatch: not seen by it
    context.dispatch(graph, {"x": t_in}, {"y": t_out})
    second = context.readTensor(t_out)
    assert np.frombuffer(await first, np.float32).tolist() == [20] * 4
    assert np.frombuffer(await second, np.float32).tolist() == [120] * 4


async def test_destroying_the_graph_or_a_tensor_during_a_suspended_dispatch():
    context = await _sliced_context()
    graph = await _chain(context, 20)
    t_in, t_out = await _tensors(context, F32, np.array([1, 2, 3, 4], np.float32))
    spare = await context.createTensor({**F32, "readable": True})
    # destroy() of the graph or of an input is queued behind the suspended dispatch,
    # which finishes with the plan and arrays it started with: nothing is freed under it.
    context.dispatch(graph, {"x": t_in}, {"y": t_out})
    await _settle_tasks()
    assert context._timeline._current is not None
    graph.destroy()
    t_in.destroy()
    assert np.frombuffer(await context.readTensor(t_out), np.float32).tolist() == [21, 22, 23, 24]
    assert graph._implementation is None and t_in._data is None
    with raises(InvalidStateError):
        context.dispatch(graph, {"x": t_in}, {"y": spare})

    # An output destroyed meanwhile: its pending read is rejected at once (§8.8.2),
    # the dispatch still completes, and the timeline goes on working.
    graph2 = await _chain(context, 20)
    a, b = await _tensors(context, F32, np.array([1, 1, 1, 1], np.float32))
    c = await context.createTensor({**F32, "readable": True})
    context.dispatch(graph2, {"x": a}, {"y": b})
    pending = context.readTensor(b)
    await _settle_tasks()
    assert context._timeline._current is not None
    b.destroy()
    with raises(InvalidStateError):
        await pending
    context.dispatch(graph2, {"x": a}, {"y": c})
    assert np.frombuffer(await context.readTensor(c), np.float32).tolist() == [21] * 4
    assert b._data is None


async def test_losing_the_context_abandons_a_suspended_dispatch():
    context = await _sliced_context()
    graph = await _counting_loop(context, 100_000)
    t_in, t_out = await _tensors(context, I32, np.array([1, 2], np.int32))
    context.writeTensor(t_out, np.array([42, 43], np.int32))
    check = context.readTensor(t_out)
    assert np.frombuffer(await check, np.int32).tolist() == [42, 43]
    context.dispatch(graph, {"acc": t_in}, {"out": t_out})
    pending_read = context.readTensor(t_out)
    await _settle_tasks(20)
    suspended = context._timeline._current
    assert suspended is not None and suspended.gi_frame is not None
    context.destroy()
    # §8.3.1 step 8.1 "abort when lost": the dispatch stops where it was; the read
    # queued behind it is rejected; its outputs were never written.
    assert suspended.gi_frame is None                           # the generator was closed
    with raises(InvalidStateError):
        await pending_read
    assert (await context.lost)["message"]
    assert t_out._data is None
    await _settle_tasks()
    assert not context._timeline.busy


async def test_a_runaway_loop_stops_at_max_iterations_while_other_tasks_run():
    context = await _sliced_context()
    graph = await _counting_loop(context, -1, max_iterations=200)
    t_in, t_out = await _tensors(context, I32, np.array([0, 0], np.int32))
    context.writeTensor(t_out, np.array([42, 43], np.int32))
    seen = []

    class Capture(logging.Handler):
        def emit(self, record):
            seen.append(record)

    handler = Capture(logging.ERROR)
    logger = logging.getLogger("webnn_py")
    logger.addHandler(handler)
    ticks, stop = [], asyncio.Event()
    ticker = asyncio.ensure_future(_ticker(ticks, stop))
    try:
        context.dispatch(graph, {"acc": t_in}, {"out": t_out})
        result = np.frombuffer(await context.readTensor(t_out), np.int32).tolist()
    finally:
        stop.set()
        await ticker
        logger.removeHandler(handler)
        for h in logger.handlers:     # the failure was expected: keep the suite's guard quiet
            if type(h).__name__ == "_FailOnWebNNErrors":
                h.records.clear()
    assert result == [42, 43]                                   # outputs unchanged
    assert len(seen) == 1 and "dispatch failed" in seen[0].getMessage()
    exc = seen[0].exc_info[1]
    assert type(exc).__name__ == "OperationError" and "maxIterations (200)" in str(exc)
    assert len(ticks) >= 100


async def test_dispatch_runs_its_first_slice_at_once_when_the_timeline_is_idle():
    """With slicing on, dispatch() starts the work in the caller's task (up to one slice):
    an idle timeline is done before dispatch() returns when the graph fits in the slice;
    with a zero budget it runs one step and leaves the rest to later tasks."""
    context = await webnn_py.ml.createContext()
    context._timeline.slice_seconds = 60.0
    graph = await _chain(context, 3)
    t_in, t_out = await _tensors(context, F32, np.array([0, 1, 2, 3], np.float32))
    await context.readTensor(t_out)                  # the timeline is idle now
    context.dispatch(graph, {"x": t_in}, {"y": t_out})
    assert not context._timeline.busy
    assert np.frombuffer(await context.readTensor(t_out), np.float32).tolist() == [3, 4, 5, 6]
    await _settle_tasks()                            # a new task: a new turn
    context._timeline.slice_seconds = 0.0
    context.dispatch(graph, {"x": t_in}, {"y": t_out})
    assert context._timeline.busy                    # one step done, the others queued
    assert np.frombuffer(await context.readTensor(t_out), np.float32).tolist() == [3, 4, 5, 6]


async def test_promise_listeners_are_told_synchronously_and_once():
    """runtime.timeline.PromiseFuture: on_settled listeners run inside set_result/set_exception
    (the browser bridge resolves the page's promise there), or at once when it is already
    settled; awaiting it still works as with any asyncio future."""
    from webnn_py.runtime.timeline import new_future

    seen = []
    promise = new_future()
    promise.on_settled(lambda p: seen.append(("first", p.result())))
    promise.on_settled(lambda p: seen.append(("second", p.result())))
    assert seen == []
    promise.set_result(7)
    assert seen == [("first", 7), ("second", 7)]
    promise.on_settled(lambda p: seen.append(("late", p.result())))
    assert seen[-1] == ("late", 7) and await promise == 7
    failed = new_future()
    failed.on_settled(lambda p: seen.append(type(p.exception()).__name__))
    failed.set_exception(InvalidStateError("lost"))
    assert seen[-1] == "InvalidStateError"
    await rejects(failed, InvalidStateError, "lost")
