"""Firefox: Debian's firefox-esr, driven over WebDriver BiDi.

Firefox's built-in remote agent (`--remote-debugging-port`) speaks the W3C
WebDriver BiDi protocol on a WebSocket, so no geckodriver is needed (none is
shipped by the registries reachable here) and no Playwright-patched build.
BiDi gives what the tests need: navigation that waits for load, script
evaluation that awaits promises, and `log.entryAdded` events carrying console
messages and uncaught errors of the page, its frames and its workers.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from typing import Any, Iterator

from . import processes
from .base import DEFAULT_TIMEOUT, Browser, ConsoleMessage, EvaluationError, Page, unavailable_reason
from .bidi import BiDiConnection, deserialize

# Preferences on top of the remote agent's own recommended automation set.
PREFS = {
    # Pyodide's boot and long graphs must never meet the "page is slowing down" stop.
    "dom.max_script_run_time": 0,
    "dom.max_chrome_script_run_time": 0,
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.page": 0,
    "browser.startup.homepage": "about:blank",
}


def firefox_path() -> str:
    path = os.environ.get("FIREFOX") or shutil.which("firefox-esr") or shutil.which("firefox")
    if not path:
        raise RuntimeError("no Firefox found: run ./dev setup (it installs Debian's firefox-esr) or set FIREFOX")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"FIREFOX={path} is not an executable")
    return path


def unavailable() -> str | None:
    return unavailable_reason(firefox_path)


class FirefoxPage(Page):
    def __init__(self, browser: "FirefoxBrowser", context: str) -> None:
        super().__init__()
        self._browser = browser
        self.context = context

    def goto(self, url: str) -> None:
        self._browser.bidi.command("browsingContext.navigate",
                                   {"context": self.context, "url": url, "wait": "complete"}, timeout=300)

    def evaluate(self, expression: str, timeout: float = DEFAULT_TIMEOUT) -> Any:
        answer = self._browser.bidi.command("script.evaluate", {
            "expression": expression, "target": {"context": self.context},
            "awaitPromise": True, "resultOwnership": "none"}, timeout=timeout)
        if answer["type"] == "exception":
            details = answer["exceptionDetails"]
            raise EvaluationError(details.get("text") or str(deserialize(details["exception"])))
        return deserialize(answer["result"])

    def click(self, selector: str) -> None:
        # input.performActions: move to the element's middle, press and release the left button.
        x, y = self.evaluate(
            f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
            " return [Math.round(r.left + r.width / 2), Math.round(r.top + r.height / 2)]; })()")
        mouse = {"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"}, "actions": [
            {"type": "pointerMove", "x": x, "y": y, "origin": "viewport", "duration": 0},
            {"type": "pointerDown", "button": 0}, {"type": "pointerUp", "button": 0}]}
        self._browser.bidi.command("input.performActions", {"context": self.context, "actions": [mouse]}, timeout=300)
        self._browser.bidi.command("input.releaseActions", {"context": self.context}, timeout=300)

    def close(self) -> None:
        self._browser.close_page(self)


class FirefoxBrowser(Browser):
    engine = "firefox"

    def __init__(self, bidi: BiDiConnection, version: str) -> None:
        self.bidi = bidi
        self.version = version
        self._pages: dict[str, FirefoxPage] = {}
        self._parents: dict[str, str | None] = {}       # frame context -> its parent
        self._lock = threading.Lock()
        bidi.on_event(self._on_event)
        bidi.command("session.subscribe", {"events": ["log.entryAdded", "browsingContext.contextCreated"]})

    def new_page(self) -> FirefoxPage:
        # A window, not a tab: only the front tab of a window is visible, and hidden pages
        # get no animation frames and throttled timers.
        context = self.bidi.command("browsingContext.create", {"type": "window"})["context"]
        page = FirefoxPage(self, context)
        with self._lock:
            self._pages[context] = page
        return page

    def close_page(self, page: FirefoxPage) -> None:
        with self._lock:
            self._pages.pop(page.context, None)
        self.bidi.command("browsingContext.close", {"context": page.context})

    def _top_level(self, context: str | None) -> str | None:
        while context is not None and self._parents.get(context) is not None:
            context = self._parents[context]
        return context

    def _on_event(self, method: str, params: dict) -> None:
        if method == "browsingContext.contextCreated":
            self._parents[params["context"]] = params.get("parent")
            return
        if method != "log.entryAdded":
            return
        with self._lock:
            page = self._pages.get(self._top_level(params.get("source", {}).get("context")))
            # Worker realms carry no browsing context: every open page hears them.
            pages = [page] if page else list(self._pages.values())
        for target in pages:
            if params.get("type") == "javascript":
                target.errors.append(params.get("text", ""))
            else:
                level = params.get("method") or params.get("level", "log")
                target.console.append(ConsoleMessage("warning" if level == "warn" else level, params.get("text", "")))


def _write_profile(profile: str, loopback_names: tuple[str, ...]) -> None:
    prefs = dict(PREFS)
    if loopback_names:
        prefs["network.dns.localDomains"] = ",".join(loopback_names)
    with open(os.path.join(profile, "user.js"), "w") as f:
        for name, value in prefs.items():
            f.write(f"user_pref({json.dumps(name)}, {json.dumps(value)});\n")


@contextlib.contextmanager
def launch(loopback_names: tuple[str, ...] = (), extra_args: tuple[str, ...] = ()) -> Iterator[FirefoxBrowser]:
    """Headless Firefox in a fresh profile; `loopback_names` resolve to 127.0.0.1."""
    with tempfile.TemporaryDirectory(prefix="webnn-firefox-") as profile:
        _write_profile(profile, loopback_names)
        process = subprocess.Popen(
            [firefox_path(), "--headless", "--no-remote", "--profile", profile, "--remote-debugging-port=0",
             *extra_args, "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            match = processes.read_until(process, process.stderr, r"WebDriver BiDi listening on (ws://\S+)", 120,
                                         "Firefox's remote agent")
            bidi = BiDiConnection(match.group(1) + "/session")
            try:
                session = bidi.command("session.new", {"capabilities": {"alwaysMatch": {
                    "unhandledPromptBehavior": {"default": "dismiss"}}}}, timeout=120)
                yield FirefoxBrowser(bidi, session["capabilities"]["browserVersion"])
            finally:
                with contextlib.suppress(Exception):
                    bidi.command("browser.close", timeout=30)
                bidi.close()
        finally:
            processes.stop(process, grace=30)
