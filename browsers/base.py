"""The interface every engine implements: a Browser opens Pages; a Page navigates,
evaluates script (awaiting promises) and collects the page's uncaught errors and
console messages. Callers (tests, the demo, benchmarks) see only this."""
from __future__ import annotations

import abc
import json
from dataclasses import dataclass
from typing import Any

ENGINES = ("chromium", "firefox", "webkit")

# Seconds an evaluate() may wait for its promise: Pyodide boots in 3-25 s on a
# loaded machine, idlharness and the demo take minutes there.
DEFAULT_TIMEOUT = 600.0


def unavailable_reason(find_binary) -> str | None:
    """None when `find_binary()` finds the engine, else the RuntimeError's message."""
    try:
        find_binary()
    except RuntimeError as exc:
        return str(exc)
    return None


class EvaluationError(Exception):
    """The evaluated expression threw, or its promise rejected (the page's own error)."""


@dataclass(frozen=True)
class ConsoleMessage:
    level: str      # "log", "info", "warning", "error", "debug"
    text: str


class Page(abc.ABC):
    """One tab. `errors` holds the page's uncaught exceptions and unhandled
    rejections, `console` its console messages, in arrival order."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.console: list[ConsoleMessage] = []

    @abc.abstractmethod
    def goto(self, url: str) -> None:
        """Navigate and wait for the load event."""

    @abc.abstractmethod
    def evaluate(self, expression: str, timeout: float = DEFAULT_TIMEOUT) -> Any:
        """The JSON-like value of a JavaScript expression, awaited if it is a promise.
        Raises EvaluationError when it throws or rejects, TimeoutError after `timeout`."""

    @abc.abstractmethod
    def close(self) -> None:
        """Close the tab."""

    @abc.abstractmethod
    def click(self, selector: str) -> None:
        """A real (trusted) left click in the middle of the first element `selector`
        matches, through the engine's input automation, not a script-made event."""

    def wait_for(self, expression: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Wait until `expression` is truthy, polling inside the page (one round trip)."""
        budget_ms = int(timeout * 1000)
        ready = self.evaluate(
            "new Promise((resolve, reject) => { const start = performance.now();"
            " (function poll() { let v; try { v = (" + expression + "); } catch (e) { return reject(e); }"
            f" if (v) return resolve(true); if (performance.now() - start > {budget_ms}) return resolve(false);"
            " setTimeout(poll, 50); })(); })", timeout=timeout + 30)
        if not ready:
            raise TimeoutError(f"{expression} still false after {timeout:.0f} s")

    def text(self, selector: str) -> str:
        """The rendered text (innerText) of the first element `selector` matches."""
        return self.evaluate(f"document.querySelector({json.dumps(selector)}).innerText")

    def __enter__(self) -> "Page":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Browser(abc.ABC):
    """A running engine; `version` is its product version (e.g. "153.7.0")."""

    engine: str
    version: str

    @abc.abstractmethod
    def new_page(self) -> Page:
        """A new tab that shares this browser's profile."""
