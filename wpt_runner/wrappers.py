"""The boilerplate WPT generates around `.any.js`, `.window.js` and `.worker.js` files.

Given a request path, `generate()` answers with the wrapper page or worker
script (or None when the path names no generated resource). Every window page
starts with the result hook and the polyfill; every worker script imports the
polyfill before anything else, so the test's own scripts always see
navigator.ml already installed.
"""
from __future__ import annotations

import dataclasses
import html
import json
from pathlib import Path

from .meta import Meta, parse_js_meta

ASSET_PREFIX = "/__wpt_runner__/"
HOOK_URL = ASSET_PREFIX + "hook.js"
WORKER_READY_URL = ASSET_PREFIX + "worker-ready.js"
REPORT_URL = ASSET_PREFIX + "report"
DEFAULT_POLYFILL_URL = ASSET_PREFIX + "webnn-polyfill.js"

# Request path suffix -> (source suffix that replaces it, what to generate).
_ROUTES = [
    (".any.html", ".any.js", "any-window"),
    (".any.worker.html", ".any.js", "dedicatedworker"),
    (".any.worker-module.html", ".any.js", "dedicatedworker-module"),
    (".any.sharedworker.html", ".any.js", "sharedworker"),
    (".any.sharedworker-module.html", ".any.js", "sharedworker-module"),
    (".any.serviceworker.html", ".any.js", "serviceworker"),
    (".any.serviceworker-module.html", ".any.js", "serviceworker-module"),
    (".any.worker.js", ".any.js", "worker-script"),
    (".any.worker-module.js", ".any.js", "worker-module-script"),
    (".window.html", ".window.js", "window-js"),
    (".worker.html", ".worker.js", "worker-js"),
]


@dataclasses.dataclass
class Settings:
    """What the runner puts into every page."""
    polyfill_url: str = DEFAULT_POLYFILL_URL
    timeout_multiplier: float = 1.0
    inject_polyfill: bool = True
    # The hook posts its reports to REPORT_URL (engines without a Playwright binding).
    post_reports: bool = False

    def hook_url(self, worker_wrapper: bool = False) -> str:
        return (f"{HOOK_URL}?timeout_multiplier={self.timeout_multiplier:g}" + ("&report=post" if self.post_reports else "")
                + ("&worker_wrapper=1" if worker_wrapper else ""))


def _js(value: str) -> str:
    return json.dumps(value)


def _attr(value: str) -> str:
    return html.escape(value, quote=True)


def route(path: str) -> tuple[str, str] | None:
    """(source path, kind) for a generated resource's URL path, else None."""
    for suffix, source_suffix, kind in _ROUTES:
        if path.endswith(suffix):
            stem = path[: -len(suffix)]
            # `.worker.html` must not catch `.any.worker.html`, which has its own route above.
            if kind in ("window-js", "worker-js") and stem.endswith(".any"):
                continue
            return stem + source_suffix, kind
    return None


def generate(path: str, root: Path, settings: Settings) -> tuple[bytes, str] | None:
    """(body, content type) of the generated resource at `path`, or None.

    A real file at `path` always wins (the server checks first), as in WPT.
    """
    routed = route(path)
    if routed is None:
        return None
    source_path, kind = routed
    source = root / source_path.lstrip("/")
    if not source.is_file():
        return None
    with source.open(encoding="utf-8", errors="replace") as f:
        meta = parse_js_meta(f.read(16384))
    name = source_path.rsplit("/", 1)[-1]
    if kind == "any-window":
        return _window_page(meta, settings, name, any_global=True), "text/html; charset=utf-8"
    if kind == "window-js":
        return _window_page(meta, settings, name, any_global=False), "text/html; charset=utf-8"
    if kind == "worker-js":
        return _worker_page(meta, settings, "dedicatedworker", name), "text/html; charset=utf-8"
    if kind in ("worker-script", "worker-module-script"):
        return _worker_script(meta, settings, name, module=kind == "worker-module-script"), "text/javascript; charset=utf-8"
    worker_script = name[: -len(".js")] + (".worker-module.js" if kind.endswith("-module") else ".worker.js")
    return _worker_page(meta, settings, kind, worker_script), "text/html; charset=utf-8"


def _head(meta: Meta, settings: Settings, worker_wrapper: bool = False) -> list[str]:
    lines = ["<!doctype html>", "<meta charset=utf-8>"]
    if meta.timeout == "long":
        # Before testharness.js: the harness reads its timeout when it loads.
        lines.append('<meta name="timeout" content="long">')
    if meta.title:
        lines.append(f"<title>{html.escape(meta.title)}</title>")
    lines.append(f'<script src="{_attr(settings.hook_url(worker_wrapper))}"></script>')
    return lines


def _harness() -> list[str]:
    return ['<script src="/resources/testharness.js"></script>',
            '<script src="/resources/testharnessreport.js"></script>']


def _window_page(meta: Meta, settings: Settings, test_file: str, any_global: bool) -> bytes:
    lines = _head(meta, settings)
    if settings.inject_polyfill:
        lines.append(f'<script src="{_attr(settings.polyfill_url)}"></script>')
    if any_global:
        lines.append("<script>self.GLOBAL = {isWindow: () => true, isWorker: () => false, "
                     "isShadowRealm: () => false};</script>")
    lines += _harness()
    lines += [f'<script src="{_attr(s)}"></script>' for s in meta.scripts]
    lines += ["<div id=log></div>", f'<script src="{_attr(test_file)}"></script>', ""]
    return "\n".join(lines).encode()


def _worker_page(meta: Meta, settings: Settings, scope: str, worker_script: str) -> bytes:
    # The page itself runs no test code, so it does not boot the polyfill's runtime:
    # that would be a second Python runtime for nothing. The worker does. A dedicated
    # worker takes its creator's "webnn" policy from the polyfill in the page, so the
    # page loads it lazily (README "Security model").
    lines = _head(meta, settings, worker_wrapper=True)
    if settings.inject_polyfill and scope.startswith("dedicatedworker"):
        lines += ["<script>self.webnnPolyfillConfig = {lazy: true};</script>",
                  f'<script src="{_attr(settings.polyfill_url)}"></script>']
    lines += _harness() + ["<div id=log></div>", "<script>"]
    module = scope.endswith("-module")
    options = ", {type: 'module'}" if module else ""
    script_url = f"{_js(worker_script)} + location.search"
    sw_options = "{scope, type: 'module'}" if module else "{scope}"
    if scope.startswith("dedicatedworker"):
        lines.append(f"fetch_tests_from_worker(new Worker({script_url}{options}));")
    elif scope.startswith("sharedworker"):
        lines.append(f"fetch_tests_from_worker(new SharedWorker({script_url}{options}));")
    else:
        # Registration happens in an async step: a failure (no service worker
        # support, a script error) rejects, which testharness reports as a harness error.
        lines += [
            "(async function() {",
            "  const scope = 'does/not/exist';",
            "  let registration = await navigator.serviceWorker.getRegistration(scope);",
            "  if (registration) await registration.unregister();",
            f"  registration = await navigator.serviceWorker.register({script_url}, {sw_options});",
            "  fetch_tests_from_worker(registration.installing || registration.waiting || registration.active);",
            "})();",
        ]
    lines += ["</script>", ""]
    return "\n".join(lines).encode()


def _worker_script(meta: Meta, settings: Settings, test_file: str, module: bool) -> bytes:
    def load(url: str) -> str:
        if not module:
            return f"importScripts({_js(url)});"
        # A module specifier must be a URL or start with /, ./ or ../; "x.js" alone is a bare name.
        if not url.startswith(("/", "./", "../")) and "://" not in url:
            url = "./" + url
        return f"import {_js(url)};"

    lines = []
    if settings.inject_polyfill:
        lines.append(load(settings.polyfill_url))
    lines.append(load(WORKER_READY_URL))   # the page's harness timeout starts again once booted
    global_setup = ["self.GLOBAL = {isWindow: () => false, isWorker: () => true, isShadowRealm: () => false};"]
    if meta.title:
        global_setup.append(f"self.META_TITLE = {_js(meta.title)};")
    if module:
        # Static imports run before this module's body, so globals the harness
        # reads at load time come from a module of their own.
        lines.append(load(ASSET_PREFIX + "worker-globals.js?" + ("title=" + _url_quote(meta.title) if meta.title else "")))
    else:
        lines += global_setup
    lines.append(load("/resources/testharness.js"))
    lines += [load(s) for s in meta.scripts]
    lines.append(load(test_file))
    lines += ["done();", ""]
    return "\n".join(lines).encode()


def _url_quote(value: str) -> str:
    from urllib.parse import quote
    return quote(value, safe="")


def worker_globals_module(query: dict[str, list[str]]) -> bytes:
    """The module that sets self.GLOBAL (and META_TITLE) for module workers."""
    lines = ["self.GLOBAL = {isWindow: () => false, isWorker: () => true, isShadowRealm: () => false};"]
    title = query.get("title", [None])[0]
    if title:
        lines.append(f"self.META_TITLE = {_js(title)};")
    return ("\n".join(lines) + "\n").encode()
