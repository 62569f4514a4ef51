"""Drive headless Chromium through the tests: one browser, a fresh context per test, N at a time.
(Firefox and WebKit: layer_runner.py.)

A test's outcome arrives from the page's hook (assets/hook.js) through a
Playwright binding: each subtest as it finishes, then the harness's completion.
Three things end a test early: the renderer crashing (CRASH), the runner's own
timer (TIMEOUT: the harness's timeout plus a grace period, so testharness.js
gets to report its own TIMEOUT first, with its subtests, whenever the page can
still run script), and the browser itself dying (CRASH, and a new browser for the
tests that remain).
"""
from __future__ import annotations

import abc
import asyncio
import json
import time
from typing import Callable

from .chromium import launch_chromium_async
from .manifest import TestItem
from .results import SubtestResult, TestResult, harness_status_name, subtest_status_name

# Beyond the harness's own timeout, for page load and for the harness to send its report.
GRACE_SECONDS = 5.0
CLOSE_SECONDS = 10.0
MAX_CONSOLE_LINES = 40


class PageReports(abc.ABC):
    """One page's reports from the hook (assets/hook.js): subtests as they finish,
    then the harness's completion, which calls `finish`. How a finished outcome is
    handed over (a future, an event) is the subclass's."""

    def __init__(self) -> None:
        self.partial: list[SubtestResult] = []
        self.console: list[str] = []

    @abc.abstractmethod
    def finish(self, status: str, message: str | None, subtests: list[SubtestResult] | None = None) -> None:
        """Record the test's outcome (the first one given wins); without `subtests`, those reported so far."""

    def on_message(self, message: dict) -> None:
        if message.get("type") == "result" and isinstance(message.get("test"), dict):
            self.partial.append(_subtest(message["test"]))
        elif message.get("type") == "complete":
            status = message.get("status") or {}
            self.finish(harness_status_name(status.get("status")), status.get("message"),
                        [_subtest(t) for t in message.get("tests", [])])

    def log(self, line: str) -> None:
        if len(self.console) < MAX_CONSOLE_LINES:
            self.console.append(line)


class _PageOutcome(PageReports):
    """`done` resolves when the test has an outcome."""

    def __init__(self) -> None:
        super().__init__()
        self.done: asyncio.Future = asyncio.get_running_loop().create_future()

    def finish(self, status: str, message: str | None, subtests: list[SubtestResult] | None = None) -> None:
        if not self.done.done():
            self.done.set_result((status, message, subtests if subtests is not None else list(self.partial)))

    def on_report(self, payload: str) -> None:
        self.on_message(json.loads(payload))


def _subtest(data: dict) -> SubtestResult:
    return SubtestResult(name=str(data.get("name", "")), status=subtest_status_name(data.get("status")),
                         message=None if data.get("message") is None else str(data.get("message")))


class Runner:
    def __init__(self, base_url: str, jobs: int = 1, timeout_multiplier: float = 1.0,
                 chromium_args: list[str] | None = None, allow_test_crash: bool = False,
                 on_result: Callable[[TestResult], None] | None = None, frame_script: str | None = None):
        self.base_url = base_url.rstrip("/")
        self.jobs = max(1, jobs)
        self.timeout_multiplier = timeout_multiplier
        self.chromium_args = chromium_args or []
        # A test seam: lets a self-test page ask for a real renderer crash (CDP Page.crash),
        # since no page script can crash Chromium on purpose.
        self.allow_test_crash = allow_test_crash
        self.on_result = on_result or (lambda result: None)
        # Run in every frame of every test (server.frame_init_script): the polyfill for the
        # about:blank frames a test creates, which the server never serves.
        self.frame_script = frame_script
        self.browser_version: str | None = None

    def run(self, tests: list[TestItem]) -> list[TestResult]:
        return asyncio.run(self._run(tests))

    async def _run(self, tests: list[TestItem]) -> list[TestResult]:
        results: list[TestResult] = []
        if not tests:
            return results
        queue: asyncio.Queue = asyncio.Queue()
        for item in tests:
            queue.put_nowait(item)
        async with _BrowserHolder(self.chromium_args) as holder:
            self.browser_version = holder.version

            async def worker() -> None:
                while not queue.empty():
                    item = queue.get_nowait()
                    result = await self._run_one(holder, item)
                    results.append(result)
                    self.on_result(result)

            await asyncio.gather(*(worker() for _ in range(min(self.jobs, len(tests)))))
        return sorted(results, key=lambda r: r.test)

    async def _run_one(self, holder: "_BrowserHolder", item: TestItem) -> TestResult:
        started = time.monotonic()
        outcome = _PageOutcome()
        timeout = item.timeout_seconds * self.timeout_multiplier + GRACE_SECONDS
        context = browser = None

        def on_disconnect(*_):
            outcome.finish("CRASH", "the browser process died")

        try:
            browser = await holder.get()
            context = await browser.new_context()
            if self.frame_script:
                await context.add_init_script(self.frame_script)
            main: list = []   # the test's own page; popups it opens have hooks too, and must not report

            def report(source, payload):
                if main and source["frame"] is main[0].main_frame:
                    outcome.on_report(payload)

            await context.expose_binding("__wptRunnerReport", report)
            if self.allow_test_crash:
                await context.expose_binding("__wptRunnerTestCrash", lambda source: _crash(context, source["page"]))
            page = await context.new_page()
            main.append(page)
            page.on("crash", lambda *_: outcome.finish("CRASH", "the renderer process crashed"))
            page.on("console", lambda msg: outcome.log(f"console.{msg.type}: {msg.text}")
                    if msg.type in ("error", "warning") else None)
            page.on("pageerror", lambda error: outcome.log(f"uncaught: {error}"))
            context.on("weberror", lambda error: outcome.log(f"uncaught (worker or page): {error.error}"))
            browser.on("disconnected", on_disconnect)
            navigation = asyncio.ensure_future(page.goto(self.base_url + item.url, wait_until="commit",
                                                         timeout=timeout * 1000))
            navigation.add_done_callback(lambda task: _navigation_failed(task, outcome))
            try:
                status, message, subtests = await asyncio.wait_for(asyncio.shield(outcome.done), timeout)
            except asyncio.TimeoutError:
                status, message, subtests = ("TIMEOUT", f"no result from the page within {timeout:g} s "
                                             "(harness timeout plus grace period)", list(outcome.partial))
            if not navigation.done():
                navigation.cancel()
        except Exception as error:  # noqa: BLE001 - one test's trouble must not stop the run
            if not outcome.done.done():
                outcome.finish("CRASH" if holder.broken() else "ERROR", f"runner: {type(error).__name__}: {error}")
            status, message, subtests = outcome.done.result()
        finally:
            if browser is not None:
                browser.remove_listener("disconnected", on_disconnect)
            if context is not None:
                try:
                    await asyncio.wait_for(context.close(), CLOSE_SECONDS)
                except Exception:  # noqa: BLE001 - a crashed page's context may already be gone
                    pass
        return TestResult(test=item.url, status=status, message=message, subtests=subtests,
                          duration_ms=int((time.monotonic() - started) * 1000), console=outcome.console)


def _navigation_failed(task: asyncio.Future, outcome: _PageOutcome) -> None:
    if task.cancelled():
        return
    error = task.exception()
    if error is not None and not outcome.done.done():
        text = str(error).splitlines()[0] if str(error) else type(error).__name__
        outcome.finish("CRASH" if "crash" in text.lower() else "ERROR", f"navigation failed: {text}")


async def _crash(context, page) -> None:
    session = await context.new_cdp_session(page)
    # Page.crash does not answer: the renderer is gone before it could.
    task = asyncio.ensure_future(session.send("Page.crash"))
    task.add_done_callback(lambda t: t.cancelled() or t.exception())


class _BrowserHolder:
    """The shared browser, relaunched if it dies mid-run."""

    def __init__(self, args: list[str]):
        self.args = args
        self._stack = None
        self._browser = None
        self._lock = asyncio.Lock()
        self.version: str | None = None

    async def __aenter__(self) -> "_BrowserHolder":
        await self.get()
        return self

    async def __aexit__(self, *exc) -> None:
        await self._close()

    def broken(self) -> bool:
        return self._browser is not None and not self._browser.is_connected()

    async def get(self):
        async with self._lock:
            if self._browser is None or not self._browser.is_connected():
                await self._close()
                self._stack = launch_chromium_async(self.args)
                self._browser = await self._stack.__aenter__()
                self.version = self._browser.version
            return self._browser

    async def _close(self) -> None:
        if self._stack is not None:
            stack, self._stack, self._browser = self._stack, None, None
            try:
                await stack.__aexit__(None, None, None)
            except Exception:  # noqa: BLE001 - a dead browser cannot be closed cleanly
                pass
