from pathlib import Path

PAGES = Path(__file__).parent / "pages"


def page_facts(page_path: str, expression: str):
    """Open tests/browser/pages/`page_path` in headless Chromium with the polyfill
    served beside it, and return what `expression` (a promise the page sets up)
    resolves to; an uncaught error in the page fails the test."""
    from webnn_py.serve import PolyfillServer
    from wpt_runner.chromium import launch_chromium

    with PolyfillServer(root=PAGES) as server, launch_chromium() as browser:
        page = browser.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{server.url}/{page_path}")
        result = page.evaluate(expression)
        assert not errors, errors
        return result
