"""A Pyodide fatal error -- here a call from a page that recursed almost to the engine's
stack limit, which runs out of stack inside Python's C frames -- loses every context
(§8.3.9) instead of leaving the page's promises waiting for ever and later calls returning
nothing as if they had run (webnn-polyfill.js, "a failed runtime"). In every engine of
tests/browser/conftest.py; the page's script is tests/browser/pages/runtime_failure.html."""
from .console_page import server  # noqa: F401 - fixture

FAILED = "webnn-py's Python runtime failed"


def test_a_fatal_error_loses_the_contexts_and_nothing_waits(browser, server):  # noqa: F811
    with browser.new_page() as page:
        page.goto(f"{server.url}/runtime_failure.html")
        result = page.evaluate("window.probeStackLimit()")
    # The calls overflowed, in the engine's JavaScript or in Python, until the first one
    # with enough stack for the shim's JavaScript ran out of it in Python's frames: from
    # then on the runtime is failed, and the next call says so.
    assert result["overflows"] > 0, result
    assert result["ending"].startswith(f"InvalidStateError: writeTensor: {FAILED}"), result
    # The context is lost, with a message naming what happened.
    assert result["lost"]["settled"] == "fulfilled", result
    assert result["lost"]["value"].startswith(FAILED), result
    # The build that was under way is rejected, not left waiting.
    assert result["building"]["settled"] == "rejected", result
    assert result["building"]["name"] == "InvalidStateError", result
    # Later calls fail as calls on a lost context do, none as if it had run.
    after = result["after"]
    for member in ("write", "dispatch", "builder"):
        assert after[member]["name"] == "InvalidStateError", (member, result)
        assert FAILED in after[member]["message"], (member, result)
    assert after["read"]["settled"] == "rejected" and after["read"]["name"] == "InvalidStateError", result
    assert after["createContext"]["settled"] == "rejected", result
    assert after["createContext"]["name"] == "NotSupportedError", result
    assert FAILED in after["createContext"]["message"], result
