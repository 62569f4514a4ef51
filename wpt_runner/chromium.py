"""Launch Debian's Chromium headless through Playwright.

`playwright install` cannot download a browser here, so Playwright drives the
system Chromium via `executable_path`. The flags keep Chromium off the
network (this machine has none) and out of the user's profile.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from typing import Iterator

HEADLESS_FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def chromium_path() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        raise RuntimeError("no Chromium found: run ./dev setup (it installs Debian's chromium) or set CHROMIUM")
    return path


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
