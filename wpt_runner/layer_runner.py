"""Drive Firefox or WebKit through the tests, through the browser layer (browsers/).

Neither engine's automation (WebDriver BiDi, classic WebDriver) has Playwright's
bindings or init scripts, so the page's hook posts its reports to the runner's
own server (`/__wpt_runner__/report`, server.ReportBoard) and the runner only
opens tabs and navigates them. One browser per job (classic WebDriver runs one
command at a time per session, and a page stuck in a loop can hold it), a new
tab per test in that browser, as wptrunner reuses one browser and profile. The
tab is navigated by a script task rather than the driver's navigation command,
which would wait for the load event a hung page never reaches.

Outcomes: the harness's report; the runner's own timer (harness timeout plus a
grace period: TIMEOUT, keeping the subtests already reported); a browser that
stops answering its driver is CRASH for that test and is relaunched for the rest.
A renderer crash in these engines shows up as a TIMEOUT (no crash event here).
"""
from __future__ import annotations

import contextlib
import json
import queue
import threading
import time
from typing import Callable

import browsers

from .manifest import TestItem
from .results import SubtestResult, TestResult
from .runner import GRACE_SECONDS, PageReports
from .server import ReportBoard

# Driver commands that should answer at once (opening, closing, starting a navigation).
COMMAND_SECONDS = 60.0


class _ThreadOutcome(PageReports):
    """Reports arrive on the server's threads; `wait` blocks the job's thread."""

    def __init__(self) -> None:
        super().__init__()
        self._done = threading.Event()
        self._lock = threading.Lock()
        self.outcome: tuple[str, str | None, list[SubtestResult]] | None = None

    def finish(self, status: str, message: str | None, subtests: list[SubtestResult] | None = None) -> None:
        with self._lock:
            if self.outcome is None:
                self.outcome = (status, message, subtests if subtests is not None else list(self.partial))
                self._done.set()

    def on_message(self, message: dict) -> None:
        with self._lock:
            if self.outcome is not None:
                return
        super().on_message(message)

    def wait(self, timeout: float) -> bool:
        """Whether the outcome came before the deadline (which moves once the runtime is ready)."""
        while True:
            remaining = self.deadline(timeout) - time.monotonic()
            if remaining <= 0:
                return self._done.is_set()
            if self._done.wait(min(remaining, 1.0)):
                return True


class LayerRunner:
    """The same contract as runner.Runner (`run(tests)`, `browser_version`) for
    an engine of the browser layer other than Chromium."""

    def __init__(self, engine: str, base_url: str, reports: ReportBoard, jobs: int = 1,
                 timeout_multiplier: float = 1.0, on_result: Callable[[TestResult], None] | None = None):
        self.engine = engine
        self.base_url = base_url.rstrip("/")
        self.reports = reports
        self.jobs = max(1, jobs)
        self.timeout_multiplier = timeout_multiplier
        self.on_result = on_result or (lambda result: None)
        self.browser_version: str | None = None
        self._results_lock = threading.Lock()

    def run(self, tests: list[TestItem]) -> list[TestResult]:
        pending: queue.SimpleQueue = queue.SimpleQueue()
        for item in tests:
            pending.put(item)
        results: list[TestResult] = []
        threads = [threading.Thread(target=self._job, args=(pending, results), name=f"wpt-{self.engine}-{n}")
                   for n in range(min(self.jobs, len(tests)))]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                thread.join()
        except KeyboardInterrupt:
            # Ctrl-C: each job finishes its page and closes its browser; nothing new starts.
            while not pending.empty():
                pending.get_nowait()
            for thread in threads:
                thread.join()
            raise
        return sorted(results, key=lambda r: r.test)

    def _job(self, pending: queue.SimpleQueue, results: list[TestResult]) -> None:
        running = contextlib.ExitStack()
        browser = None
        try:
            while True:
                try:
                    item = pending.get_nowait()
                except queue.Empty:
                    return
                if browser is None:
                    running = contextlib.ExitStack()
                    try:
                        browser = running.enter_context(browsers.launch(self.engine))
                        self.browser_version = browser.version
                    except Exception as error:  # noqa: BLE001 - reported as this test's result
                        self._record(results, TestResult(test=item.url, status="CRASH",
                                                         message=f"runner: {self.engine} did not start: {error}"))
                        continue
                result, healthy = self._run_one(browser, item)
                self._record(results, result)
                if not healthy:
                    browser = None
                    with contextlib.suppress(Exception):   # a browser that stopped answering
                        running.close()
        finally:
            with contextlib.suppress(Exception):
                running.close()

    def _record(self, results: list[TestResult], result: TestResult) -> None:
        with self._results_lock:   # on_result prints: one line at a time
            results.append(result)
            self.on_result(result)

    def _run_one(self, browser, item: TestItem) -> tuple[TestResult, bool]:
        """The test's result, and whether the browser still answers."""
        started = time.monotonic()
        outcome = _ThreadOutcome()
        timeout = item.timeout_seconds * self.timeout_multiplier + GRACE_SECONDS
        healthy = True
        page = None
        self.reports.listen(item.url, outcome.on_message)
        try:
            page = browser.new_page()
            outcome.started = time.monotonic()
            page.evaluate(f"void setTimeout(() => location.assign({json.dumps(self.base_url + item.url)}), 0)",
                          timeout=COMMAND_SECONDS)
            if not outcome.wait(timeout):
                outcome.finish("TIMEOUT", outcome.timed_out(timeout))
        except Exception as error:  # noqa: BLE001 - one test's trouble must not stop the run
            healthy = False
            outcome.finish("CRASH", f"runner: the browser stopped answering: {type(error).__name__}: {error}")
        finally:
            self.reports.forget(item.url)
        if page is not None:
            for line in page.errors:
                outcome.log(f"uncaught: {line}")
            for message in page.console:
                if message.level in ("error", "warning"):
                    outcome.log(f"console.{message.level}: {message.text}")
            if healthy:
                try:
                    page.close()
                except Exception:  # noqa: BLE001 - a page still running a loop may hold the driver
                    healthy = False
        status, message, subtests = outcome.outcome
        return (TestResult(test=item.url, status=status, message=message, subtests=subtests,
                           duration_ms=int((time.monotonic() - started) * 1000), console=outcome.console),
                healthy)
