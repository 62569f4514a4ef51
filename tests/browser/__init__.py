import contextlib
from pathlib import Path

import browsers

PAGES = Path(__file__).parent / "pages"


def page_facts(page_path: str, expression: str, browser: "browsers.Browser | None" = None):
    """Open tests/browser/pages/`page_path` in `browser` (default: a headless
    Chromium of its own) with the polyfill served beside it, and return what
    `expression` (a promise the page sets up) resolves to; an uncaught error in
    the page fails the test."""
    from webnn_py.serve import PolyfillServer

    with PolyfillServer(root=PAGES) as server, contextlib.ExitStack() as stack:
        if browser is None:
            browser = stack.enter_context(browsers.launch("chromium"))
        with browser.new_page() as page:
            page.goto(f"{server.url}/{page_path}")
            result = page.evaluate(expression)
            assert not page.errors, page.errors
            return result


def lacks(browser: "browsers.Browser", feature: str) -> str:
    """The skip reason for an engine feature this browser does not have."""
    return f"{browser.engine} {browser.version} has no {feature}"
