"""The one browser layer: the tests, the demo, wpt_runner and the benchmarks open
Chromium, Firefox and WebKit through `launch(engine)` and the Browser/Page
interface of base.py, one implementation per engine:

    chromium  Debian's chromium through Playwright (executable_path)
    firefox   Debian's firefox-esr through its built-in WebDriver BiDi agent
    webkit    WebKitGTK's MiniBrowser through WebKitWebDriver (classic W3C WebDriver), on Xvfb
"""
from __future__ import annotations

import contextlib
import importlib
from typing import Iterator

from .base import DEFAULT_TIMEOUT, ENGINES, Browser, ConsoleMessage, EvaluationError, Page

__all__ = ["DEFAULT_TIMEOUT", "ENGINES", "Browser", "ConsoleMessage", "EvaluationError", "Page", "launch",
           "unavailable"]


def _module(engine: str):
    if engine not in ENGINES:
        raise ValueError(f"unknown browser engine {engine!r}: expected one of {', '.join(ENGINES)}")
    return importlib.import_module(f".{engine}", __name__)


def unavailable(engine: str) -> str | None:
    """Why `engine` cannot be launched on this machine, or None when it can."""
    return _module(engine).unavailable()


@contextlib.contextmanager
def launch(engine: str = "chromium", *, loopback_names: tuple[str, ...] = (),
           extra_args: tuple[str, ...] = ()) -> Iterator[Browser]:
    """Start `engine` headless in a fresh profile and close it afterwards.

    loopback_names: host names that resolve to 127.0.0.1 in this browser (a
    non-secure origin for tests, since 127.0.0.1 itself is a secure context).
    extra_args: the engine's own command-line switches.
    """
    with _module(engine).launch(loopback_names=tuple(loopback_names), extra_args=tuple(extra_args)) as browser:
        yield browser
