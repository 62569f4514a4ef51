"""The page stays responsive during a long dispatch (README "Responsiveness").

A long graph (a chain of matmuls) and a long `loop` run through navigator.ml
in a window while the page's setInterval and requestAnimationFrame callbacks
keep firing and a real click (the engine's input automation: browsers' Page.click)
is handled before the result arrives (the page repeats the dispatch until the click has
arrived: under load the automation may take longer to send it than one dispatch lasts, which
said nothing about the page). In Chromium, Firefox and WebKit. The same runs with cooperative dispatch turned off (timeSlice: 0)
freeze the page, which shows the measurement can tell the two apart. Results
are compared with hand-computed values.

No wall-clock thresholds (issue 19, item 16: "dispatch() returns in < 20 ms"
failed at load average 6.5): the machine is shared, and a renderer that gets no
CPU for a while shows long gaps whatever we do. Each run is checked against
itself -- the longest gap between timer ticks is under half the run and the 90th
percentile under a tenth of it, dispatch() returns within a tenth of it -- and by
structure: timer callbacks, animation frames and a real click ran before the
result arrived. Unsliced, the whole run is one gap (the freeze test checks the
same ratio fails then). With a quiet machine the maximum gap is typically
30-70 ms (printed with -s).
"""
from pathlib import Path

import numpy as np
import pytest

PAGES = Path(__file__).parent / "pages"
N, STEPS = 256, 600               # 600 matmuls of 256x256, 20 GFLOP (0.5-1 s with the wasm GEMM kernel)
TRIP = 60000                      # loop iterations (0.6-2 s; the runaway test stops at this many)


def _matmul_expected(steps=STEPS):
    x = (np.arange(N * N) % 1000).astype(np.float32).reshape(N, N)
    y = x[:, (np.arange(N) - steps) % N]        # x @ P^steps, P the cyclic shift
    return y.ravel()


@pytest.fixture(scope="module")
def pages(browser):
    """open(query): responsive.html`query` in `browser`, booted. Tests with the same query
    share one page (a boot takes 3-30 s; each run is measured between its own marks and
    the page's messages are cleared before it), and only one tab is open at a time:
    engines throttle timers and animation frames in background tabs."""
    from webnn_py.serve import PolyfillServer

    current = {}

    def open_page(query: str):
        if current.get("query") != query:
            if "page" in current:
                current.pop("page").close()
            current["page"] = browser.new_page()
            current["page"].goto(f"{server.url}/responsive.html{query}")
            current["page"].evaluate("window.ready")
            current["query"] = query
        page = current["page"]
        page.errors.clear()
        page.console.clear()
        return page

    with PolyfillServer(root=PAGES) as server:
        yield open_page
        if "page" in current:
            current["page"].close()


def _assert_responsive(facts):
    # Ratios within the run: no freeze takes half of it (unsliced, one gap is all of it),
    # and most gaps are short against it.
    assert facts["maxGapMs"] < 0.5 * facts["ms"], facts
    assert facts["p90GapMs"] < 0.1 * facts["ms"], facts
    assert facts["ticks"] >= 3, facts                       # setInterval(10 ms) kept firing meanwhile


def _errors(page):
    return page.errors + [m.text for m in page.console if m.level == "error"]


def _run(pages, query, kind, a, b, click=True, until_click=False):
    """One long run on responsive.html`query`; its facts and the page's error messages. With
    `until_click`, the page repeats the dispatch until it has handled the click (the automation's
    delay before the click reaches the page grows with the machine's load)."""
    page = pages(query)
    options = "{untilClick: true}" if until_click else "{}"
    page.evaluate(f"(window.runsStarted = 0, window.run = longRun({kind!r}, {a}, {b}, {options}), null)")
    page.wait_for("window.runsStarted === 1")
    if click:
        page.click("#b")
    facts = page.evaluate("window.run")
    print(f"{kind}{query}: " + "{ms:.0f} ms, {dispatches} dispatches, {ticks} ticks, gaps: p90 {p90GapMs:.1f} ms, "
          "max {maxGapMs:.1f} ms, {frames} frames, {clicksDuringRun} clicks".format(**facts))
    return facts, _errors(page)


def _assert_matmul_result(facts, steps=STEPS):
    expected = _matmul_expected(steps)
    assert facts["length"] == N * N
    assert facts["head"] == expected[:8].tolist() and facts["tail"] == expected[-8:].tolist()


# The default (scheduler.postTask where the engine has it), and Pyodide's postMessage
# tasks (the fallback, which WebKit's default takes too).
@pytest.mark.parametrize("query", ["", "?post=pyodide"])
def test_matmul_chain_keeps_the_page_responsive(pages, query):
    facts, errors = _run(pages, query, "matmul", N, STEPS, until_click=True)
    _assert_matmul_result(facts)
    assert facts["ms"] > 300, facts                       # long enough for the ratios to mean something
    # dispatch() holds its caller for one slice at most (runtime/timeline.py), a small part
    # of the run; running the dispatch through would take all of it.
    assert facts["dispatchReturnedMs"] < 0.1 * facts["ms"], facts
    _assert_responsive(facts)
    assert facts["frames"] >= 3, facts
    assert facts["clicksDuringRun"] == 1, facts
    assert not errors


ONE_STEP_PER_TASK = """(async ({n, tasks}) => {
  const ctx = await navigator.ml.createContext();
  const {graph, desc, inputs} = await matmulChain(ctx, n, 1);
  const x = await ctx.createTensor({...desc, writable: true});
  const out = await ctx.createTensor({...desc, readable: true});
  ctx.writeTensor(x, inputs.x);
  await ctx.readTensor(out);
  const runs = [];
  for (let i = 0; i < tasks; i++) {
    await new Promise((resolve) => setTimeout(resolve, 0));      // a task of its own
    const start = performance.now();
    ctx.dispatch(graph, {x}, {y: out});
    const called = performance.now();
    const y = new Float32Array(await ctx.readTensor(out));
    runs.push({callMs: called - start, readMs: performance.now() - called, head: Array.from(y.slice(0, 4))});
  }
  return runs;
})({n: 768, tasks: 6})"""


# On the page the test above ends with, then on the one the tests below start with: no page of its own.
@pytest.mark.parametrize("query", ["?post=pyodide", ""])
def test_each_task_gets_a_new_slice(pages, query):
    """A dispatch of one step longer than the slice spends its task's turn; the turn ends with
    the task (the shim's end-of-turn task: js_shim "The end of the caller's turn", on the
    scheduler's postTask or, with ?post=pyodide, a MessageChannel), so the same dispatch in
    each later task runs in its call again and the read after it settles at once. A turn that
    did not end would queue every other dispatch behind a task of the timeline's: its call
    returns at once, and the read waits for the whole product."""
    page = pages(query)
    runs = page.evaluate(ONE_STEP_PER_TASK)
    x = (np.arange(768 * 768) % 1000).astype(np.float32).reshape(768, 768)
    for run in runs:
        assert run["head"] == x[0, (np.arange(4) - 1) % 768].tolist()
        assert run["callMs"] > run["readMs"], runs
    assert not _errors(page)


def test_a_short_run_repeats_its_dispatch_until_the_click(pages):
    # The mechanism the tests above rely on: a chain far shorter than the click's delivery and
    # the minimum run is dispatched again (same inputs, same result) until both are there.
    facts, errors = _run(pages, "", "matmul", N, 5, until_click=True)
    _assert_matmul_result(facts, steps=5)
    assert facts["dispatches"] > 1 and facts["ms"] > 300, facts
    assert facts["clicksDuringRun"] == 1, facts
    assert not errors


def test_long_loop_keeps_the_page_responsive(pages):
    facts, errors = _run(pages, "", "loop", TRIP, 10**6, until_click=True)
    assert facts["head"] == [5 + TRIP, -7 + TRIP]
    assert facts["ms"] > 300, facts
    _assert_responsive(facts)
    assert facts["clicksDuringRun"] == 1, facts
    assert not errors


def test_runaway_loop_stays_responsive_then_fails_with_operation_error(pages):
    facts, errors = _run(pages, "", "loop", -1, TRIP, until_click=True)
    assert facts["head"] == [42, 42]                        # outputs keep their previous contents
    assert facts["ms"] > 300, facts
    _assert_responsive(facts)
    assert facts["clicksDuringRun"] == 1, facts
    assert len(errors) == facts["dispatches"], errors       # each dispatch fails, once
    for error in errors:
        assert "dispatch failed" in error and "OperationError" in error
        assert f"maxIterations ({TRIP})" in error


def test_destroying_the_context_during_a_long_dispatch_abandons_it(pages):
    page = pages("")
    facts = page.evaluate("destroyMidRun(10 ** 6, 150)")      # a loop far longer than 150 ms
    # The page's timer ran during the dispatch: the read queued behind it was still
    # pending when the timer destroyed the context, and is aborted.
    assert facts["read"] == "InvalidStateError"
    assert facts["lost"]
    # Promptly: settled within a small multiple of the time the timer waited, where the
    # loop's 10**6 iterations would take ~100 times longer.
    assert facts["settledMs"] < 3 * facts["timerFiredMs"], facts
    assert facts["dispatchAfterLoss"] == "InvalidStateError"   # its graph was destroyed with the context
    assert facts["afterwards"] == [8, -4]
    assert not _errors(page)


QUEUED_DISPATCHES = """(async ({n, steps, calls}) => {
  const ctx = await navigator.ml.createContext();
  const {graph, desc, inputs} = await matmulChain(ctx, n, steps);
  const x = await ctx.createTensor({...desc, writable: true});
  const out = await ctx.createTensor({...desc, readable: true});
  ctx.writeTensor(x, inputs.x);
  await ctx.readTensor(out);
  const start = performance.now();
  for (let i = 0; i < calls; i++) ctx.dispatch(graph, {x}, {y: out});
  const callsMs = performance.now() - start;
  const result = new Float32Array(await ctx.readTensor(out));
  return {callsMs, ms: performance.now() - start, head: Array.from(result.slice(0, 4))};
})({n: 256, steps: 20, calls: 30})"""


def test_queued_dispatches_do_not_hold_the_caller(pages):
    """Issue 19, item 8: 30 dispatch() calls in a row, each of a graph longer than a slice,
    took nearly all of their run time inside the calling task; now the calls together hold
    it for one slice, a small part of the run (runtime/timeline.py; the step count is
    checked exactly in tests/portable/test_dispatch_budget.py)."""
    facts = pages("").evaluate(QUEUED_DISPATCHES)
    print(f"30 dispatches: calls {facts['callsMs']:.1f} ms of {facts['ms']:.0f} ms")
    x = (np.arange(256 * 256) % 1000).astype(np.float32).reshape(256, 256)
    assert facts["head"] == x[0, (np.arange(4) - 20) % 256].tolist()
    assert facts["callsMs"] < 0.2 * facts["ms"], facts


# Last: the freeze needs pages of its own (?slice=0).
@pytest.mark.parametrize("kind,a,b", [("matmul", N, STEPS), ("loop", TRIP, 10**6)])
def test_without_time_slices_the_page_freezes_and_results_are_the_same(pages, kind, a, b):
    facts, _ = _run(pages, "?slice=0", kind, a, b)
    if kind == "matmul":
        _assert_matmul_result(facts)
    else:
        assert facts["head"] == [5 + TRIP, -7 + TRIP]
    # One task for the whole dispatch: no timer, frame or click in between, so the
    # ratio _assert_responsive requires fails here.
    assert facts["maxGapMs"] > 0.5 * facts["ms"], facts
    assert facts["clicksDuringRun"] == 0, facts
