"""WebKit: WebKitGTK's MiniBrowser (Debian's libwebkit2gtk-4.1), driven by
WebKitWebDriver over classic W3C WebDriver, on an Xvfb display of its own.

WebKitGTK 2.50's driver has no WebDriver BiDi (a session asking for
`webSocketUrl` is refused) and MiniBrowser's console-to-stdout setting does not
apply to the views automation creates, so console messages and uncaught errors
are gathered by a collector injected into the page: after every navigation and
again with every evaluation, whose answer carries what was collected since.
It sees the top-level document only, from its load event on; errors in
workers, in frames or during the first parse surface through the page's own
results (the test pages report them) rather than in `Page.errors`.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any, Callable, Iterator

from . import processes
from .base import DEFAULT_TIMEOUT, Browser, ConsoleMessage, EvaluationError, Page
from .loopback_proxy import LoopbackProxy
from .webdriver import WebDriverError, WebDriverSession, request

COLLECTOR = """(() => {
  if (window.__webnnPyCollected) return;
  const collected = window.__webnnPyCollected = {errors: [], console: []};
  addEventListener("error", e => collected.errors.push(e.error !== undefined ? String(e.error) : e.message));
  addEventListener("unhandledrejection", e => collected.errors.push("Unhandled Promise Rejection: " + String(e.reason)));
  for (const method of ["log", "info", "warn", "error", "debug"]) {
    const original = console[method];
    console[method] = function (...args) {
      collected.console.push([method === "warn" ? "warning" : method, args.map(String).join(" ")]);
      return original.apply(this, args);
    };
  }
})();"""

# The script of "execute async script" (its last argument is the callback). The value
# travels as a JSON string, so every engine returns the same Python value for it.
EVALUATE = """const done = arguments[arguments.length - 1];
%s
const drain = () => ({errors: window.__webnnPyCollected.errors.splice(0),
                      console: window.__webnnPyCollected.console.splice(0)});
const tagged = (key, v) => typeof v === "bigint" ? {__webnnPyBigInt: String(v)}
  : typeof v === "number" && (!Number.isFinite(v) || Object.is(v, -0)) ? {__webnnPyNumber: Object.is(v, -0) ? "-0" : String(v)} : v;
Promise.resolve().then(() => (%s)).then(
  value => done({ok: true, json: JSON.stringify(value === undefined ? null : value, tagged), ...drain()}),
  failure => done({ok: false, failure: String(failure), ...drain()}));"""


# The key of a web element reference (W3C WebDriver §12.1).
ELEMENT_KEY = "element-6066-11e4-a52e-4f735466cecf"


def _untag(obj: dict) -> Any:
    """JSON cannot carry bigints, NaN, ±Infinity or -0: EVALUATE tags them."""
    if "__webnnPyBigInt" in obj:
        return int(obj["__webnnPyBigInt"])
    if "__webnnPyNumber" in obj:
        return float(obj["__webnnPyNumber"].replace("Infinity", "inf"))
    return obj


def minibrowser_path() -> Path:
    """WEBKIT_MINIBROWSER, or the MiniBrowser in libwebkit2gtk-4.1's libexec folder."""
    if os.environ.get("WEBKIT_MINIBROWSER"):
        return Path(os.environ["WEBKIT_MINIBROWSER"])
    found = sorted(Path("/usr/lib").glob("*/webkit2gtk-4.1/MiniBrowser"))
    return found[0] if found else Path("/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser")


def unavailable() -> str | None:
    missing = [name for name, found in [("WebKitWebDriver", shutil.which("WebKitWebDriver")),
                                        (str(minibrowser_path()), minibrowser_path().is_file()),
                                        ("Xvfb", shutil.which("Xvfb"))] if not found]
    if missing:
        return f"WebKitGTK not installed ({', '.join(missing)} missing): run ./dev setup"
    return None


class WebKitPage(Page):
    def __init__(self, browser: "WebKitBrowser", handle: str) -> None:
        super().__init__()
        self._browser = browser
        self.handle = handle

    def goto(self, url: str) -> None:
        self._browser.call(self, "POST", "/url", {"url": url}, timeout=300)
        self._browser.call(self, "POST", "/execute/sync", {"script": COLLECTOR, "args": []})

    def evaluate(self, expression: str, timeout: float = DEFAULT_TIMEOUT) -> Any:
        self._browser.set_script_timeout(timeout)
        try:
            answer = self._browser.call(self, "POST", "/execute/async",
                                        {"script": EVALUATE % (COLLECTOR, expression), "args": []},
                                        timeout=timeout + 30)
        except WebDriverError as exc:
            if exc.error == "script timeout":
                raise TimeoutError(f"{expression} did not settle within {timeout:.0f} s") from None
            if exc.error == "javascript error":
                raise EvaluationError(str(exc).split(": ", 1)[1]) from None
            raise
        self.errors.extend(answer["errors"])
        self.console.extend(ConsoleMessage(level, text) for level, text in answer["console"])
        if not answer["ok"]:
            raise EvaluationError(answer["failure"])
        return json.loads(answer["json"], object_hook=_untag)

    def click(self, selector: str) -> None:
        # Element Click, not Perform Actions: MiniBrowser never delivers the latter to a
        # tab in the background (the command hangs), while Element Click reaches it
        # with the same trusted mouse events.
        element = self._browser.call(self, "POST", "/element", {"using": "css selector", "value": selector})
        self._browser.call(self, "POST", f"/element/{element[ELEMENT_KEY]}/click", {}, timeout=300)

    def close(self) -> None:
        self._browser.close_page(self)


class WebKitBrowser(Browser):
    engine = "webkit"

    def __init__(self, start_session: Callable[[], WebDriverSession]) -> None:
        self._start_session = start_session
        self._use(start_session())

    def _use(self, session: WebDriverSession) -> None:
        self.session = session
        self.version = session.capabilities.get("browserVersion", "")
        # The first window stays open, unused: WebDriver commands (New Window among them)
        # need a current window, and a closed page's no longer is one.
        self._home = self._current = session.call("GET", "/window")
        self._script_timeout: float | None = None

    def new_page(self) -> WebKitPage:
        # A window, not a tab: MiniBrowser shows only its first tab, and a hidden page
        # gets no animation frames and timers throttled to several per second.
        try:
            handle = self.session.call("POST", "/window/new", {"type": "window"})["handle"]
        except WebDriverError as exc:
            if exc.error != "invalid session id":
                raise
            # WebKitWebDriver ends the session when a page crashes or hangs ("session deleted
            # because of page crash or hang"; once in a whole-suite run at load ~8): a new
            # MiniBrowser, so that the crash costs the pages it took, not every later page.
            self._use(self._start_session())
            handle = self.session.call("POST", "/window/new", {"type": "window"})["handle"]
        return WebKitPage(self, handle)

    def call(self, page: WebKitPage, method: str, path: str, body: dict | None = None, timeout: float = 60.0) -> Any:
        """A command in `page`'s window (classic WebDriver has one current window)."""
        if self._current != page.handle:
            self.session.call("POST", "/window", {"handle": page.handle})
            self._current = page.handle
        return self.session.call(method, path, body, timeout=timeout)

    def set_script_timeout(self, seconds: float) -> None:
        if self._script_timeout != seconds:
            self.session.call("POST", "/timeouts", {"script": int(seconds * 1000)})
            self._script_timeout = seconds

    def close_page(self, page: WebKitPage) -> None:
        self.call(page, "DELETE", "/window")
        self.session.call("POST", "/window", {"handle": self._home})
        self._current = self._home


@contextlib.contextmanager
def _xvfb() -> Iterator[str]:
    """A private X display; yields its DISPLAY value."""
    process = subprocess.Popen(["Xvfb", "-displayfd", "1", "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        display = processes.read_until(process, process.stdout, r"^(\d+)\s*$", 30, "Xvfb").group(1)
        yield f":{display}"
    finally:
        processes.stop(process)


SESSION_ATTEMPTS = 2


def _start_session(stack: contextlib.ExitStack, display: str, capabilities: dict) -> WebDriverSession:
    """WebKitWebDriver on `display` and a MiniBrowser session through it (the driver's stop
    goes on `stack`). On a loaded machine a MiniBrowser now and then never answers its
    driver (`POST /session` timed out after 120 s once in three whole-suite runs at load
    ~10): that driver and its browser (one process group) are killed and started again,
    SESSION_ATTEMPTS times in all."""
    attempt = 0
    while True:
        attempt += 1
        port = processes.free_port()
        driver = subprocess.Popen(["WebKitWebDriver", f"--port={port}"], env={**os.environ, "DISPLAY": display},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        base_url = f"http://127.0.0.1:{port}"

        def ready() -> bool:
            with contextlib.suppress(OSError):
                return bool(request(base_url, "GET", "/status", timeout=5).get("ready"))
            return False

        try:
            processes.wait_until(ready, 60, "WebKitWebDriver")
            session = WebDriverSession(base_url, {"alwaysMatch": capabilities})
        except (OSError, RuntimeError):   # socket timeouts are OSErrors; wait_until raises RuntimeError
            with contextlib.suppress(ProcessLookupError):
                os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
            if attempt == SESSION_ATTEMPTS:
                raise
            continue
        stack.callback(processes.stop, driver)
        return session


@contextlib.contextmanager
def launch(loopback_names: tuple[str, ...] = (), extra_args: tuple[str, ...] = ()) -> Iterator[WebKitBrowser]:
    """MiniBrowser under WebKitWebDriver; `loopback_names` reach 127.0.0.1 through a
    local forwarding proxy (WebKitGTK has no host-resolver switch)."""
    with contextlib.ExitStack() as stack:
        display = stack.enter_context(_xvfb())
        capabilities: dict = {"webkitgtk:browserOptions": {"binary": str(minibrowser_path()),
                                                           "args": ["--automation", *extra_args]},
                              "pageLoadStrategy": "normal"}
        if loopback_names:
            proxy = stack.enter_context(LoopbackProxy(loopback_names))
            # No "noProxy" list: with one, MiniBrowser 2.50 now and then dies at start-up
            # (a segfault in strlen, ~1 launch in 7 at load 2) and WebKitWebDriver waits for
            # it forever; both attempts of _start_session failed that way in one CI run.
            # The proxy forwards 127.0.0.1 and localhost itself.
            capabilities["proxy"] = {"proxyType": "manual", "httpProxy": f"127.0.0.1:{proxy.port}"}
        sessions: list[WebDriverSession] = []

        def start_session() -> WebDriverSession:
            sessions.append(_start_session(stack, display, capabilities))
            return sessions[-1]

        try:
            yield WebKitBrowser(start_session)
        finally:
            for session in sessions:
                with contextlib.suppress(Exception):
                    session.end()
