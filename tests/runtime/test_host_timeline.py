"""The host's timeline and ML tasks (runtime/timeline.py): dispatch(), writeTensor() and
readTensor() start their work in the caller's call when the timeline is idle, and an
awaited readTensor() whose ML task is all the asyncio loop has ready runs that task at the
await instead of yielding to the loop. Checked structurally (what is done when, what ran
before what, whether an await yielded), never by time. Host only: Pyodide's WebLoop has no
ready queue to inspect, and keeps a call_soon per ML task (tests/portable covers it there).
"""
import asyncio
import logging

import numpy as np

import webnn_py
from webnn_py.runtime import timeline as timeline_module

F32 = {"dataType": "float32", "shape": [4]}


async def _setup():
    context = await webnn_py.ml.createContext()
    builder = webnn_py.MLGraphBuilder(context)
    x = builder.input("x", F32)
    graph = await builder.build({"y": builder.add(x, x)})
    tx = await context.createTensor({**F32, "writable": True})
    ty = await context.createTensor({**F32, "readable": True})
    await asyncio.sleep(0)          # the ML task source's callback of the awaits above has run
    return context, graph, tx, ty


async def _awaiting(promise):
    return await promise


def _step(coroutine):
    """Run a coroutine until it first yields to the event loop: (True, what it yielded) or,
    if it finished without yielding, (False, its value)."""
    try:
        return True, coroutine.send(None)
    except StopIteration as done:
        return False, done.value


async def test_an_idle_timeline_runs_dispatch_and_write_in_the_call():
    context, graph, tx, ty = await _setup()
    timeline = context._timeline
    context.writeTensor(tx, np.arange(4, dtype=np.float32))
    assert not timeline.busy and tx._data.tolist() == [0, 1, 2, 3]
    context.dispatch(graph, {"x": tx}, {"y": ty})
    assert not timeline.busy and ty._data.tolist() == [0, 2, 4, 6]


async def test_work_queued_ahead_keeps_later_calls_queued_in_order():
    context, graph, tx, ty = await _setup()
    timeline = context._timeline
    pending = context.createTensor(F32)                    # queued: runs in a later callback
    context.writeTensor(tx, np.ones(4, np.float32))
    context.dispatch(graph, {"x": tx}, {"y": ty})
    assert timeline.busy and ty._data.tolist() == [0, 0, 0, 0]
    read = context.readTensor(ty)
    context.writeTensor(tx, np.full(4, 5, np.float32))     # after the read: not seen by it
    context.dispatch(graph, {"x": tx}, {"y": ty})
    assert np.frombuffer(await read, np.float32).tolist() == [2, 2, 2, 2]
    await pending
    assert np.frombuffer(await context.readTensor(ty), np.float32).tolist() == [10, 10, 10, 10]


async def test_an_awaited_read_of_idle_work_does_not_yield():
    context, graph, tx, ty = await _setup()
    context.writeTensor(tx, np.ones(4, np.float32))
    context.dispatch(graph, {"x": tx}, {"y": ty})

    async def read():
        promise = context.readTensor(ty)
        assert not promise.done()       # settled by its ML task, not in the call (§8.3.4 step 9.1)
        return np.frombuffer(await promise, np.float32).tolist()

    yielded, value = _step(read())
    assert not yielded and value == [2, 2, 2, 2]


async def test_an_await_yields_when_anything_else_is_ready_and_that_runs_first():
    context, graph, tx, ty = await _setup()
    asyncio.get_running_loop().call_soon(ty.destroy)    # ready before the read's ML task
    promise = context.readTensor(ty)
    coroutine = _awaiting(promise)
    yielded, _ = _step(coroutine)
    assert yielded and not promise.done()
    coroutine.close()
    await asyncio.sleep(0)
    # The destroy() ran first and rejected it (§8.8.2), as without the shortcut.
    assert isinstance(promise.exception(), webnn_py.InvalidStateError)


async def test_an_await_yields_when_someone_else_waits_on_the_promise():
    context, graph, tx, ty = await _setup()
    promise = context.readTensor(ty)
    seen = []
    promise.add_done_callback(lambda p: seen.append("callback"))
    coroutine = _awaiting(promise)
    yielded, _ = _step(coroutine)
    assert yielded and not promise.done()
    coroutine.close()
    await asyncio.sleep(0)              # the ML task source's callback settles it
    await asyncio.sleep(0)              # asyncio calls the done callback a turn later
    assert promise.done() and seen == ["callback"]


async def test_ml_tasks_run_in_order_when_a_later_one_is_awaited():
    context, graph, tx, ty = await _setup()
    other = await context.createTensor({**F32, "readable": True, "writable": True})
    await asyncio.sleep(0)
    context.writeTensor(other, np.full(4, 7, np.float32))
    context.writeTensor(tx, np.ones(4, np.float32))
    context.dispatch(graph, {"x": tx}, {"y": ty})
    first = context.readTensor(other)
    second = context.readTensor(ty)
    order = []
    first.on_settled(lambda p: order.append("first"))
    second.on_settled(lambda p: order.append("second"))
    assert np.frombuffer(await second, np.float32).tolist() == [2, 2, 2, 2]
    assert order == ["first", "second"]
    assert np.frombuffer(first.result(), np.float32).tolist() == [7, 7, 7, 7]


async def test_a_read_into_output_data_fills_it_at_the_await():
    context, graph, tx, ty = await _setup()
    context.writeTensor(tx, np.ones(4, np.float32))
    context.dispatch(graph, {"x": tx}, {"y": ty})
    into = np.zeros(4, np.float32)

    async def read():
        promise = context.readTensor(ty, into)
        assert into.tolist() == [0, 0, 0, 0]       # written by the ML task (§8.3.5 step 9.1.3)
        return await promise

    yielded, value = _step(read())
    assert not yielded and value is None and into.tolist() == [2, 2, 2, 2]


async def test_a_caller_that_never_yields_does_not_pile_up_callbacks():
    context, graph, tx, ty = await _setup()
    loop = asyncio.get_running_loop()

    async def runs(n):
        for i in range(n):
            context.writeTensor(tx, np.full(4, i, np.float32))
            context.dispatch(graph, {"x": tx}, {"y": ty})
            assert np.frombuffer(await context.readTensor(ty), np.float32).tolist() == [2 * i] * 4
        return len(loop._ready)

    yielded, ready = _step(runs(50))
    assert not yielded and ready <= 1          # the ML task source's one callback at most


async def test_the_ml_task_source_runs_what_no_await_took():
    context, graph, tx, ty = await _setup()
    context.writeTensor(tx, np.ones(4, np.float32))
    context.dispatch(graph, {"x": tx}, {"y": ty})
    promises = [context.readTensor(ty) for _ in range(3)]
    assert not any(p.done() for p in promises)
    await asyncio.sleep(0)                     # one turn of the loop: the source's callback
    assert all(p.done() for p in promises)
    assert [np.frombuffer(p.result(), np.float32).tolist() for p in promises] == [[2, 2, 2, 2]] * 3


async def test_a_failing_ml_task_is_logged_and_does_not_stall_the_others():
    loop = asyncio.get_running_loop()
    guards = [h for h in logging.getLogger("webnn_py").handlers if type(h).__name__ == "_FailOnWebNNErrors"]
    ran = []

    def failing():
        raise RuntimeError("a bug of ours")

    first = timeline_module.PromiseFuture(loop=loop)
    second = timeline_module.PromiseFuture(loop=loop)
    timeline_module.queue_ml_task(first, failing)
    timeline_module.queue_ml_task(second, lambda: (ran.append("second"), second.set_result(2)))
    assert await second == 2 and ran == ["second"]
    logged = [r for guard in guards for r in guard.records]
    assert [r.getMessage() for r in logged] == ["an ML task failed"] and "a bug of ours" in str(logged[0].exc_info[1])
    for guard in guards:              # expected: keep the suite's guard quiet
        guard.records.clear()
    first.cancel()
