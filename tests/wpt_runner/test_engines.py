"""The runner in Firefox and WebKit (`--browser`), through the browser layer: the
hook's reports reach the runner by POST, in a window and in every worker scope,
with the polyfill; a hung page ends in the runner's own TIMEOUT; a worker page
whose setup fails ends at once. A few pages per engine, both engines at once."""
import json
import os

import pytest

import browsers

from .test_cli_runs import HERE, by_test, cli, finish, show, subtests

ENGINES = ("firefox", "webkit")
MULTIPLIER = 3


def _available(engine: str) -> bool:
    reason = browsers.unavailable(engine)
    if reason and os.environ.get("CI"):
        pytest.fail(reason)
    return reason is None


@pytest.fixture(scope="module")
def engine_runs(wpt_root, tmp_path_factory, pyodide_runtime):
    out = tmp_path_factory.mktemp("engine-reports")
    processes = {}
    for engine in ENGINES:
        if not _available(engine):
            continue
        processes[engine, "main"] = cli(
            "--wpt-root", wpt_root, "--browser", engine, "runner/statuses.window.js", "runner/meta_title.any.js",
            "setup_errors/", "--jobs", "2", "--timeout-multiplier", MULTIPLIER,
            "--expectations", HERE / "expectations.json", "--report", out / f"{engine}-main.json")
        processes[engine, "hang"] = cli(
            "--wpt-root", wpt_root, "--browser", engine, "timeouts/hang.window.js", "timeouts/long.any.js",
            "--no-polyfill", "--timeout-multiplier", "0.2", "--jobs", "1", "--report", out / f"{engine}-hang.json")
    runs = {}
    for (engine, name), process in processes.items():
        code, stdout, stderr = finish(process)
        path = out / f"{engine}-{name}.json"
        runs[engine, name] = {"code": code, "stdout": stdout, "stderr": stderr,
                              "report": json.loads(path.read_text()) if path.is_file() else None}
    return runs


@pytest.fixture(params=ENGINES)
def engine(request, engine_runs):
    if (request.param, "main") not in engine_runs:
        pytest.skip(browsers.unavailable(request.param))
    return request.param


def test_reports_arrive_from_every_scope(engine, engine_runs):
    run = engine_runs[engine, "main"]
    assert run["report"] is not None, run["stdout"] + run["stderr"]
    assert run["report"]["run_info"]["product"] == engine
    results = by_test(run["report"])
    scopes = {"": "Window", ".worker": "DedicatedWorkerGlobalScope", ".sharedworker": "SharedWorkerGlobalScope",
              ".serviceworker": "ServiceWorkerGlobalScope"}
    for suffix, name in scopes.items():
        result = results[f"/runner/meta_title.any{suffix}.html"]
        assert result["status"] == "OK", show(result)
        assert subtests(result) == {f"title in {name}": "PASS", f"polyfill installed in {name}": "PASS"}
    statuses = results["/runner/statuses.window.html"]
    assert subtests(statuses) == {"passes": "PASS", "fails": "FAIL", "promise rejects": "FAIL",
                                  "precondition fails": "PRECONDITION_FAILED", "polyfill in a .window.js page": "PASS"}
    assert run["code"] == 0, run["stdout"][-4000:] + run["stderr"][-2000:]


def test_setup_failure_ends_every_page_at_once(engine, engine_runs):
    results = by_test(engine_runs[engine, "main"]["report"])
    for suffix in ("", ".worker", ".sharedworker", ".serviceworker"):
        result = results[f"/setup_errors/setup_rejects.any{suffix}.html"]
        assert result["status"] == "ERROR" and "setup rejects on purpose" in result["message"], show(result)
        assert subtests(result) == {"never runs: its setup rejected": "NOTRUN"}, show(result)
        assert result["duration"] < 60_000 * MULTIPLIER, show(result)


def test_hung_page_times_out_and_the_next_test_runs(engine, engine_runs):
    run = engine_runs[engine, "hang"]
    assert run["report"] is not None, run["stdout"] + run["stderr"]
    results = by_test(run["report"])
    hang = results["/timeouts/hang.window.html"]
    assert hang["status"] == "TIMEOUT" and subtests(hang) == {"before the hang": "PASS"}, show(hang)
    # One job, tests in order: this one ran after the hung page, in the same browser or a relaunched one.
    after = results["/timeouts/long.any.html"]
    assert after["status"] == "OK" and subtests(after) == {"waits 4 s within a long timeout": "PASS"}, show(after)
