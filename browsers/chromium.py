"""Chromium: Debian's build, driven by Playwright.

`playwright install` cannot download a browser here, so Playwright drives the
system Chromium via `executable_path`. The flags keep Chromium off the
network (this machine has none) and out of the user's profile.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from typing import Any, Iterator

from .base import DEFAULT_TIMEOUT, Browser, ConsoleMessage, EvaluationError, Page, unavailable_reason

HEADLESS_FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def chromium_path() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        raise RuntimeError("no Chromium found: run ./dev setup (it installs Debian's chromium) or set CHROMIUM")
    return path


def unavailable() -> str | None:
    return unavailable_reason(chromium_path)


@contextlib.contextmanager
def launch_chromium(extra_args: list[str] | None = None) -> Iterator[object]:
    """Yield a Playwright BrowserContext in a fresh profile directory."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="webnn-chromium-") as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=chromium_path(),
            headless=True,
            args=HEADLESS_FLAGS + list(extra_args or []),
        )
        try:
            yield context
        finally:
            context.close()


@contextlib.asynccontextmanager
async def launch_chromium_async(extra_args: list[str] | None = None):
    """Yield a Playwright (async API) Browser: one browser, a new context per test.

    Unlike launch_chromium's single persistent context, separate contexts give
    every test its own storage (service worker registrations included) and its
    own renderer process, so a page that hangs or crashes takes no other test with it.
    """
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=chromium_path(),
            headless=True,
            args=HEADLESS_FLAGS + list(extra_args or []),
        )
        try:
            yield browser
        finally:
            await browser.close()


class ChromiumPage(Page):
    def __init__(self, playwright_page) -> None:
        super().__init__()
        self.playwright_page = playwright_page      # for Chromium-only tests (clicks, CDP)
        playwright_page.on("pageerror", lambda error: self.errors.append(str(error)))
        playwright_page.on("console", lambda msg: self.console.append(ConsoleMessage(msg.type, msg.text)))

    def goto(self, url: str) -> None:
        self.playwright_page.goto(url)

    def evaluate(self, expression: str, timeout: float = DEFAULT_TIMEOUT) -> Any:
        from playwright.sync_api import Error

        # Playwright's evaluate has no timeout of its own: race the expression.
        raced = (f"Promise.race([Promise.resolve().then(() => ({expression})), new Promise((_, reject) =>"
                 f" setTimeout(() => reject(new Error('__webnn_py_timeout__')), {int(timeout * 1000)}))])")
        try:
            return self.playwright_page.evaluate(raced)
        except Error as exc:
            if "__webnn_py_timeout__" in str(exc):
                raise TimeoutError(f"{expression} did not settle within {timeout:.0f} s") from None
            raise EvaluationError(str(exc).splitlines()[0].removeprefix("Page.evaluate: ")) from None

    def click(self, selector: str) -> None:
        self.playwright_page.click(selector)

    def close(self) -> None:
        self.playwright_page.close()


class ChromiumBrowser(Browser):
    engine = "chromium"

    def __init__(self, context) -> None:
        self.playwright_context = context
        # A persistent context has no Browser object to ask.
        line = subprocess.run([chromium_path(), "--version"], capture_output=True, text=True, timeout=30).stdout
        self.version = (re.search(r"\d+(\.\d+)+", line) or re.search(".*", line)).group(0)

    def new_page(self) -> ChromiumPage:
        return ChromiumPage(self.playwright_context.new_page())


@contextlib.contextmanager
def launch(loopback_names: tuple[str, ...] = (), extra_args: tuple[str, ...] = ()) -> Iterator[ChromiumBrowser]:
    args = list(extra_args)
    if loopback_names:
        args.append("--host-resolver-rules=" + ", ".join(f"MAP {name} 127.0.0.1" for name in loopback_names))
    with launch_chromium(args) as context:
        yield ChromiumBrowser(context)
