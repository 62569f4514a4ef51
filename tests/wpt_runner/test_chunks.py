"""--total-chunks N --this-chunk K [--chunk-type]: the chunks partition the selected test IDs
exactly (each ID in exactly one chunk) for several N, through the CLI on the self-test tree
(tree/chunks/: 31 IDs from .any.js scopes and variants, .window.js, .worker.js and an HTML
test with variants), and in process for more N; plus the flaky-test comparison of --repeat."""
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from wpt_runner.cli import flaky_tests
from wpt_runner.expectations import from_results
from wpt_runner.manifest import TestItem, chunk_of, select_chunk
from wpt_runner.results import SubtestResult, TestResult

REPO = Path(__file__).resolve().parents[2]
TREE = Path(__file__).parent / "tree"


def listing(*args) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "wpt_runner", "run", "--wpt-root", str(TREE), "chunks/", "--list",
                           *map(str, args)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.fixture(scope="module")
def every_id():
    ids = listing()
    assert len(ids) == 31 and len(set(ids)) == 31
    return ids


def assert_partition(chunks: list[list[str]], every: list[str]) -> None:
    seen = [test for chunk in chunks for test in chunk]
    assert sorted(seen) == sorted(every), "every ID in exactly one chunk (no loss, no duplicate)"
    for chunk in chunks:
        assert chunk == sorted(chunk)          # each chunk keeps the listing's order


@pytest.mark.parametrize("chunk_type,total", [("hash", 2), ("hash", 3), ("hash", 5), ("round-robin", 4)])
def test_cli_chunks_partition_the_listing(every_id, chunk_type, total):
    chunks = [listing("--total-chunks", total, "--this-chunk", k, "--chunk-type", chunk_type)
              for k in range(1, total + 1)]
    assert_partition(chunks, every_id)
    assert all(chunks), "31 IDs over at most 5 chunks: none is empty for these N"
    if chunk_type == "round-robin":
        assert max(map(len, chunks)) - min(map(len, chunks)) <= 1


def items(ids):
    return [TestItem(url=i, scope="window", timeout="normal", source=i) for i in ids]


@pytest.mark.parametrize("chunk_type", ["hash", "round-robin"])
def test_partition_for_many_n(every_id, chunk_type):
    tests = items(every_id)
    for total in range(1, 13):
        chunks = [[t.url for t in select_chunk(tests, total, k, chunk_type)] for k in range(1, total + 1)]
        assert_partition(chunks, every_id)
    assert [t.url for t in select_chunk(tests, 1, 1, chunk_type)] == every_id


def test_hash_chunks_depend_on_the_id_alone(every_id):
    # MD5's first 8 bytes, big-endian, mod N, 1-based: computed here by hand for one ID.
    test_id = "/chunks/plain.window.html"
    digest = hashlib.md5(test_id.encode()).hexdigest()
    assert chunk_of(test_id, 7) == int(digest[:16], 16) % 7 + 1
    # Dropping tests from the selection moves no remaining test to another chunk.
    full = {t.url: k for k in range(1, 4) for t in select_chunk(items(every_id), 3, k)}
    subset = every_id[::3]
    for k in range(1, 4):
        assert all(full[t.url] == k for t in select_chunk(items(subset), 3, k))


@pytest.mark.parametrize("args,message", [
    (("--total-chunks", 3, "--this-chunk", 4), "--this-chunk 4 must be between 1 and --total-chunks 3"),
    (("--total-chunks", 0, "--this-chunk", 1), "--this-chunk 1 must be between 1 and --total-chunks 0"),
    (("--this-chunk", 0), "--this-chunk 0 must be between 1"),
    (("--repeat", 0), "--repeat 0 must be at least 1"),
])
def test_bad_chunk_and_repeat_arguments_are_usage_errors(args, message):
    done = subprocess.run([sys.executable, "-m", "wpt_runner", "run", "--wpt-root", str(TREE), "chunks/", "--list",
                           *map(str, args)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and message in done.stderr, done.stderr


def result(test, status, subtests):
    return TestResult(test=test, status=status, subtests=[SubtestResult(name=n, status=s) for n, s in subtests])


def test_flaky_tests_and_the_baseline_of_repeated_runs():
    runs = [
        [result("/a.html", "OK", [("one", "PASS"), ("two", "FAIL")]), result("/b.html", "OK", [("x", "PASS")]),
         result("/c.html", "OK", [("y", "PASS")])],
        [result("/a.html", "OK", [("one", "PASS"), ("two", "FAIL")]), result("/b.html", "TIMEOUT", [("x", "TIMEOUT")]),
         result("/c.html", "OK", [])],
    ]
    assert flaky_tests(runs) == {"/b.html": ["harness OK / TIMEOUT", "x: PASS / TIMEOUT"],
                                 "/c.html": ["y: PASS / absent"]}
    assert flaky_tests(runs[:1]) == {}
    baseline = from_results([r for run in runs for r in run])
    assert baseline == {"/a.html": {"status": "OK", "subtests": {"two": "FAIL"}},
                        "/b.html": {"status": ["OK", "TIMEOUT"], "subtests": {"x": ["PASS", "TIMEOUT"]}}}


def test_repeat_runs_every_test_n_times_in_the_browser(wpt_root, tmp_path):
    """--repeat 3 over two tests of one chunk-split folder (no polyfill: no Python boot):
    each ID three times in the report, and stable tests are reported as not flaky."""
    report = tmp_path / "r.json"
    done = subprocess.run([sys.executable, "-m", "wpt_runner", "run", "--wpt-root", str(wpt_root),
                           "chunks/plain.window.js", "chunks/nested/worker.worker.js", "--no-polyfill",
                           "--repeat", "3", "--report", str(report), "--jobs", "2", "--timeout-multiplier", "3"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "run 3 of 3" in done.stdout and "no flaky tests" in done.stdout, done.stdout
    tests = [r["test"] for r in json.loads(report.read_text())["results"]]
    assert sorted(tests) == ["/chunks/nested/worker.worker.html"] * 3 + ["/chunks/plain.window.html"] * 3
