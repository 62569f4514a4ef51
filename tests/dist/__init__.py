"""Helpers for the dist/ tests: plain static servers that are not ours, and a page that
computes a graph through the polyfill included by a URL the test chooses."""
from __future__ import annotations

import contextlib
import http.server
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Iterator

ISOLATION = {"Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp"}

# relu(a - b) * 2 on fixed data; the expected values are worked out by hand below.
A = [1.5, -2.0, 3.0, 0.25]
B = [0.5, 1.0, -1.0, 0.5]
EXPECTED = [2.0, 0.0, 8.0, 0.0]   # relu([1, -3, 4, -0.25]) * 2

_PAGE_BODY = """
const out = {};
try {
  const context = await navigator.ml.createContext();
  const builder = new MLGraphBuilder(context);
  const desc = { dataType: "float32", shape: [2, 2] };
  const a = builder.input("a", desc), b = builder.input("b", desc);
  const two = builder.constant({ dataType: "float32", shape: [] }, new Float32Array([2]));
  const graph = await builder.build({ c: builder.mul(builder.relu(builder.sub(a, b)), two) });
  const [ta, tb, tc] = await Promise.all([
    context.createTensor({ ...desc, writable: true }), context.createTensor({ ...desc, writable: true }),
    context.createTensor({ ...desc, readable: true })]);
  context.writeTensor(ta, new Float32Array(%(a)s));
  context.writeTensor(tb, new Float32Array(%(b)s));
  context.dispatch(graph, { a: ta, b: tb }, { c: tc });
  out.values = Array.from(new Float32Array(await context.readTensor(tc)));
} catch (e) {
  out.error = String((e && e.stack) || e);
}
out.crossOriginIsolated = self.crossOriginIsolated;
out.resources = performance.getEntriesByType("resource").map((e) => e.name);
window.pageResult = out;
"""


def graph_page(script_url: str, how: str = "tag", integrity: str | None = None) -> str:
    """A page that includes the polyfill from `script_url` by a classic script tag ("tag")
    or by a side-effect import in a module script ("import"), computes the graph above and
    sets window.pageResult."""
    body = _PAGE_BODY % {"a": json.dumps(A), "b": json.dumps(B)}
    if how == "import":
        return f'<!doctype html><meta charset="utf-8">\n<script type="module">\nimport "{script_url}";\n{body}</script>\n'
    attrs = f' integrity="{integrity}" crossorigin="anonymous"' if integrity else ""
    return (f'<!doctype html><meta charset="utf-8">\n<script src="{script_url}"{attrs}></script>\n'
            f'<script type="module">\n{body}</script>\n')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_serving(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@contextlib.contextmanager
def plain_http_server(directory: Path) -> Iterator[str]:
    """`python -m http.server` (the standard library's, not ours) on `directory`; yields its URL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                             "--directory", str(directory)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url + "/")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextlib.contextmanager
def isolating_server(directory: Path) -> Iterator[str]:
    """A static server whose only addition is COOP/COEP on every response (test-only)."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(directory), **kwargs)

        def end_headers(self):
            for key, value in ISOLATION.items():
                self.send_header(key, value)
            super().end_headers()

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def run_page(browser, url: str, result: str = "window.pageResult", timeout_ms: int = 120_000) -> dict:
    """Open `url` in a new tab and return what `result` (set by the page) holds."""
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(url)
        page.wait_for_function(f"{result} !== undefined", timeout=timeout_ms)
        outcome = page.evaluate(result)
    finally:
        page.close()
    assert not errors, errors
    return outcome
