"""The "webnn" permissions policy where a polyfill must work for it (issue 19; README
"Security model"). Pages on http://127.0.0.1:PORT embed frames from
http://localhost:PORT: another origin, still a secure context.

1. A dedicated worker has its creator document's policy: a cross-origin frame without
   allow="webnn" (or with 'none') that starts a worker importing the polyfill gets a
   SecurityError there too, also when its page script posts a decision of its own.
3. A frame allowed by allow="webnn" whose parent loads the polyfill 1.5 s after the
   frame asked is answered when that polyfill arrives (no refusal cached on a timeout).
4. <iframe sandbox="allow-scripts" allow="webnn"> (an opaque origin) is allowed, as
   Chromium's own policy matches 'src' for it; without allow it is refused."""
import pytest

from . import PAGES


@pytest.fixture(scope="module")
def server(pyodide_runtime):
    from webnn_py.serve import PolyfillServer

    with PolyfillServer(root=PAGES) as server:
        yield server


@pytest.fixture(scope="module")
def policy_facts(browser, server):
    with browser.new_page() as page:
        page.goto(f"{server.url}/security_policy_top.html")
        facts = page.evaluate("window.policyFacts")
        assert page.errors == []
    return facts


@pytest.mark.parametrize("frame", ["workerNoAllow", "workerAllowNone"])
def test_a_refused_frames_dedicated_worker_is_refused(policy_facts, frame):
    outcome = policy_facts[frame]
    assert outcome["ok"] is False and outcome["name"] == "SecurityError", outcome
    # The polyfill's message was not seen by the worker's own listener.
    assert outcome["messagesSeen"] == ["go"], outcome


def test_a_decision_forged_by_the_frames_script_does_not_count(policy_facts):
    outcome = policy_facts["workerNoAllowForged"]
    assert outcome["ok"] is False and outcome["name"] == "SecurityError", outcome
    # The polyfill in the worker took the first decision port (its creator's) and set
    # aside the later one; neither reached the worker's own listener.
    assert outcome["messagesSeen"] == ["go"], outcome


def test_a_sandboxed_frame_with_allow_webnn_is_allowed(policy_facts):
    assert policy_facts["sandboxAllow"] == {"ok": True, "context": "[object MLContext]"}


def test_a_sandboxed_frame_without_allow_is_refused(policy_facts):
    outcome = policy_facts["sandboxNoAllow"]
    assert outcome["ok"] is False and outcome["name"] == "SecurityError", outcome


def test_a_refused_frame_cannot_answer_its_own_policy_through_the_runtime_port(policy_facts):
    # Page script in a refused frame connects to the runtime with `allowed` always true:
    # the runtime still asks its own document's policy, which refuses the frame.
    outcome = policy_facts["connectForged"]
    assert outcome["ok"] is False and outcome["name"] == "SecurityError", outcome


def test_a_parent_whose_polyfill_arrives_late_still_answers(browser, server):
    with browser.new_page() as page:
        page.goto(f"{server.url}/security_late_parent.html")
        facts = page.evaluate("window.lateFacts")
        assert page.errors == []
    assert facts["ok"] is True and facts["context"] == "[object MLContext]", facts
    assert facts["polyfillLoadedAt"] >= 1500                # the frame asked long before
