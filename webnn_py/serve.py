"""Serve the polyfill and its runtime on loopback: `python -m webnn_py.serve [--port P] [--root DIR]`.

URL layout (the shim finds the runtime relative to its own URL):
  /webnn-polyfill.js   the shim with the generated WebIDL metadata prepended (from the sources)
  /pyodide/...         the Pyodide runtime, numpy and the webnn_py wheel (./dev setup builds it)
  /dist/...            dist/ (./dev dist builds it) with the headers a good static host sends:
                       `immutable` for its content-hashed files, `no-cache` (revalidated by
                       ETag / Last-Modified) for the entry script, .br/.gz copies chosen by Accept-Encoding
  /...                 files under --root, if given (pages that use the polyfill),
                       and any extra URL-prefix mounts the tests ask for

Only the polyfill's own files (the three first routes) carry CORS and CORP headers, so
pages of any origin, cross-origin isolated ones included, can include the script, while
the developer's --root folder stays unreadable to other sites. Paths are percent-decoded;
a path with a dotfile or dot-folder in it is never served.
"""
from __future__ import annotations

import argparse
import email.utils
import http.server
import mimetypes
import os
import re
import threading
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHIM_DIR = REPO / "js_shim"
RUNTIME_DIR = Path(os.environ.get("WEBNN_PY_RUNTIME", REPO / "build" / "pyodide"))
DIST_DIR = REPO / "dist"
POLYFILL_PATH = "/webnn-polyfill.js"
RUNTIME_PREFIX = "/pyodide/"
DIST_PREFIX = "/dist/"
# Headers that let a page of another origin (cross-origin isolated too) use a file.
CROSS_ORIGIN_HEADERS = {"Access-Control-Allow-Origin": "*", "Cross-Origin-Resource-Policy": "cross-origin"}
# dist/'s files whose names carry a content hash (tools/build_dist.py): cacheable for good.
HASHED_DIST_PATH = re.compile(r"(runtime|pyodide)-[0-9a-f]{16}/")
IMMUTABLE = "public, max-age=31536000, immutable"
# Precompressed copies beside dist/'s files, in order of preference.
ENCODINGS = (("br", ".br"), ("gzip", ".gz"))

_TYPES = {".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript",
          ".json": "application/json", ".whl": "application/octet-stream", ".zip": "application/octet-stream",
          ".html": "text/html; charset=utf-8", ".idl": "text/plain; charset=utf-8"}


def content_type(path: Path) -> str:
    return _TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"


def accepted_encodings(header: str) -> set[str]:
    """The codings an Accept-Encoding header accepts (RFC 9110 §12.5.3; q=0 refuses one)."""
    accepted = set()
    for item in header.split(","):
        name, *params = [piece.strip() for piece in item.split(";")]
        q = next((p.split("=", 1)[1] for p in params if p.replace(" ", "").lower().startswith("q=")), "1")
        try:
            refused = float(q) <= 0
        except ValueError:
            refused = True
        if name and not refused:
            accepted.add(name.lower())
    return accepted


def polyfill_source() -> bytes:
    """The script pages include: generated metadata first, then the shim."""
    parts = [SHIM_DIR / "generated" / "webidl_metadata.js", SHIM_DIR / "webnn-polyfill.js"]
    return b"\n".join(p.read_bytes() for p in parts)


class Handler(http.server.SimpleHTTPRequestHandler):
    """Static files from a few places; no directory listings, no dotfiles."""

    root: Path | None = None
    dist: Path = DIST_DIR
    mounts: dict[str, Path] = {}
    extra_headers: dict[str, str] = {}
    _response_headers: dict[str, str] = {}   # per response, set by do_GET / send_error

    def end_headers(self) -> None:
        for key, value in self._response_headers.items():
            self.send_header(key, value)
        for key, value in self.extra_headers.items():
            self.send_header(key, value)
        super().end_headers()

    def do_GET(self) -> None:  # noqa: N802
        self._response_headers = {"Cache-Control": "no-cache"}
        try:
            path = urllib.parse.unquote(self.path.split("?", 1)[0].split("#", 1)[0], errors="strict")
        except UnicodeDecodeError:
            self.send_error(404)   # not UTF-8: names no file
            return
        if "\0" in path or any(part.startswith(".") for part in path.split("/")):
            self.send_error(404)   # dotfiles (and "..") are never served
            return
        if path == POLYFILL_PATH:
            self._response_headers.update(CROSS_ORIGIN_HEADERS)
            self._send_bytes(polyfill_source(), "text/javascript")
            return
        if path.startswith(RUNTIME_PREFIX):
            self._response_headers.update(CROSS_ORIGIN_HEADERS)
            self._send_file(RUNTIME_DIR, path[len(RUNTIME_PREFIX):])
            return
        if path.startswith(DIST_PREFIX):
            self._send_dist(path[len(DIST_PREFIX):])
            return
        for prefix, target in sorted(self.mounts.items(), key=lambda m: -len(m[0])):
            if target.is_file() and path == prefix:
                self._send_file(target.parent, target.name)
                return
            if target.is_dir() and path.startswith(prefix):
                self._send_file(target, path[len(prefix):])
                return
        if self.root is not None:
            self._send_file(self.root, path.lstrip("/") or "index.html")
            return
        self.send_error(404)

    def send_error(self, code, message=None, explain=None) -> None:
        self._response_headers = {}   # an error page is nobody's resource to share
        super().send_error(code, message, explain)

    def _send_dist(self, relative: str) -> None:
        """What a good static host sends for dist/: CORS + CORP, long-lived caching for
        content-hashed files, a precompressed copy the browser accepts."""
        self._response_headers.update(CROSS_ORIGIN_HEADERS)
        if HASHED_DIST_PATH.match(relative):
            self._response_headers["Cache-Control"] = IMMUTABLE
        self._response_headers["Vary"] = "Accept-Encoding"
        target = self._resolve(self.dist, relative)
        if target is None:
            self.send_error(404)
            return
        accepted = accepted_encodings(self.headers.get("Accept-Encoding", ""))
        body = target
        for encoding, suffix in ENCODINGS:
            copy = target.with_name(target.name + suffix)
            if encoding in accepted and copy.is_file():
                self._response_headers["Content-Encoding"] = encoding
                body = copy
                break
        # Validators, so that `no-cache` (the entry script) costs a 304, not the file again.
        # Both: Chromium ignores an ETag on this server's HTTP/1.0 responses, not Last-Modified.
        stat = body.stat()
        etag = f'"{stat.st_mtime_ns:x}-{stat.st_size:x}"'
        self._response_headers["ETag"] = etag
        self._response_headers["Last-Modified"] = email.utils.formatdate(int(stat.st_mtime), usegmt=True)
        if self._not_modified(etag, int(stat.st_mtime)):
            self.send_response(304)
            self.end_headers()
            return
        self._send_bytes(body.read_bytes(), content_type(target))

    def _not_modified(self, etag: str, mtime: int) -> bool:
        """RFC 9110 §13.2.2: If-None-Match decides when present, else If-Modified-Since."""
        if "If-None-Match" in self.headers:
            return etag in {tag.strip() for tag in self.headers["If-None-Match"].split(",")}
        try:
            since = email.utils.parsedate_to_datetime(self.headers.get("If-Modified-Since", ""))
        except (TypeError, ValueError):
            return False
        return since.timestamp() >= mtime

    @staticmethod
    def _resolve(base: Path, relative: str) -> Path | None:
        """base/relative if it is a file inside base, else None."""
        base = base.resolve()
        target = (base / relative).resolve()
        return target if base in target.parents and target.is_file() else None

    def _send_file(self, base: Path, relative: str) -> None:
        target = self._resolve(base, relative)
        if target is None:
            self.send_error(404)
            return
        self._send_bytes(target.read_bytes(), content_type(target))

    def _send_bytes(self, body: bytes, mime: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", mime)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_HEAD = do_GET

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        if os.environ.get("WEBNN_PY_SERVE_LOG"):
            super().log_message(format, *args)


class BackgroundServer:
    """An HTTP server that serves from a daemon thread while the `with` block runs
    (the polyfill server, the WPT checkout server and WebKit's loopback proxy)."""

    def __init__(self, httpd: http.server.HTTPServer, thread_name: str | None = None):
        self.httpd = httpd
        host, self.port = httpd.server_address[:2]
        self.url = f"http://{host}:{self.port}"
        self._thread = threading.Thread(target=httpd.serve_forever, daemon=True, name=thread_name)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class PolyfillServer(BackgroundServer):
    """A server on 127.0.0.1 in a background thread (for the demo and the tests)."""

    def __init__(self, root: str | Path | None = None, port: int = 0, headers: dict[str, str] | None = None,
                 mounts: dict[str, str | Path] | None = None, host: str = "127.0.0.1",
                 dist: str | Path = DIST_DIR):
        handler = type("BoundHandler", (Handler,), {
            "root": Path(root).resolve() if root else None,
            "dist": Path(dist).resolve(),
            "mounts": {prefix: Path(d).resolve() for prefix, d in (mounts or {}).items()},
            "extra_headers": dict(headers or {}),
        })
        super().__init__(http.server.ThreadingHTTPServer((host, port), handler))
        self.url = f"http://{host}:{self.port}"     # the name asked for, not the address it resolved to


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m webnn_py.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--root", help="also serve this folder (your pages)")
    args = parser.parse_args(argv)
    if not (RUNTIME_DIR / "pyodide.asm.wasm").is_file():
        parser.exit(1, f"no Pyodide runtime in {RUNTIME_DIR}: run ./dev setup first\n")
    server = PolyfillServer(args.root, args.port)
    print(f"webnn-py polyfill: <script src=\"{server.url}{POLYFILL_PATH}\"></script>", flush=True)
    if (DIST_DIR / "webnn-polyfill.js").is_file():
        print(f"dist/ (./dev dist) as a static host serves it: {server.url}{DIST_PREFIX}webnn-polyfill.js", flush=True)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
