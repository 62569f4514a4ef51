"""A context's timeline (§8.3 [[timeline]]): work queued in order, run later.

`dispatch()`, `writeTensor()` and friends enqueue steps and return at once;
the queue is drained in a later task of the event loop (asyncio on the host,
Pyodide's WebLoop in the browser), so `readTensor()` resolves after every
dispatch queued before it and callers never wait on the work itself.
Without a running event loop (plain synchronous host code) the queue drains
immediately, which keeps the same ordering.

Cooperative slicing (README, "Responsiveness"). In a window the timeline runs
on the page's only thread, so a long dispatch would freeze the page. A step
may therefore be a generator (a dispatch walking its plan with
`ExecutionPlan.execute_iter`, which also yields between loop iterations):
the timeline advances it until `slice_seconds` of work are spent, then hands
the thread back to the browser with `call_soon` — in Pyodide's WebLoop a
postMessage/MessageChannel task, which is not clamped to 4 ms like nested
timers — and continues in that later task. Steps queued behind a suspended one
wait for it, so the timeline order is unchanged. `slice_seconds` is None on
the host (a step runs to its end, as it always did); the browser bridge sets it.

The caller's task gets at most one slice, whatever is queued. dispatch(),
writeTensor() and readTensor() start their work at once, in the caller's task,
only when the timeline is idle (nothing queued ahead of them, so the timeline
order is the call order either way); every dispatch() started so in one task
draws on the same budget (the task's "turn": one slice of work, counted from the
steps' own run time, ended by the next task the timeline runs in, or in the page by a
task the shim posts: set_turn_words). So a page that
calls dispatch() 30 times in a row is held for one slice (plus the step that
crosses its end), not 30 (issue 19, item 8); the rest runs in later tasks, in
order. readTensor()'s and writeTensor()'s steps (run_at_once) cost what the
page's own call asks for (a copy of its bytes, an array replaced) and draw on no
budget. A readTensor() started so settles its promise before it returns: the
page's `await` continues in the same task's microtasks, without waiting for a task.

On the host (no slicing) the same starts run the whole step in the caller's
call, again only when the timeline is idle, so the order is the call order.
readTensor()'s promise is still settled by an ML task (§8.3.4 step 9.1), a
later callback of the event loop: code after the call, before the caller
yields, sees it pending (a destroy() of the tensor rejects it, §8.8.2). When
the caller then awaits it and that ML task is all the loop has ready, the
await runs the task at once (PromiseFuture.__await__): it is the order the loop
would run things in anyway, without two turns of the loop (queue_ml_task).

Losing the context while a step is suspended closes the step's generator: its
remaining work is abandoned (a dispatch writes no output), and queued steps
are aborted as usual.
"""
from __future__ import annotations

import asyncio
import logging
import sys
import time
import weakref
from collections import deque
from types import GeneratorType
from typing import Callable

_log = logging.getLogger("webnn_py")

# How to run a callback in a later task; None: the event loop's call_soon. The
# browser bridge sets the page's task scheduler (set_post_task).
_post_task: Callable[[Callable[[], None]], None] | None = None

# The clock slices are measured with (tests replace it to count steps, not milliseconds).
_clock: Callable[[], float] = time.perf_counter


_FINISHED = object()    # what next() gives for a step's generator that has finished
NOT_RUN = object()      # Timeline.run_at_once: the step did not run (the caller enqueues it)


def set_post_task(post_task: Callable[[Callable[[], None]], None] | None) -> None:
    global _post_task
    _post_task = post_task


# How a turn ends in the page (set_turn_words); None: with a task of the timeline's own.
_turn_words = None


def set_turn_words(words) -> None:
    """Two words the browser shim shares with the timelines, [asked, tasks]: a timeline that
    starts a turn sets `asked`; when the page's call into Python returns, the shim clears it
    and posts a task of its own, no call into Python, that adds one to `tasks`. A turn is
    over once `tasks` has changed since it began: a task has run after the one it began in.
    One JS task ends the turns of every timeline, where a task of each timeline's own
    (_schedule(always=True)) cost two crossings of Pyodide's boundary per run (~10-15 % of a
    one-node run through ORT-web's WebNN EP, issue 17)."""
    global _turn_words
    _turn_words = words


class Timeline:
    # Seconds of work per task before handing the thread back; None: no slicing.
    slice_seconds: float | None = None

    def __init__(self) -> None:
        self._queue: deque[tuple[Callable[[], object], Callable[[], None] | None]] = deque()
        self._scheduled = False
        self._current: GeneratorType | None = None    # a step suspended mid-way
        self.aborted = False
        self.slices = 0        # how many tasks the timeline has run in (for tests and benchmarks)
        self.steps = 0         # how many times a step was run or resumed (for tests)
        self._running = False   # inside _run (a step that enqueues must not start another run)
        # Seconds of work the caller's current task may still spend in starts (enqueue's
        # `start`); None: no start in this task yet. Reset by the next task the timeline runs in.
        self._turn_budget: float | None = None
        self._turn_began = 0    # the shim's task count when this turn began (set_turn_words)
        # The browser shim's copy of "would run_at_once run a step now?": a slot of
        # browser/tensor_memory.py (word 1: READY or 0), written by publish() whenever control
        # can go back to JavaScript after the answer may have changed; None: nobody reads it.
        self.mirror = None

    @property
    def busy(self) -> bool:
        """Is there work queued or a step suspended?"""
        return self._current is not None or bool(self._queue)

    def enqueue(self, run: Callable[[], object], on_abort: Callable[[], None] | None = None,
                start: bool = False) -> None:
        """Queue `run` (a function, or a generator function for a long step); if the
        context is lost before it runs, `on_abort` runs instead.

        With `start` (dispatch, writeTensor, readTensor), `run` starts at once, in the
        caller's task, when the timeline is idle: work the page would wait for anyway
        starts without first waiting for a task of its own (~0.1-0.5 ms in Chromium;
        two turns of the event loop per readTensor() on the host). With slicing on, all
        such starts of one task share one slice of work (the module docstring); on the
        host, without slicing, the step runs to its end (in the page, slicing off --
        timeSlice: 0 -- means each step in a task of its own, as before). With work
        already queued nothing runs here: the tasks already scheduled go on with it, in
        order."""
        try:
            idle = self._idle()
            if start and idle and self.slice_seconds is not None:
                self._start_in_callers_turn(run, on_abort)
                return
            self._queue.append((run, on_abort))
            if start and idle and not _IN_PYODIDE:
                self._run(None)       # the host: no slices, the step runs to its end now
            elif self.busy:
                self._schedule()
        finally:
            self.publish()

    def publish(self) -> None:
        """Write run_at_once's answer into the mirror, if there is one (tensor_memory: word 1
        of its slot)."""
        if self.mirror is not None:
            self.mirror[1] = self.slice_seconds is not None and not self.aborted and self._idle()

    def _idle(self) -> bool:
        """Nothing queued or suspended, and no task scheduled but the one that ends this
        task's turn: a step started now runs in the order it was called."""
        return (self._current is None and not self._queue and not self._running
                and (not self._scheduled or self._turn_budget is not None))

    def _start_in_callers_turn(self, run: Callable[[], object], on_abort: Callable[[], None] | None) -> None:
        """enqueue()'s start on an idle timeline, in the page: `run` is called here, not
        queued and taken back (the per-run calls' path, issue 17)."""
        budget = self._turn_budget
        words = _turn_words
        if budget is not None and words is not None and words[1] != self._turn_began:
            budget = None       # the shim's task has run since the turn began: a new task
        if budget is None:
            # The first start of this task: one slice of work (at least one step), and a
            # task that ends the turn: the shim's, or one of ours (which also runs what this
            # task's starts leave over; with the shim's, _schedule below posts that).
            budget = self._turn_budget = self.slice_seconds
            if words is None:
                self._schedule(always=True)
            else:
                self._turn_began = words[1]
                words[0] = 1
        elif budget <= 0:
            # The turn is spent: a task of the timeline's runs it (with the shim ending turns,
            # none may be scheduled yet: the turn's steps left nothing over).
            self._queue.append((run, on_abort))
            self._schedule()
            return
        began = _clock()
        if self.aborted:        # the context is lost: _run_steps runs `on_abort` instead
            self._queue.append((run, on_abort))
            self._run(began + budget)
            return
        self.slices += 1
        self._running = True
        try:
            self._step(run)
            if self._current is not None and _clock() < began + budget:
                self._run_steps(began + budget)     # advances the generator, counting its steps
        finally:
            self._running = False
        self._turn_budget = budget - (_clock() - began)
        if self.busy:
            self._schedule()

    def run_at_once(self, step: Callable, *args):
        """`step(*args)` (a function, not a generator), run here as a step of the timeline
        started in the caller's turn, and its result -- or what it raises --, when the
        page's timeline is idle and the context not lost; else NOT_RUN: nothing ran, and
        the caller enqueues the step instead (readTensor() and writeTensor() in the browser
        bridge: no step closure, no promise of ours in between, issue 17). Such a step does
        not draw on the turn's slice and runs in any turn, spent or not, without reading the
        clock: its cost is that of the page's own call (writeTensor() replaces an array;
        readTensor() copies the bytes the page asked for, as writeTensor() copies them in
        its call), not work queued behind it, which is what the slice bounds."""
        if self.slice_seconds is None or self.aborted or not self._idle():
            return NOT_RUN
        self.slices += 1
        self.steps += 1
        self._running = True
        try:
            return step(*args)
        finally:
            self._running = False

    def _schedule(self, always: bool = False) -> None:
        """Run a slice in a later task if work is queued (or `always`, to end a turn)."""
        if self._scheduled or not (always or self.busy):
            return
        loop = _event_loop()
        if loop is None:
            self._turn_budget = None        # synchronous host code: no later task to wait for
            self.drain()
        elif _post_task is not None:
            self._scheduled = True
            _post_task(self._run_slice)
        else:
            self._scheduled = True
            loop.call_soon(self._run_slice)

    def drain(self) -> None:
        """Run everything queued, suspended steps included, to the end, now."""
        try:
            self._run(None)
        finally:
            self.publish()

    def _run_slice(self) -> None:
        try:
            self._scheduled = False
            self._turn_budget = None            # a new task: the caller's turn is over
            if not self.busy:
                return
            budget = self.slice_seconds
            self._run(None if budget is None else _clock() + budget)
            self._schedule()
        finally:
            self.publish()

    def _run(self, deadline: float | None) -> None:
        self.slices += 1
        self._running = True
        try:
            self._run_steps(deadline)
        finally:
            self._running = False

    def _run_steps(self, deadline: float | None) -> None:
        queue = self._queue
        while self._current is not None or queue:
            if self._current is None:
                run, on_abort = queue.popleft()
                if self.aborted:
                    if on_abort is not None:
                        on_abort()
                    continue
                self._step(run)
            else:
                self._step(None)
            # The clock is read only when there is more to do (in Pyodide it is a call
            # into JavaScript).
            if deadline is not None and (self._current is not None or queue) and _clock() >= deadline:
                return

    def _step(self, run: Callable[[], object] | None) -> None:
        """One step: `run` called (a step starting; a generator it returns becomes the
        suspended step, advanced to its first yield), or, without it, the suspended step
        advanced to its next yield or its end."""
        self.steps += 1
        try:
            if run is not None:
                step = run()
                if type(step) is not GeneratorType:
                    return
                self._current = step
            # A finished generator gives _FINISHED (a StopIteration raised and caught
            # per step is a measurable part of a small dispatch in Pyodide).
            if next(self._current, _FINISHED) is _FINISHED:
                self._current = None
        except Exception:  # noqa: BLE001
            # Steps report their own failures; one that escapes is a bug of
            # ours, which must not stall the steps queued behind it.
            self._current = None
            _log.exception("a timeline step failed")

    def abort_all(self) -> None:
        """The context is lost: the suspended step is abandoned, pending steps are
        aborted (§8.3 "abort when lost")."""
        self.aborted = True
        current, self._current = self._current, None
        if current is not None:
            current.close()
        self.drain()


def _event_loop() -> asyncio.AbstractEventLoop | None:
    if _IN_PYODIDE:
        # Pyodide's WebLoop schedules callbacks on the browser's task queue even when
        # called synchronously from JavaScript (asked first: get_running_loop() raises
        # there outside a callback, and every promise the API makes asks).
        return asyncio.get_event_loop()
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


_IN_PYODIDE = sys.platform == "emscripten"


class PromiseFuture(asyncio.Future):
    """The future behind each promise the API returns. Python code awaits it as any
    asyncio future; `on_settled` listeners are called at once, synchronously, when it
    is resolved or rejected (asyncio runs its own callbacks in a later task). The
    browser bridge resolves the page's JS promise from such a listener: the page's
    await then continues in the same task's microtasks instead of after several
    event-loop turns (~0.7 ms per readTensor() in Chromium)."""

    _listeners: list | None = None
    # The ML task that will settle it and its _MLTaskSource (queue_ml_task).
    _ml_task: tuple | None = None

    def __await__(self):
        """`await`: when the ML task that settles this promise is queued, nothing else
        waits on the promise and the event loop has nothing ready but its ML tasks
        (_MLTaskSource.run_early), the loop's next turns would run those tasks and then
        this coroutine's continuation, nothing in between: they run here instead, and
        the await does not yield."""
        pending = self._ml_task
        if pending is not None and not self.done() and not self._callbacks:
            source, task = pending
            source.run_early(self.get_loop(), task)
        return super().__await__()

    __iter__ = __await__

    def on_settled(self, listener: Callable[["PromiseFuture"], None]) -> None:
        if self.done():
            listener(self)
        else:
            self._listeners = (self._listeners or []) + [listener]

    def set_result(self, result) -> None:
        super().set_result(result)
        self._notify()

    def set_exception(self, exception) -> None:
        super().set_exception(exception)
        self._notify()

    def _notify(self) -> None:
        listeners, self._listeners = self._listeners or [], None
        for listener in listeners:
            listener(self)


def queue_ml_task(promise, task: Callable[[], None]) -> None:
    """"Queue an ML task" that settles `promise` (its steps, `task`): a later callback of
    the promise's event loop (its get_loop()), or at once when it has none (the browser
    bridge's stand-in for a page promise settled in the call). On asyncio's own loops
    (the host) the tasks go through the loop's _MLTaskSource, which a PromiseFuture's
    await may run early; any other loop (Pyodide's WebLoop) runs each in a call_soon."""
    get_loop = getattr(promise, "get_loop", None)
    loop = get_loop() if get_loop is not None else None
    if loop is None:
        task()
    elif isinstance(loop, asyncio.BaseEventLoop):
        source = _ml_task_source(loop)
        source.queue(loop, task)
        if type(promise) is PromiseFuture:
            promise._ml_task = (source, task)
    else:
        loop.call_soon(task)


class _MLTaskSource:
    """An asyncio loop's ML tasks: run in the order they were queued, all of those queued
    by then in one later callback of the loop. One callback at a time is scheduled, so
    a caller that never yields to the loop (its awaits run the tasks: run_early) does not
    pile up callbacks."""

    __slots__ = ("tasks", "handle")

    def __init__(self) -> None:
        self.tasks: deque[Callable[[], None]] = deque()
        # The scheduled callback's handle, weakly: a handle refers to its loop, which this
        # source must not keep alive (_ml_task_sources holds it by the loop).
        self.handle: weakref.ref | None = None

    def queue(self, loop: asyncio.BaseEventLoop, task: Callable[[], None]) -> None:
        self.tasks.append(task)
        if self.handle is None or self.handle() is None:      # none scheduled (or its loop was closed)
            self.handle = weakref.ref(loop.call_soon(self._run))

    def _run(self) -> None:
        self.handle = None
        while self.tasks:
            self._run_one()

    def _run_one(self) -> Callable[[], None]:
        task = self.tasks.popleft()
        try:
            task()
        except Exception:  # noqa: BLE001 - a bug of ours must not stall the tasks behind it
            _log.exception("an ML task failed")
        return task

    def run_early(self, loop: asyncio.BaseEventLoop, task: Callable[[], None]) -> None:
        """Run the queued tasks up to `task` now, in order, if the loop would run them next
        anyway: nothing is ready in it but this source's callback (cancelled handles aside:
        asyncio skips them). The callback stays scheduled and finds what is left."""
        ready = loop._ready         # asyncio.BaseEventLoop's ready callbacks (a deque of Handles)
        handle = self.handle() if self.handle is not None else None
        if handle is None:
            return
        # A plain loop, not all() over a generator: on the usual ready deque (this callback
        # alone) 0.03 us instead of 0.16 us on the host, with no separate one-callback test.
        for ready_handle in ready:
            if ready_handle is not handle and not ready_handle.cancelled():
                return
        while self.tasks and self._run_one() is not task:
            pass


# Each asyncio loop's ML task source, for as long as the loop lives; the last one looked up
# (a weak reference to its loop, the source) is kept at hand: programs use one loop at a time.
_ml_task_sources: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _MLTaskSource]" = weakref.WeakKeyDictionary()
_last_source: tuple = (lambda: None, None)


def _ml_task_source(loop: asyncio.BaseEventLoop) -> _MLTaskSource:
    global _last_source
    loop_ref, source = _last_source
    if loop_ref() is not loop:
        source = _ml_task_sources.get(loop)
        if source is None:
            source = _ml_task_sources[loop] = _MLTaskSource()
        _last_source = (weakref.ref(loop), source)
    return source


def new_future() -> PromiseFuture:
    loop = _event_loop()
    if loop is None:
        raise RuntimeError("webnn_py's promise-returning methods need a running asyncio event loop "
                           "(call them from a coroutine, e.g. under asyncio.run())")
    return PromiseFuture(loop=loop)
