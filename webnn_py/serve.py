"""Serve the polyfill and its runtime on loopback: `python -m webnn_py.serve [--port P] [--root DIR]`.

URL layout (the shim finds the runtime relative to its own URL):
  /webnn-polyfill.js   the shim with the generated WebIDL metadata prepended
  /pyodide/...         the Pyodide runtime, numpy and the webnn_py wheel (./dev setup builds it)
  /...                 files under --root, if given (pages that use the polyfill),
                       and any extra URL-prefix mounts the tests ask for

Every response carries CORS and CORP headers, so pages of any origin,
cross-origin isolated ones included, can include the script.
"""
from __future__ import annotations

import argparse
import http.server
import mimetypes
import os
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHIM_DIR = REPO / "js_shim"
RUNTIME_DIR = Path(os.environ.get("WEBNN_PY_RUNTIME", REPO / "build" / "pyodide"))
POLYFILL_PATH = "/webnn-polyfill.js"

_TYPES = {".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript",
          ".json": "application/json", ".whl": "application/octet-stream", ".zip": "application/octet-stream",
          ".html": "text/html; charset=utf-8", ".idl": "text/plain; charset=utf-8"}


def polyfill_source() -> bytes:
    """The script pages include: generated metadata first, then the shim."""
    parts = [SHIM_DIR / "generated" / "webidl_metadata.js", SHIM_DIR / "webnn-polyfill.js"]
    return b"\n".join(p.read_bytes() for p in parts)


class Handler(http.server.SimpleHTTPRequestHandler):
    """Static files from three places; no directory listings outside --root."""

    root: Path | None = None
    mounts: dict[str, Path] = {}
    extra_headers: dict[str, str] = {}

    def end_headers(self) -> None:
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Cross-Origin-Resource-Policy", "cross-origin")
        self.send_header("Cache-Control", "no-cache")
        for key, value in self.extra_headers.items():
            self.send_header(key, value)
        super().end_headers()

    def do_GET(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        if path == POLYFILL_PATH:
            self._send_bytes(polyfill_source(), "text/javascript")
            return
        if path.startswith("/pyodide/"):
            self._send_file(RUNTIME_DIR, path[len("/pyodide/"):])
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

    def _send_file(self, base: Path, relative: str) -> None:
        base = base.resolve()
        target = (base / relative).resolve()
        if base not in target.parents or not target.is_file():
            self.send_error(404)
            return
        content_type = _TYPES.get(target.suffix) or mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        self._send_bytes(target.read_bytes(), content_type)

    def _send_bytes(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_HEAD = do_GET

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        if os.environ.get("WEBNN_PY_SERVE_LOG"):
            super().log_message(format, *args)


class PolyfillServer:
    """A server on 127.0.0.1 in a background thread (for the demo and the tests)."""

    def __init__(self, root: str | Path | None = None, port: int = 0, headers: dict[str, str] | None = None,
                 mounts: dict[str, str | Path] | None = None, host: str = "127.0.0.1"):
        handler = type("BoundHandler", (Handler,), {
            "root": Path(root).resolve() if root else None,
            "mounts": {prefix: Path(d).resolve() for prefix, d in (mounts or {}).items()},
            "extra_headers": dict(headers or {}),
        })
        self.httpd = http.server.ThreadingHTTPServer((host, port), handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://{host}:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "PolyfillServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m webnn_py.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--root", help="also serve this folder (your pages)")
    args = parser.parse_args(argv)
    if not (RUNTIME_DIR / "pyodide.asm.wasm").is_file():
        parser.exit(1, f"no Pyodide runtime in {RUNTIME_DIR}: run ./dev setup first\n")
    server = PolyfillServer(args.root, args.port)
    print(f"webnn-py polyfill: <script src=\"{server.url}{POLYFILL_PATH}\"></script>", flush=True)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
