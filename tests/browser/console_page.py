"""Page fixtures for the hardening tests, which must see the console: slice.html with the
polyfill, in the engines of tests/browser/conftest.py (`page`) or in Chromium alone
(`chromium_page`, for what only wasm32 in Chromium makes reachable). Scripts are called
with `call(page, script, arg)`; `console_errors(page, since)` lists what the page printed
with console.error or threw uncaught after `since = mark(page)`."""
import json

import pytest

import browsers

from . import PAGES
from .conftest import require


@pytest.fixture(scope="module")
def server(pyodide_runtime):
    from webnn_py.serve import PolyfillServer

    with PolyfillServer(root=PAGES) as server:
        yield server


def _slice_page(browser, server):
    page = browser.new_page()
    page.goto(f"{server.url}/slice.html")
    page.evaluate("window.sliceFacts")
    return page


@pytest.fixture(scope="module")
def page(browser, server):
    with _slice_page(browser, server) as page:
        yield page


@pytest.fixture(scope="module")
def chromium_page(server):
    require("chromium")
    with browsers.launch("chromium") as browser, _slice_page(browser, server) as page:
        yield page


def call(page, script: str, arg=None):
    """`script` (a JS function, maybe async) called with `arg` (JSON) in the page, awaited."""
    return page.evaluate(f"({script})({json.dumps(arg)})")


def mark(page) -> tuple[int, int]:
    return len(page.console), len(page.errors)


def console_errors(page, since: tuple[int, int]) -> list[str]:
    console, errors = since
    return [m.text for m in page.console[console:] if m.level == "error"] + page.errors[errors:]
