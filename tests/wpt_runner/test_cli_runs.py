"""The self-test tree through the real CLI, in headless Chromium: every META feature,
every worker global, variants, harness and subtest statuses, a hang, a crash,
expectations, the wptreport JSON, and the polyfill under WebNN-style tests.

Two runs go at once (they take ~1 min together on two cores): the main one with
the polyfill, and one without it for the timing-based cases (timeouts at a 0.2
multiplier, where a Python boot competing for the CPU would only add noise).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wpt_runner import expectations
from wpt_runner.results import SubtestResult, TestResult

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
MAIN_MULTIPLIER = 3


def cli(*args, env=None, **popen):
    return subprocess.Popen([sys.executable, "-m", "wpt_runner", "run", *map(str, args)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})}, **popen)


def finish(process, timeout=400):
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


@pytest.fixture(scope="module")
def runs(wpt_root, tmp_path_factory, pyodide_runtime):
    out = tmp_path_factory.mktemp("reports")
    timeouts = cli("--wpt-root", wpt_root, "timeouts/", "--no-polyfill", "--timeout-multiplier", "0.2", "--jobs", "4",
                   "--report", out / "timeouts.json", "--write-expectations", out / "baseline.json",
                   env={"WPT_RUNNER_ALLOW_TEST_CRASH": "1"})
    main = cli("--wpt-root", wpt_root, "runner/", "webnn/", "setup_errors/", "--jobs", "2", "--timeout-multiplier", MAIN_MULTIPLIER,
               "--expectations", HERE / "expectations.json", "--report", out / "main.json", "-v")
    # One job: the three pages run in turn in one browser and profile.
    isolation = cli("--wpt-root", wpt_root, "isolation/", "--no-polyfill", "--jobs", "1",
                    "--report", out / "isolation.json")
    results = {}
    for name, process in (("main", main), ("timeouts", timeouts), ("isolation", isolation)):
        code, stdout, stderr = finish(process)
        report = json.loads((out / f"{name}.json").read_text()) if (out / f"{name}.json").is_file() else None
        results[name] = {"code": code, "stdout": stdout, "stderr": stderr, "report": report}
    results["baseline"] = out / "baseline.json"
    return results


def by_test(report):
    return {r["test"]: r for r in report["results"]}


def subtests(result):
    return {s["name"]: s["status"] for s in result["subtests"]}


def show(result):
    return json.dumps(result, indent=1)


# ---- the main run ---------------------------------------------------------------------------

def test_main_run_has_only_expected_results(runs):
    run = runs["main"]
    assert run["report"] is not None, run["stdout"] + run["stderr"]
    assert run["code"] == 0, run["stdout"][-6000:] + run["stderr"][-2000:]
    assert "all results as expected" in run["stdout"]


def test_wptreport_schema(runs):
    report = runs["main"]["report"]
    assert set(report) >= {"results", "run_info", "time_start", "time_end"}
    assert report["time_start"] <= report["time_end"]
    assert report["run_info"]["product"] == "chromium"
    for result in report["results"]:
        assert result["test"].startswith("/")
        assert result["status"] in {"OK", "ERROR", "TIMEOUT", "CRASH", "PRECONDITION_FAILED", "SKIP"}
        assert "message" in result and isinstance(result["subtests"], list)
        for subtest in result["subtests"]:
            assert set(subtest) >= {"name", "status", "message"}
            assert subtest["status"] in {"PASS", "FAIL", "TIMEOUT", "NOTRUN", "PRECONDITION_FAILED"}
    # Expected non-passing results carry no "expected" field: it marks only surprises.
    statuses = by_test(report)["/runner/statuses.window.html"]
    assert all("expected" not in s for s in statuses["subtests"])


def test_every_scope_and_the_title(runs):
    results = by_test(runs["main"]["report"])
    scopes = {"": "Window", ".worker": "DedicatedWorkerGlobalScope", ".sharedworker": "SharedWorkerGlobalScope",
              ".serviceworker": "ServiceWorkerGlobalScope"}
    for suffix, name in scopes.items():
        result = results[f"/runner/meta_title.any{suffix}.html"]
        assert result["status"] == "OK", result
        assert subtests(result) == {f"title in {name}": "PASS", f"polyfill installed in {name}": "PASS"}


def test_meta_script_default_globals_and_timeout(runs):
    results = by_test(runs["main"]["report"])
    assert subtests(results["/runner/meta_script.any.html"]) == {"META script in Window": "PASS"}
    assert subtests(results["/runner/meta_script.any.worker.html"]) == {
        "META script in DedicatedWorkerGlobalScope": "PASS"}
    assert "/runner/meta_script.any.sharedworker.html" not in results   # not in the default globals
    assert subtests(results["/runner/meta_timeout.any.html"]) == {"timeout=long reaches the harness": "PASS"}


def test_variants_reach_every_global(runs):
    results = by_test(runs["main"]["report"])
    for page in ("/runner/meta_variant.any.html", "/runner/meta_variant.any.worker.html"):
        assert subtests(results[page]) == {"variant [] tc=null": "PASS"}
        assert subtests(results[page + "?first"]) == {"variant [?first] tc=null": "PASS"}
        assert subtests(results[page + "?tc=second%20case&n=2"]) == {
            "variant [?tc=second%20case&n=2] tc=second case": "PASS"}
    for variant in ("?w1", "?w2"):
        assert subtests(results["/runner/dedicated.worker.html" + variant]) == {
            ".worker.js runs in a dedicated worker with the polyfill": "PASS", f".worker.js variant {variant}": "PASS"}


def test_plain_html_test_gets_polyfill_in_page_and_workers(runs):
    results = by_test(runs["main"]["report"])
    for variant in ("?x", "?y"):
        result = results["/runner/plain.html" + variant]
        assert result["status"] == "OK"
        assert set(subtests(result).values()) == {"PASS"} and len(result["subtests"]) == 5, result


def test_subtest_and_harness_statuses(runs):
    results = by_test(runs["main"]["report"])
    statuses = results["/runner/statuses.window.html"]
    assert statuses["status"] == "OK"
    assert subtests(statuses) == {"passes": "PASS", "fails": "FAIL", "promise rejects": "FAIL",
                                  "precondition fails": "PRECONDITION_FAILED", "polyfill in a .window.js page": "PASS"}
    fails = next(s for s in statuses["subtests"] if s["name"] == "fails")
    assert "arithmetic" in fails["message"]
    error = results["/runner/harness_error.window.html"]
    assert error["status"] == "ERROR" and "uncaught on purpose" in error["message"]
    assert subtests(error) == {"ran before the error": "PASS", "never started": "NOTRUN"}
    assert results["/runner/harness_precondition.window.html"]["status"] == "PRECONDITION_FAILED"


def test_setup_failure_ends_every_page_at_once(runs):
    # promise_setup rejects: in a window testharness.js finishes at once; a worker's
    # window side used to wait out the long timeout for the tests the worker never
    # started. Every page now reports the same thing, well inside that timeout.
    results = by_test(runs["main"]["report"])
    long_timeout_ms = 60_000 * MAIN_MULTIPLIER
    for suffix in ("", ".worker", ".sharedworker", ".serviceworker"):
        result = results[f"/setup_errors/setup_rejects.any{suffix}.html"]
        assert result["status"] == "ERROR" and "setup rejects on purpose" in result["message"], show(result)
        assert subtests(result) == {"never runs: its setup rejected": "NOTRUN"}, show(result)
        assert result["duration"] < long_timeout_ms, show(result)


def test_skip_expectation_keeps_a_test_from_running(runs):
    result = by_test(runs["main"]["report"])["/runner/skipped.window.html"]
    assert result["status"] == "SKIP" and result["subtests"] == []


def test_polyfill_conformance_style(runs):
    results = by_test(runs["main"]["report"])
    everything = {"[required] add float32 1D": "PASS", "[required] add float32 2D broadcast": "PASS",
                  "[required] add int32 0D": "PASS", "[optional] add float16 1D": "PASS"}   # int4: filtered out
    for variant in ("?cpu", "?gpu"):
        result = results["/webnn/conformance_tests/add.https.any.html" + variant]
        assert result["status"] == "OK", result
        assert subtests(result) == everything
    one = results["/webnn/conformance_tests/add.https.any.html?cpu&tc=add%20float32%202D%20broadcast"]
    assert subtests(one) == {"[required] add float32 2D broadcast": "PASS"}


def test_polyfill_validation_style(runs):
    result = by_test(runs["main"]["report"])["/webnn/validation_tests/add.https.any.html?cpu"]
    assert result["status"] == "OK"
    assert len(result["subtests"]) == 5 and set(subtests(result).values()) == {"PASS"}, result


def test_polyfill_computes_in_every_global(runs):
    results = by_test(runs["main"]["report"])
    for suffix in ("", ".worker", ".sharedworker", ".serviceworker"):
        result = results[f"/webnn/compute.https.any{suffix}.html?cpu"]
        assert result["status"] == "OK", show(result)
        assert set(subtests(result).values()) == {"PASS"}, show(result)


def test_script_created_frame_gets_the_polyfill(runs):
    # About:blank frames never reach the server; the runner's init script covers them.
    result = by_test(runs["main"]["report"])["/webnn/script-frame.https.window.html"]
    assert result["status"] == "OK", show(result)
    assert subtests(result) == {"about:blank frame created by script": "PASS"}, show(result)


def test_summary_table_per_directory(runs):
    stdout = runs["main"]["stdout"]
    for directory in ("/runner/", "/webnn/", "/webnn/conformance_tests/", "/webnn/validation_tests/", "total"):
        assert any(line.startswith(directory + " ") for line in stdout.splitlines()), directory


def test_no_test_sees_an_earlier_tests_storage(runs):
    # The job's browser keeps its HTTP and code caches across tests, nothing else: each page
    # checks that cookies, localStorage, Cache Storage, IndexedDB and service worker
    # registrations are empty, then leaves all of them behind for the next.
    run = runs["isolation"]
    assert run["report"] is not None, run["stdout"] + run["stderr"]
    results = by_test(run["report"])
    assert sorted(results) == [f"/isolation/storage.https.window.html?{n}" for n in (1, 2, 3)]
    for test, result in results.items():
        assert result["status"] == "OK" and set(subtests(result).values()) == {"PASS"}, (test, result)
    assert run["code"] == 0


# ---- the timing run: hang, crash, harness timeout, timeout=long ----------------------------

def test_timeouts_and_crash(runs):
    run = runs["timeouts"]
    assert run["report"] is not None, run["stdout"] + run["stderr"]
    results = by_test(run["report"])
    # 4 s of waiting: within timeout=long (60 s x 0.2), past the normal 10 s x 0.2.
    assert results["/timeouts/long.any.html"]["status"] == "OK"
    assert subtests(results["/timeouts/long.any.html"]) == {"waits 4 s within a long timeout": "PASS"}
    slow = results["/timeouts/slow.window.html"]
    assert slow["status"] == "TIMEOUT"
    assert subtests(slow) == {"quick": "PASS", "waits 4 s within a normal timeout": "TIMEOUT"}
    # A hung page: the runner's own timer, with the subtests that finished before the hang.
    hang = results["/timeouts/hang.window.html"]
    assert hang["status"] == "TIMEOUT" and subtests(hang) == {"before the hang": "PASS"}
    crash = results["/timeouts/crash.window.html"]
    assert crash["status"] == "CRASH" and subtests(crash) == {"before the crash": "PASS"}
    assert crash["message"] == "the renderer process crashed"


def test_harness_timeout_starts_again_when_the_runtime_is_ready(runs):
    # 8 s of "boot", then 8 s of test, against a 12 s timeout: within it only when the timeout
    # starts again at the shim's ready mark (?ready), in a window and in every worker scope;
    # without the mark (?never) the same page times out.
    results = by_test(runs["timeouts"]["report"])
    for page in ("html", "worker.html", "sharedworker.html", "serviceworker.html"):
        ready = results[f"/timeouts/late_ready.any.{page}?ready"]
        never = results[f"/timeouts/late_ready.any.{page}?never"]
        assert ready["status"] == "OK" and set(subtests(ready).values()) == {"PASS"}, (page, ready)
        assert never["status"] == "TIMEOUT" and set(subtests(never).values()) == {"TIMEOUT"}, (page, never)


def test_unexpected_results_fail_the_run(runs):
    run = runs["timeouts"]
    assert run["code"] == 1
    assert "unexpected result(s)" in run["stdout"]
    crash = by_test(run["report"])["/timeouts/crash.window.html"]
    assert crash["expected"] == "OK"   # no expectations file: OK and PASS are expected


def test_written_baseline_accepts_the_same_results(runs):
    baseline = expectations.Expectations.load(runs["baseline"])
    for entry in runs["timeouts"]["report"]["results"]:
        result = TestResult(entry["test"], entry["status"],
                            subtests=[SubtestResult(s["name"], s["status"]) for s in entry["subtests"]])
        baseline.apply(result)
        assert result.unexpected_count() == 0, entry["test"]
