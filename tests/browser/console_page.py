"""A page fixture for tests that must see the console: slice.html with the polyfill, every
console message and uncaught error of the page kept in `page.console_lines` as (type, text)."""
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def page(pyodide_runtime):
    from webnn_py.serve import PolyfillServer
    from wpt_runner.chromium import launch_chromium

    with PolyfillServer(root=Path(__file__).parent / "pages") as server, launch_chromium() as browser:
        page = browser.new_page()
        console = []
        page.on("console", lambda m: "favicon.ico" in m.location.get("url", "") or console.append((m.type, m.text)))
        page.on("pageerror", lambda e: console.append(("pageerror", str(e))))
        page.goto(f"{server.url}/slice.html")
        page.evaluate("window.sliceFacts")
        page.console_lines = console
        yield page


def console_errors(page, since: int) -> list[str]:
    """The errors the page printed (or threw uncaught) after its `since`-th console line."""
    return [text for kind, text in page.console_lines[since:] if kind in ("error", "pageerror")]
