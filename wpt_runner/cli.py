"""`python -m wpt_runner run --wpt-root PATH [TEST_PATH ...]`: the command line.

Exit status: 0 when every result was expected, 1 when some were not, 2 for
usage errors (a bad path, a bad expectations file).
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
import time
import urllib.parse
from pathlib import Path

from . import expectations as expectations_mod
from .manifest import CHUNK_TYPES, CLI_GLOBALS, discover, normalize_cli_globals, select_chunk
from .results import TestResult, default_run_info, summary_table, write_wptreport, wptreport
from .runtime import RUNTIMES, SNAPSHOT_MODES
from .wrappers import DEFAULT_POLYFILL_URL, Settings

ENGINES = ("chromium", "firefox", "webkit")

TEST_CRASH_ENV = "WPT_RUNNER_ALLOW_TEST_CRASH"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m wpt_runner",
                                     description="Run web-platform-tests against the webnn-py polyfill in a headless "
                                                 "browser (Chromium, Firefox or WebKit).")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run tests (or --list them)")
    run.add_argument("test_paths", nargs="*", metavar="TEST_PATH",
                     help="files, folders or test URLs under the WPT root (default: webnn/)")
    run.add_argument("--wpt-root", required=True, type=Path, help="a web-platform-tests checkout (the web root)")
    run.add_argument("--report", type=Path, metavar="FILE.json", help="write a wptreport JSON (wptrunner's --log-wptreport)")
    run.add_argument("--browser", choices=ENGINES, default="chromium",
                     help="the engine, through the browser layer (browsers/): chromium (the default), firefox, webkit")
    run.add_argument("--expectations", type=Path, action="append", metavar="FILE",
                     help="expected statuses (JSON; see wpt_runner/README.md); repeat to layer files: "
                          "a later file's entries win (e.g. the common file, then an engine's own)")
    run.add_argument("--write-expectations", type=Path, metavar="FILE",
                     help="write this run's results as an expectations file (a baseline)")
    run.add_argument("--jobs", "-j", type=int, default=None, help="pages at once (default: CPU count, at most 4)")
    run.add_argument("--timeout-multiplier", type=float, default=1.0, metavar="X",
                     help="scale the 10 s / 60 s (timeout=long) test timeouts")
    run.add_argument("--global", dest="globals", action="append", metavar="SCOPE",
                     help=f"only these global scopes ({', '.join(CLI_GLOBALS)}); repeat or comma-separate")
    run.add_argument("--include", action="append", metavar="PATTERN",
                     help="only test IDs matching this fnmatch pattern (repeatable)")
    run.add_argument("--exclude", action="append", metavar="PATTERN", help="drop test IDs matching this pattern")
    run.add_argument("--total-chunks", type=int, default=1, metavar="N",
                     help="split the selected tests into N chunks (for CI matrices; see --this-chunk)")
    run.add_argument("--this-chunk", type=int, default=1, metavar="K", help="run chunk K of N (1-based)")
    run.add_argument("--chunk-type", choices=CHUNK_TYPES, default="hash",
                     help="hash: by a hash of the test ID (stable when tests come and go; the default); "
                          "round-robin: every N-th test ID in sorted order (equal sizes)")
    run.add_argument("--repeat", type=int, default=1, metavar="N",
                     help="run the tests N times and list those whose results differ between runs (flaky)")
    run.add_argument("--list", action="store_true", help="print the test IDs that would run, then exit")
    run.add_argument("--polyfill-url", default=None,
                     help="load the polyfill from this URL (e.g. a `./dev serve` server) instead of serving it")
    run.add_argument("--no-polyfill", action="store_true", help="do not inject the polyfill (test the browser itself)")
    run.add_argument("--runtime", choices=RUNTIMES, default="shipped",
                     help="shipped: the polyfill as dist/ ships it, made from build/pyodide and js_shim/ at start "
                          "(the default: the fastest boot); build: build/pyodide as ./dev setup leaves it")
    run.add_argument("--memory-snapshot", choices=SNAPSHOT_MODES, default="engine",
                     help="the shipped runtime's memory snapshot: engine (the default): restored where it "
                          "speeds the boot up (JavaScriptCore), as dist/ does on a first visit; boot: in every "
                          "engine; off: none (never kept in Cache Storage either way)")
    run.add_argument("--port", type=int, default=0, help="port for the test server (default: any free port)")
    run.add_argument("--chromium-arg", action="append", default=[], metavar="ARG", help="extra Chromium flag")
    run.add_argument("--verbose", "-v", action="count", default=0,
                     help="-v: print every subtest that is not PASS; -vv: also page console errors")
    run.add_argument("--quiet", "-q", action="store_true", help="only the summary")
    return parser


def default_jobs() -> int:
    """Pages at once: the CPU count, at most 4 (each page boots its own Pyodide, CPU-bound)."""
    return min(4, os.cpu_count() or 1)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_command(args)


def _filter(tests, include, exclude):
    if include:
        tests = [t for t in tests if any(fnmatch.fnmatchcase(t.url, p) for p in include)]
    if exclude:
        tests = [t for t in tests if not any(fnmatch.fnmatchcase(t.url, p) for p in exclude)]
    return tests


def run_command(args) -> int:
    root: Path = args.wpt_root.resolve()
    if not root.is_dir():
        print(f"wpt_runner: --wpt-root {root} is not a directory", file=sys.stderr)
        return 2
    globals_filter = normalize_cli_globals(args.globals)
    unknown = (globals_filter or set()) - set(CLI_GLOBALS)
    if unknown:
        print(f"wpt_runner: unknown --global {', '.join(sorted(unknown))} (one of {', '.join(CLI_GLOBALS)})",
              file=sys.stderr)
        return 2
    try:
        found = discover(root, args.test_paths or ["webnn/"], globals_filter)
        expected = expectations_mod.Expectations.load_all(args.expectations or [])
    except (ValueError, OSError) as error:
        print(f"wpt_runner: {error}", file=sys.stderr)
        return 2
    tests = _filter(found.tests, args.include, args.exclude)
    if args.repeat < 1:
        print(f"wpt_runner: --repeat {args.repeat} must be at least 1", file=sys.stderr)
        return 2
    try:
        tests = select_chunk(tests, args.total_chunks, args.this_chunk, args.chunk_type)
    except ValueError as error:
        print(f"wpt_runner: {error}", file=sys.stderr)
        return 2

    if args.list:
        for item in tests:
            print(item.url)
        for source, reason in found.skipped:
            print(f"# not run: {source}: {reason}", file=sys.stderr)
        return 0

    to_run = [t for t in tests if not expected.skipped(t.url)]
    skipped = [TestResult(test=t.url, status="SKIP") for t in tests if expected.skipped(t.url)]
    jobs = args.jobs or default_jobs()
    return _run(args, root, to_run, skipped, expected, jobs)


def _run(args, root: Path, tests, skipped, expected, jobs: int) -> int:
    from .layer_runner import LayerRunner
    from .runner import Runner
    from .server import WptServer, frame_init_script

    polyfill_url = args.polyfill_url or DEFAULT_POLYFILL_URL
    runtime = None
    if not args.polyfill_url and not args.no_polyfill:
        from webnn_py.serve import RUNTIME_DIR
        if not (RUNTIME_DIR / "pyodide.asm.wasm").is_file():
            print(f"wpt_runner: no Pyodide runtime in {RUNTIME_DIR}: run ./dev setup first", file=sys.stderr)
            return 2
        if args.runtime == "shipped":
            from tools.build_dist import DistError
            from .runtime import shipped_runtime
            try:
                runtime = shipped_runtime(args.memory_snapshot)
            except DistError as error:
                print(f"wpt_runner: cannot make the shipped runtime ({error}); --runtime build serves "
                      "build/pyodide as it is", file=sys.stderr)
                return 2
    chromium = args.browser == "chromium"
    if not chromium:
        import browsers
        missing = browsers.unavailable(args.browser)
        if missing:
            print(f"wpt_runner: --browser {args.browser}: {missing}", file=sys.stderr)
            return 2
    settings = Settings(polyfill_url=polyfill_url, timeout_multiplier=args.timeout_multiplier,
                        inject_polyfill=not args.no_polyfill, post_reports=not chromium)
    progress = _Progress(len(tests) * args.repeat, args.verbose, args.quiet)
    time_start = int(time.time() * 1000)
    with WptServer(root, settings, port=args.port, log_requests=bool(os.environ.get("WPT_RUNNER_LOG_REQUESTS")),
                   runtime=runtime) as server:
        if not args.quiet:
            print(f"wpt_runner: {len(tests)} tests from {root} on {server.url}, {args.browser}, {jobs} at a time"
                  + (f", {len(skipped)} skipped by expectations" if skipped else ""), flush=True)

        def on_result(result: TestResult) -> None:
            expected.apply(result)
            progress.report(result)

        if chromium:
            frame_script = None
            if settings.inject_polyfill:
                absolute = urllib.parse.urljoin(server.url + "/", polyfill_url)
                frame_script = frame_init_script(absolute, external=bool(args.polyfill_url),
                                                 source=runtime.entry if runtime else None)
            runner = Runner(server.url, jobs=jobs, timeout_multiplier=args.timeout_multiplier,
                            chromium_args=args.chromium_arg, allow_test_crash=bool(os.environ.get(TEST_CRASH_ENV)),
                            on_result=on_result, frame_script=frame_script)
        else:
            # No init scripts there: frames a test makes by script get no polyfill (README).
            runner = LayerRunner(args.browser, server.url, server.reports, jobs=jobs,
                                 timeout_multiplier=args.timeout_multiplier, on_result=on_result)
        runs = []
        for iteration in range(args.repeat):
            if args.repeat > 1 and not args.quiet:
                print(f"wpt_runner: run {iteration + 1} of {args.repeat}", flush=True)
            runs.append(runner.run(tests))
    time_end = int(time.time() * 1000)
    for result in skipped:
        expected.apply(result)
    results = sorted([r for run in runs for r in run] + skipped, key=lambda r: r.test)

    print()
    print(summary_table(results) if results else "no tests")
    if args.repeat > 1:
        _print_flaky(runs)
    unexpected = [r for r in results if r.unexpected_count()]
    if unexpected:
        print(f"\n{sum(r.unexpected_count() for r in unexpected)} unexpected result(s) in {len(unexpected)} test(s):")
        for result in unexpected:
            if result.unexpected:
                print(f"  {result.test}: {result.status} (expected {' or '.join(result.expected)})"
                      + (f": {_one_line(result.message)}" if result.message else ""))
            for subtest in result.subtests:
                if subtest.unexpected:
                    print(f"  {result.test} | {subtest.name}: {subtest.status} (expected {' or '.join(subtest.expected)})"
                          + (f": {_one_line(subtest.message)}" if subtest.message else ""))
    else:
        print("\nall results as expected")
    if args.report:
        run_info = default_run_info(args.browser, runner.browser_version, None if args.no_polyfill else polyfill_url,
                                    jobs, args.timeout_multiplier)
        run_info["runtime"] = None if args.no_polyfill or args.polyfill_url else args.runtime
        if run_info["runtime"] == "shipped":
            run_info["memory_snapshot"] = args.memory_snapshot
        write_wptreport(args.report, wptreport(results, time_start, time_end, run_info))
        print(f"wptreport: {args.report}")
    if args.write_expectations:
        args.write_expectations.write_text(json.dumps(expectations_mod.from_results(results), indent=2,
                                                      ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"expectations: {args.write_expectations}")
    return 1 if unexpected else 0


def flaky_tests(runs: list[list[TestResult]]) -> dict[str, list[str]]:
    """Test ID -> what differed between repeated runs of the same tests: the harness
    status, or a subtest's status (a subtest missing from a run counts as "absent")."""
    by_test: dict[str, list[TestResult]] = {}
    for run in runs:
        for result in run:
            by_test.setdefault(result.test, []).append(result)
    flaky: dict[str, list[str]] = {}
    for test, results in sorted(by_test.items()):
        differences = []
        statuses = [r.status for r in results]
        if len(set(statuses)) > 1:
            differences.append(f"harness {' / '.join(statuses)}")
        names = sorted({s.name for r in results for s in r.subtests})
        for name in names:
            seen = [next((s.status for s in r.subtests if s.name == name), "absent") for r in results]
            if len(set(seen)) > 1:
                differences.append(f"{name}: {' / '.join(seen)}")
        if differences:
            flaky[test] = differences
    return flaky


def _print_flaky(runs: list[list[TestResult]]) -> None:
    flaky = flaky_tests(runs)
    if not flaky:
        print(f"\nno flaky tests: every test gave the same results in all {len(runs)} runs")
        return
    print(f"\n{len(flaky)} flaky test(s): results differed between the {len(runs)} runs")
    for test, differences in flaky.items():
        print(f"  {test}")
        for line in differences:
            print(f"    {_one_line(line)}")


def _one_line(text: str | None, limit: int = 200) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class _Progress:
    """One line per finished test, prefixed with the running counts."""

    def __init__(self, total: int, verbose: int, quiet: bool):
        self.total, self.verbose, self.quiet = total, verbose, quiet
        self.done = 0
        self.passed = 0      # subtests
        self.failed = 0      # subtests not PASS
        self.unexpected = 0
        self.started = time.monotonic()

    def report(self, result: TestResult) -> None:
        self.done += 1
        counts = result.subtest_counts()
        self.passed += counts.get("PASS", 0)
        self.failed += sum(counts.values()) - counts.get("PASS", 0)
        self.unexpected += result.unexpected_count()
        if self.quiet:
            return
        width = len(str(self.total))
        bar_width = 20
        filled = int(bar_width * self.done / max(1, self.total))
        bar = "#" * filled + "." * (bar_width - filled)
        subtests = sum(counts.values())
        line = (f"[{bar}] {self.done:>{width}}/{self.total} pass {self.passed} fail {self.failed}"
                f" unexpected {self.unexpected} | {result.status:<7} {counts.get('PASS', 0)}/{subtests}"
                f" {result.test} ({result.duration_ms / 1000:.1f}s)")
        if result.unexpected_count():
            line += "  UNEXPECTED"
        print(line, flush=True)
        if result.message and (self.verbose or result.status != "OK"):
            print(f"    harness: {_one_line(result.message)}")
        if self.verbose:
            for subtest in result.subtests:
                if subtest.status != "PASS" or self.verbose > 1:
                    print(f"    {subtest.status}: {subtest.name}" + (f": {_one_line(subtest.message)}" if subtest.message else ""))
        if self.verbose > 1:
            for line in result.console:
                print(f"    {_one_line(line, 400)}")
