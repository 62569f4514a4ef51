"""The browser layer itself, in every engine: values come back alike, a page's
thrown or rejected expression raises EvaluationError, and uncaught errors,
unhandled rejections and console messages are collected."""
import math

import pytest

import browsers

from . import PAGES


@pytest.fixture(scope="module")
def page(browser):
    from webnn_py.serve import PolyfillServer

    with PolyfillServer(root=PAGES) as server, browser.new_page() as page:
        page.goto(f"{server.url}/layer.html")
        yield page


def test_values_come_back_alike_in_every_engine(page):
    value = page.evaluate("Promise.resolve({n: 1.5, s: 'ß', list: [1, [true, null]], none: undefined,"
                          " big: 2n ** 70n, nan: NaN, inf: -Infinity, zero: -0})")
    assert {k: v for k, v in value.items() if k not in ("nan", "inf", "zero", "none")} == {
        "n": 1.5, "s": "ß", "list": [1, [True, None]], "big": 2**70}
    assert value.get("none") is None
    assert math.isnan(value["nan"]) and value["inf"] == -math.inf
    assert value["zero"] == 0 and math.copysign(1, value["zero"]) == -1
    assert page.evaluate("undefined") is None


def test_throwing_and_rejecting_expressions_raise(page):
    with pytest.raises(browsers.EvaluationError, match="TypeError: nope"):
        page.evaluate("Promise.reject(new TypeError('nope'))")
    with pytest.raises(browsers.EvaluationError, match="RangeError: thrown"):
        page.evaluate("(() => { throw new RangeError('thrown'); })()")


def test_wait_for_times_out(page):
    with pytest.raises(TimeoutError):
        page.wait_for("false", timeout=0.3)


def test_errors_and_console_messages_are_collected(page):
    page.evaluate("emit()")
    page.evaluate("new Promise(r => setTimeout(r, 200))")     # WebKit's collector answers with evaluate
    assert any("layer: uncaught" in e for e in page.errors), page.errors
    assert any("layer: unhandled rejection" in e for e in page.errors), page.errors
    assert ("log", "layer: log 1") in [(m.level, m.text) for m in page.console]
    assert ("error", "layer: error") in [(m.level, m.text) for m in page.console]


def test_click_is_real_input(page):
    """click() goes through the engine's input automation (Playwright, BiDi
    input.performActions, WebDriver Perform Actions): the page sees one trusted
    left click on the element, as from a user, not a script-made event."""
    page.click("#button")
    assert page.evaluate("clicked") == [{"trusted": True, "button": 0, "detail": 1, "target": "button"}]


VISIBLE = """new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(() =>
  resolve({visibility: document.visibilityState, hidden: document.hidden}))))"""


def test_pages_are_visible_even_with_several_open(browser, page):
    """Each page is shown (engines give hidden pages no animation frames and throttle their
    timers, which tests/browser/test_responsiveness.py measures): a second page opened
    beside the module's, and the module's own, both run animation frames."""
    from webnn_py.serve import PolyfillServer

    with PolyfillServer(root=PAGES) as server, browser.new_page() as second:
        second.goto(f"{server.url}/layer.html")
        assert second.evaluate(VISIBLE, timeout=120) == {"visibility": "visible", "hidden": False}
        assert page.evaluate(VISIBLE, timeout=120) == {"visibility": "visible", "hidden": False}


def test_webkit_starts_again_when_its_first_browser_never_answers(monkeypatch):
    """browsers/webkit.py: a session whose start fails (on a loaded machine a MiniBrowser
    once never answered its driver's POST /session) is retried with a new driver and browser."""
    from browsers import webkit

    real, starts = webkit.WebDriverSession, []

    def first_times_out(*args, **kwargs):
        starts.append(args[0])
        if len(starts) == 1:
            raise TimeoutError("timed out")
        return real(*args, **kwargs)

    monkeypatch.setattr(webkit, "WebDriverSession", first_times_out)
    with webkit.launch() as browser, browser.new_page() as page:
        page.goto("about:blank")
        assert page.evaluate("6 * 7") == 42
    assert len(starts) == 2 and starts[0] != starts[1]      # a second driver, on its own port


def test_webkit_starts_a_new_minibrowser_when_its_session_ends():
    """WebKitWebDriver ends a session whose page crashed or hung (in a whole-suite run at
    load ~8 it did, at a page's boot): the next page comes from a new MiniBrowser instead
    of every later page of the module failing with "invalid session id"."""
    from browsers import webkit

    with webkit.launch() as browser:
        ended = browser.session
        ended.end()     # what the driver does to a crashed page's session
        with browser.new_page() as page:
            page.goto("about:blank")
            assert page.evaluate("6 * 7") == 42
        assert browser.session is not ended
