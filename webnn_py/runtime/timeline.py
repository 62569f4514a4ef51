"""A context's timeline (§8.3 [[timeline]]): work queued in order, run later.

`dispatch()`, `writeTensor()` and friends enqueue steps and return at once;
the queue is drained in a later task of the event loop (asyncio on the host,
Pyodide's WebLoop in the browser), so `readTensor()` resolves after every
dispatch queued before it and callers never wait on the work itself.
Without a running event loop (plain synchronous host code) the queue drains
immediately, which keeps the same ordering.
"""
from __future__ import annotations

import asyncio
import sys
from collections import deque
from typing import Callable


class Timeline:
    def __init__(self) -> None:
        self._queue: deque[tuple[Callable[[], None], Callable[[], None] | None]] = deque()
        self._scheduled = False
        self.aborted = False

    def enqueue(self, run: Callable[[], None], on_abort: Callable[[], None] | None = None) -> None:
        """Queue `run`; if the context is lost before it runs, `on_abort` runs instead."""
        self._queue.append((run, on_abort))
        if self._scheduled:
            return
        loop = _event_loop()
        if loop is None:
            self.drain()
        else:
            self._scheduled = True
            loop.call_soon(self.drain)

    def drain(self) -> None:
        self._scheduled = False
        while self._queue:
            run, on_abort = self._queue.popleft()
            if self.aborted:
                if on_abort is not None:
                    on_abort()
                continue
            run()

    def abort_all(self) -> None:
        """The context is lost: pending steps are aborted (§8.3 "abort when lost")."""
        self.aborted = True
        self.drain()


def _event_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        pass
    if sys.platform == "emscripten":
        # Pyodide's WebLoop schedules callbacks on the browser's task queue even
        # when called synchronously from JavaScript.
        return asyncio.get_event_loop()
    return None


def new_future() -> asyncio.Future:
    loop = _event_loop()
    if loop is None:
        raise RuntimeError("webnn_py's promise-returning methods need a running asyncio event loop "
                           "(call them from a coroutine, e.g. under asyncio.run())")
    return loop.create_future()
