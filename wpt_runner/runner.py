"""Drive headless Chromium through the tests: one browser per job, a new tab per test, N at a time.
(Firefox and WebKit: layer_runner.py.)

Each job has its own Chromium with its own persistent profile, as wptrunner keeps
one browser and profile: what browsers let pages reuse, the HTTP cache and the
code caches (the runtime's compiled wasm and JavaScript), carries from one of the
job's tests to the next, so a page boots from cached code (V8 is told to write
the wasm cache sooner: WASM_CACHING_JS_FLAGS). Nothing else does: a
test runs in a new tab, and when it ends every tab it left is closed and the
test origin's storage (cookies, local and Cache Storage, IndexedDB, service
worker registrations, file systems, ...) is cleared before the next test starts
(CDP Storage.clearDataForOrigin, which leaves the HTTP and code caches alone).

A test's outcome arrives from the page's hook (assets/hook.js) through a
Playwright binding: each subtest as it finishes, then the harness's completion.
Three things end a test early: the renderer crashing (CRASH), the runner's own
timer (TIMEOUT: the harness's timeout plus a grace period, so testharness.js
gets to report its own TIMEOUT first, with its subtests, whenever the page can
still run script), and the browser itself dying (CRASH, and a new browser for the
job's remaining tests). A tab that cannot be closed or a storage that cannot be
cleared also gets the job a new browser (and profile), so no test sees another's state.
"""
from __future__ import annotations

import abc
import asyncio
import json
import tempfile
import time
import urllib.parse
from typing import Callable

from browsers.chromium import HEADLESS_FLAGS, chromium_path

from .manifest import TestItem
from .results import SubtestResult, TestResult, harness_status_name, subtest_status_name

# Beyond the harness's own timeout, for page load and for the harness to send its report.
GRACE_SECONDS = 5.0
CLOSE_SECONDS = 10.0
MAX_CONSOLE_LINES = 40
# What a test may leave in its origin (CDP Storage.StorageType), cleared after every test.
# Not "all": that would also name the shader cache; the HTTP and code caches are kept.
CLEARED_STORAGE = ",".join(["cookies", "file_systems", "indexeddb", "local_storage", "websql", "service_workers",
                            "cache_storage", "interest_groups", "shared_storage", "storage_buckets"])
# When V8 writes a wasm module's optimised code to the code cache. Its defaults (after 1 MB of
# optimised code, once no new code came for 2 s) suit long-lived pages; a test page lives a few
# seconds and may close before that, so each page ran Python's interpreter in baseline code
# again. Caching after every 20 KB of new optimised code makes the job's next pages start on
# the code its earlier pages optimised: a page's boot to a ready runtime 2.6 -> 1.2-1.4 s, a page
# 3.2 -> 1.9-2.3 s (wpt_runner/README.md, "Throughput"). Below ~20 KB the repeated serialising
# costs more than it saves. The cache is the one browsers keep across pages anyway; no state
# of a test reaches the next through it.
WASM_CACHING_JS_FLAGS = "--wasm-caching-threshold=20000 --wasm-caching-timeout-ms=0"


def chromium_flags(extra: list[str]) -> list[str]:
    """The job browser's command line: headless, the wasm caching flags, then `extra`. Chromium
    keeps only the last --js-flags, so one given in `extra` is joined to ours (V8 lets the later
    setting of a flag win)."""
    js_flags = [WASM_CACHING_JS_FLAGS]
    others = []
    for arg in extra:
        if arg.startswith("--js-flags="):
            js_flags.append(arg[len("--js-flags="):])
        else:
            others.append(arg)
    return HEADLESS_FLAGS + [f"--js-flags={' '.join(js_flags)}"] + others


class PageReports(abc.ABC):
    """One page's reports from the hook (assets/hook.js): subtests as they finish,
    then the harness's completion, which calls `finish`. How a finished outcome is
    handed over (a future, an event) is the subclass's."""

    def __init__(self) -> None:
        self.partial: list[SubtestResult] = []
        self.console: list[str] = []
        self.started = time.monotonic()
        # When the page's runtime was ready (the hook's "ready"): the runner's timer starts
        # again then, as the harness's does (assets/hook.js, runtimeReady).
        self.ready_at: float | None = None

    def deadline(self, timeout: float) -> float:
        """When the runner gives up on the page: `timeout` after its start or its runtime's boot."""
        return (self.ready_at or self.started) + timeout

    def timed_out(self, timeout: float) -> str:
        since = "its runtime was ready" if self.ready_at else "it started"
        return f"no result from the page within {timeout:g} s after {since} (harness timeout plus grace period)"

    @abc.abstractmethod
    def finish(self, status: str, message: str | None, subtests: list[SubtestResult] | None = None) -> None:
        """Record the test's outcome (the first one given wins); without `subtests`, those reported so far."""

    def on_message(self, message: dict) -> None:
        if message.get("type") == "result" and isinstance(message.get("test"), dict):
            self.partial.append(_subtest(message["test"]))
        elif message.get("type") == "ready" and self.ready_at is None:
            self.ready_at = time.monotonic()
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
        parts = urllib.parse.urlsplit(self.base_url)
        self.origin = f"{parts.scheme}://{parts.netloc}"
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
        from playwright.async_api import async_playwright

        results: list[TestResult] = []
        if not tests:
            return results
        queue: asyncio.Queue = asyncio.Queue()
        for item in tests:
            queue.put_nowait(item)
        async with async_playwright() as playwright:

            async def worker() -> None:
                job = _JobBrowser(self, playwright)
                try:
                    while not queue.empty():
                        item = queue.get_nowait()
                        result = await job.run_one(item)
                        results.append(result)
                        self.on_result(result)
                finally:
                    await job.close()

            await asyncio.gather(*(worker() for _ in range(min(self.jobs, len(tests)))))
        return sorted(results, key=lambda r: r.test)


class _JobBrowser:
    """One job's Chromium (a persistent profile in a temporary folder) and the test it runs.

    The profile's first tab stays on about:blank: the runner's CDP session lives there,
    so the test origin's storage can be cleared once the test's own tabs are gone."""

    def __init__(self, runner: Runner, playwright):
        self.runner = runner
        self.playwright = playwright
        self.context = None
        self.control = None
        self.cdp = None
        self.profile: tempfile.TemporaryDirectory | None = None
        self.page = None                          # the running test's own tab
        self.outcome: _PageOutcome | None = None  # and its outcome
        self.dead = False                         # the browser process died

    async def _start(self) -> None:
        runner = self.runner
        self.dead = False
        self.profile = tempfile.TemporaryDirectory(prefix="wpt-chromium-")
        self.context = await self.playwright.chromium.launch_persistent_context(
            self.profile.name, executable_path=chromium_path(), headless=True,
            args=chromium_flags(runner.chromium_args))
        self.control = self.context.pages[0] if self.context.pages else await self.context.new_page()
        self.cdp = await self.context.new_cdp_session(self.control)
        if runner.browser_version is None:
            product = (await self.cdp.send("Browser.getVersion")).get("product", "")
            runner.browser_version = product.split("/", 1)[-1] or product
        if runner.frame_script:
            await self.context.add_init_script(runner.frame_script)
        await self.context.expose_binding("__wptRunnerReport", self._report)
        if runner.allow_test_crash:
            await self.context.expose_binding("__wptRunnerTestCrash",
                                              lambda source: _crash(self.context, source["page"]))
        self.context.on("weberror", lambda error: self._log(f"uncaught (worker or page): {error.error}"))
        self.context.on("close", lambda *_: self._died())

    def _report(self, source, payload) -> None:
        # Only the test's own page reports: popups it opens have hooks too.
        if self.outcome is not None and self.page is not None and source["frame"] is self.page.main_frame:
            self.outcome.on_report(payload)

    def _log(self, line: str) -> None:
        if self.outcome is not None:
            self.outcome.log(line)

    def _died(self) -> None:
        self.dead = True
        if self.outcome is not None:
            self.outcome.finish("CRASH", "the browser process died")

    async def run_one(self, item: TestItem) -> TestResult:
        started = time.monotonic()
        outcome = self.outcome = _PageOutcome()
        timeout = item.timeout_seconds * self.runner.timeout_multiplier + GRACE_SECONDS
        try:
            if self.context is None:
                await self._start()
            page = self.page = await self.context.new_page()
            page.on("crash", lambda *_: outcome.finish("CRASH", "the renderer process crashed"))
            page.on("console", lambda msg: outcome.log(f"console.{msg.type}: {msg.text}")
                    if msg.type in ("error", "warning") else None)
            page.on("pageerror", lambda error: outcome.log(f"uncaught: {error}"))
            outcome.started = time.monotonic()
            navigation = asyncio.ensure_future(page.goto(self.runner.base_url + item.url, wait_until="commit",
                                                         timeout=timeout * 1000))
            navigation.add_done_callback(lambda task: _navigation_failed(task, outcome))
            try:
                status, message, subtests = await _outcome(outcome, timeout)
            except asyncio.TimeoutError:
                status, message, subtests = "TIMEOUT", outcome.timed_out(timeout), list(outcome.partial)
            if not navigation.done():
                navigation.cancel()
        except Exception as error:  # noqa: BLE001 - one test's trouble must not stop the run
            if not outcome.done.done():
                outcome.finish("CRASH" if self.dead else "ERROR", f"runner: {type(error).__name__}: {error}")
            status, message, subtests = outcome.done.result()
        finally:
            self.page = None
            self.outcome = None
            await self._clean_up()
        return TestResult(test=item.url, status=status, message=message, subtests=subtests,
                          duration_ms=int((time.monotonic() - started) * 1000), console=outcome.console)

    async def _clean_up(self) -> None:
        """Close the test's tabs and clear its origin's storage; a new browser if either fails."""
        if self.context is None:
            return
        if self.dead:
            await self.close()
            return
        try:
            for page in list(self.context.pages):
                if page is not self.control:
                    await asyncio.wait_for(page.close(), CLOSE_SECONDS)
            await asyncio.wait_for(self.cdp.send("Storage.clearDataForOrigin", {
                "origin": self.runner.origin, "storageTypes": CLEARED_STORAGE}), CLOSE_SECONDS)
        except Exception:  # noqa: BLE001 - a hung tab or a dead browser: start afresh
            await self.close()

    async def close(self) -> None:
        context, profile, self.context, self.profile = self.context, self.profile, None, None
        if context is not None:
            try:
                await asyncio.wait_for(context.close(), CLOSE_SECONDS)
            except Exception:  # noqa: BLE001 - a dead browser cannot be closed cleanly
                pass
        if profile is not None:
            profile.cleanup()


async def _outcome(outcome: _PageOutcome, timeout: float):
    """The page's outcome, or TimeoutError at its deadline (which moves once the runtime is ready)."""
    while True:
        remaining = outcome.deadline(timeout) - time.monotonic()
        if remaining <= 0:
            raise asyncio.TimeoutError
        try:
            return await asyncio.wait_for(asyncio.shield(outcome.done), min(remaining, 1.0))
        except asyncio.TimeoutError:
            continue


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
