"""The HTTP server: a WPT checkout as the web root on loopback, plus the runner's own URLs.

  /__wpt_runner__/hook.js            the result hook every test page loads first
  /__wpt_runner__/worker-ready.js    what a generated worker script imports after the polyfill
  /__wpt_runner__/report             (POST) the hook's reports, in engines without a Playwright binding
  /__wpt_runner__/webnn-polyfill.js  the polyfill, unless --polyfill-url
  /__wpt_runner__/runtime-<hash>/... its runtime as dist/ ships it, and pyodide-<hash>/... Pyodide's
                                     own files (runtime.py; `immutable`), or
  /__wpt_runner__/pyodide/...        build/pyodide with --runtime build (webnn_py.serve's files)
  /<path>                            files of the checkout; when none exists, the generated
                                     wrapper that WPT would serve there (see wrappers.py)

Plain HTTP on 127.0.0.1 is a secure context, so `.https.` tests run as they are.
Pages the checkout holds itself (`.html` tests and the frames they open) get the
hook and the polyfill inserted at the top; worker scripts the tests start
themselves get the polyfill imported first, recognised by the Sec-Fetch-Dest
header Chromium sends with every worker script request.
"""
from __future__ import annotations

import functools
import http.server
import json
import mimetypes
import re
import threading
import urllib.parse
from pathlib import Path
from typing import Callable

from webnn_py.serve import IMMUTABLE, BackgroundServer

from . import wrappers
from .runtime import ShippedRuntime

ASSETS = Path(__file__).parent / "assets"
_TYPES = {".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8",
          ".json": "application/json", ".html": "text/html; charset=utf-8", ".htm": "text/html; charset=utf-8",
          ".xhtml": "application/xhtml+xml", ".idl": "text/plain; charset=utf-8", ".txt": "text/plain; charset=utf-8",
          ".wasm": "application/wasm", ".css": "text/css", ".svg": "image/svg+xml", ".whl": "application/octet-stream",
          ".zip": "application/octet-stream", ".tflite": "application/octet-stream"}
_DOCTYPE = re.compile(rb"^\s*(<!doctype[^>]*>)?", re.IGNORECASE)
WORKER_DESTINATIONS = {"worker", "sharedworker", "serviceworker"}
DOCUMENT_DESTINATIONS = {"document", "iframe", "frame", "embed", "object"}


def content_type(path: Path) -> str:
    return _TYPES.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"


@functools.lru_cache(maxsize=64)
def _cached_runtime_file(path: str, mtime: float) -> bytes:
    # Every test page boots its own Pyodide: the same 20 MB are served hundreds of times.
    return Path(path).read_bytes()


def _polyfill_source() -> bytes:
    from webnn_py.serve import polyfill_source
    return polyfill_source()


def frame_init_script(polyfill_url: str, external: bool, source: bytes | None = None) -> str:
    """A browser-context init script giving the polyfill to the frames a test makes by
    script (`about:blank`, `about:srcdoc`): they are windows too, and with a native WebNN
    `iframe.contentWindow.navigator.ml` exists as soon as the frame does (WPT's
    detached-iframe tests use it at once), but the server never sees such a document.
    Chromium runs init scripts in them synchronously, before the test's next statement.
    `polyfill_url` must be absolute: an about:blank frame has no URL of its own for the
    shim to find its runtime from. `external`: the source is fetched from that URL
    (--polyfill-url) rather than `source` (the served entry script) or webnn_py's. `lazy` keeps a frame that never
    calls createContext() from booting Python."""
    if external:
        import urllib.request
        with urllib.request.urlopen(polyfill_url, timeout=30) as response:
            source = response.read().decode("utf-8")
    else:
        source = (source or _polyfill_source()).decode("utf-8")
    config = json.dumps({"baseURL": polyfill_url, "lazy": True})
    return ("(function () {\n"
            "  if (self === self.top || !/^about:(blank|srcdoc)$/.test(location.href)) return;\n"
            f"  self.webnnPolyfillConfig = Object.assign({config}, self.webnnPolyfillConfig);\n"
            f"{source}\n}})();\n")


def _runtime_dir() -> Path:
    from webnn_py.serve import RUNTIME_DIR
    return RUNTIME_DIR


def parse_headers_file(path: Path) -> list[tuple[str, str]]:
    """WPT's `<file>.headers` / `__dir__.headers`: one `Name: value` per line."""
    result = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if ":" in line:
            name, value = line.split(":", 1)
            result.append((name.strip(), value.strip()))
    return result


# wptserve's rewrites (tools/serve): URLs tests use that name another file of the checkout.
REWRITES = {"/resources/WebIDLParser.js": "/resources/webidl2/lib/webidl2.js"}


class ReportBoard:
    """Where the hook's POSTed reports go (`/__wpt_runner__/report`, Firefox and WebKit):
    the runner registers a listener per test URL while that test runs; a report
    for a page nobody waits for (a test that already finished) is dropped."""

    def __init__(self) -> None:
        self._listeners: dict[str, Callable[[dict], None]] = {}
        self._lock = threading.Lock()

    def listen(self, page: str, listener: Callable[[dict], None]) -> None:
        with self._lock:
            self._listeners[page] = listener

    def forget(self, page: str) -> None:
        with self._lock:
            self._listeners.pop(page, None)

    def deliver(self, body: bytes) -> bool:
        try:
            report = json.loads(body)
            page, message = report["page"], report["message"]
        except (ValueError, KeyError, TypeError):
            return False
        with self._lock:
            listener = self._listeners.get(page) if isinstance(page, str) else None
        if listener is None or not isinstance(message, dict):
            return False
        listener(message)
        return True


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive: a page fetches dozens of files
    root: Path = Path(".")
    reports: ReportBoard = ReportBoard()
    settings: wrappers.Settings = wrappers.Settings()
    runtime: ShippedRuntime | None = None     # None: the sources and build/pyodide
    log_requests: bool = False
    server_version = "wpt_runner"

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        if self.log_requests:
            super().log_message(format, *args)

    def do_GET(self) -> None:  # noqa: N802
        parsed = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(parsed.path)
        try:
            if path.startswith(wrappers.ASSET_PREFIX):
                self._serve_asset(path[len(wrappers.ASSET_PREFIX):], urllib.parse.parse_qs(parsed.query))
                return
            target = self._resolve(path)
            if (target is None or not target.is_file()) and path in REWRITES:
                target = self._resolve(REWRITES[path])
            if target is not None and target.is_file():
                self._serve_checkout_file(target)
                return
            generated = wrappers.generate(path, self.root, self.settings)
            if generated is not None:
                # Like wptserve's wrapper handlers: the source file's `.headers` (and
                # its folder's `__dir__.headers`) apply to every page and worker script
                # generated from it, e.g. the COOP/COEP pair a test needs for
                # SharedArrayBuffer. The generated resource keeps its own Content-Type.
                source = self.root / wrappers.route(path)[0].lstrip("/")
                extra = [(n, v) for n, v in self._file_headers(source) if n.lower() != "content-type"]
                self._send(200, generated[0], generated[1], extra=extra)
                return
            if path == "/favicon.ico":
                self._send(204, b"", "image/x-icon")   # browsers ask for it; a 404 would be console noise
                return
            if target is not None and target.is_dir() and (target / "index.html").is_file():
                self._serve_checkout_file(target / "index.html")
                return
            self._send(404, f"not found: {path}\n".encode(), "text/plain; charset=utf-8")
        except (BrokenPipeError, ConnectionResetError):
            pass   # the page went away (a test finished or was closed)

    do_HEAD = do_GET

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if urllib.parse.urlsplit(self.path).path == wrappers.REPORT_URL:
            delivered = self.reports.deliver(body)
            self._send(204 if delivered else 404, b"", "text/plain; charset=utf-8")
            return
        # Some tests POST to echo handlers WPT implements in Python; we have none.
        self._send(405, b"wpt_runner serves static files only\n", "text/plain; charset=utf-8")

    # ---- the runner's own files -----------------------------------------------------------

    def _serve_asset(self, name: str, query: dict[str, list[str]]) -> None:
        if name in ("hook.js", "worker-ready.js"):
            self._send(200, (ASSETS / name).read_bytes(), _TYPES[".js"])
        elif name == "webnn-polyfill.js":
            self._send(200, self.runtime.entry if self.runtime else _polyfill_source(), _TYPES[".js"])
        elif self.runtime and name in self.runtime.files:
            # The folder's name is the hash of its content: the file can never change.
            self._send(200, self.runtime.files[name], content_type(Path(name)), cache=IMMUTABLE)
        elif name == "worker-globals.js":
            self._send(200, wrappers.worker_globals_module(query), _TYPES[".js"])
        elif name.startswith("pyodide/"):
            base = _runtime_dir().resolve()
            target = (base / name[len("pyodide/"):]).resolve()
            if base not in target.parents or not target.is_file():
                self._send(404, b"not found\n", "text/plain")
                return
            body = _cached_runtime_file(str(target), target.stat().st_mtime)
            self._send(200, body, content_type(target), cache="max-age=3600")
        else:
            self._send(404, b"not found\n", "text/plain")

    # ---- the checkout ---------------------------------------------------------------------

    def _resolve(self, path: str) -> Path | None:
        root = self.root
        target = (root / path.lstrip("/")).resolve()
        if target != root and root not in target.parents:
            return None
        return target

    def _serve_checkout_file(self, target: Path) -> None:
        body = target.read_bytes()
        kind = content_type(target)
        destination = self.headers.get("Sec-Fetch-Dest")
        if kind.startswith("text/html") and (destination is None or destination in DOCUMENT_DESTINATIONS):
            body = self._inject_into_page(body)
        elif target.suffix == ".js" and destination in WORKER_DESTINATIONS and self.settings.inject_polyfill:
            body = self._inject_into_worker(body)
        headers = self._file_headers(target)
        if any(name.lower() == "content-type" for name, _ in headers):
            kind = next(value for name, value in headers if name.lower() == "content-type")
            headers = [(n, v) for n, v in headers if n.lower() != "content-type"]
        self._send(200, body, kind, extra=headers)

    @staticmethod
    def _file_headers(target: Path) -> list[tuple[str, str]]:
        """The extra response headers WPT declares for `target`: its folder's
        `__dir__.headers`, then its own `<name>.headers`."""
        headers = []
        for candidate in (target.parent / "__dir__.headers", target.with_name(target.name + ".headers")):
            if candidate.is_file():
                headers += parse_headers_file(candidate)
        return headers

    def _inject_into_page(self, body: bytes) -> bytes:
        tags = f'<script src="{self.settings.hook_url()}"></script>'
        if self.settings.inject_polyfill:
            tags += f'<script src="{self.settings.polyfill_url}"></script>'
        match = _DOCTYPE.match(body)
        end = match.end() if match else 0
        return body[:end] + b"\n" + tags.encode() + body[end:]

    def _inject_into_worker(self, body: bytes) -> bytes:
        # Module worker scripts are fetched in "cors" mode, classic ones in "same-origin".
        url = self.settings.polyfill_url.encode()
        if self.headers.get("Sec-Fetch-Mode") == "cors":
            return b'import "' + url + b'";\n' + body
        return b'importScripts("' + url + b'");\n' + body

    def _send(self, code: int, body: bytes, kind: str, cache: str = "no-cache",
              extra: list[tuple[str, str]] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", cache)
        # The polyfill may be loaded by pages of another origin (an external --polyfill-url setup).
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Cross-Origin-Resource-Policy", "cross-origin")
        for name, value in extra or []:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def handle_error(self, request, client_address) -> None:
        # Closing a finished test's page drops its keep-alive connections mid-read:
        # routine, not worth a traceback.
        import sys
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class WptServer(BackgroundServer):
    """The checkout on 127.0.0.1 in a background thread."""

    def __init__(self, root: str | Path, settings: wrappers.Settings, port: int = 0, log_requests: bool = False,
                 runtime: ShippedRuntime | None = None):
        self.reports = ReportBoard()
        handler = type("BoundHandler", (Handler,), {"root": Path(root).resolve(), "settings": settings,
                                                    "log_requests": log_requests, "reports": self.reports,
                                                    "runtime": runtime})
        super().__init__(_Server(("127.0.0.1", port), handler), thread_name="wpt-server")
