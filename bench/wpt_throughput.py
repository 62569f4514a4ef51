"""What running WPT's webnn/ directory costs: builder calls, a page's boot, the whole directory.

    .venv/bin/python bench/wpt_throughput.py [--browser chromium|firefox|webkit] [--jobs N]
        [--boot-pages N] [--rounds N] [--snapshot-modes engine,boot,off] [--baseline TREE]
        [--wpt-root PATH]
        [--sample-chunks C | --whole] [--skip-calls] [--skip-boot]

1. Builder-call cost: bench/call_cost.py's page and mix (median ms per call over a
   validation file's mix of calls; issue 16's target <= 0.1 ms), a short run
   (Chromium; --skip-calls leaves it out).
2. Page boot in the runner: a test whose pages (window and dedicated worker, one
   `?n` variant each) only await navigator.ml.createContext() and report the
   shim's boot phases (its User Timing marks, ms since the page's or worker's time
   origin), run through the runner's CLI as the suite is (`--runtime shipped`,
   --jobs pages at once, a new runner per round: its browsers start cold), so the
   page time includes what the runner pays per test (tab, hook, harness, clean-up).
   Prints the median page time, the median time to a ready runtime and the median
   of each phase. --snapshot-modes boots with each --memory-snapshot mode, and
   --baseline TREE through another commit's runner (e.g. `git archive 8a31477 |
   tar -x -C TREE`, then link build/ and node_modules to this checkout's), the
   configurations alternating round by round, so load changes hit all alike.
3. The whole directory (with --wpt-root, an upstream checkout): every variant and
   global scope. `--sample-chunks C` (default 16) runs hash chunk 1 of C through the
   CLI and prints its wall time and that time scaled by (all URLs / sample URLs),
   labelled as an extrapolation; `--whole` runs them all (long: tens of minutes).

Prints the load average before and after each part. No assertion: numbers only.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
HARNESS = REPO / "node_modules" / "wpt-runner" / "testharness"

PHASE_PREFIX = "phases "
# A page that boots the runtime and reports the shim's marks in a subtest's name.
BOOT_TEST = """// META: global=window,dedicatedworker
{variants}
'use strict';
promise_test(async () => {{
  await navigator.ml.createContext();
  const phases = {{}};
  for (const mark of performance.getEntriesByType('mark')) {{
    if (mark.name.startsWith('webnn-py:')) phases[mark.name.slice(9)] = Math.round(mark.startTime);
  }}
  phases.context = Math.round(performance.now());
  test(() => {{}}, '{prefix}' + JSON.stringify(phases));
}}, 'createContext');
"""


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


# ---- 1. builder calls ---------------------------------------------------------------------

def builder_calls(samples: int, repeat: int, max_warmup: float) -> float:
    """Median ms per call of call_cost.py's mix, in one Chromium page."""
    from bench.call_cost import Side
    from webnn_py.serve import PolyfillServer
    from browsers.chromium import launch_chromium

    with launch_chromium() as browser, PolyfillServer(root=REPO / "bench") as server:
        side = Side(browser, server.url, repeat)
        side.warm_up(max_warmup)
        for _ in range(samples):
            side.builder_sample()
            side.trip_sample()
        if side.errors:
            raise SystemExit(f"page errors: {side.errors}")
        return side.medians()["median of the mix"]


# ---- 2. page boot -------------------------------------------------------------------------

def boot_tree(target: Path, pages: int) -> Path:
    """A WPT-format root holding testharness.js (npm wpt-runner's) and the boot test."""
    if not (HARNESS / "testharness.js").is_file():
        raise SystemExit("node_modules/wpt-runner is missing: run ./dev setup")
    (target / "resources").mkdir(parents=True)
    shutil.copy(HARNESS / "testharness.js", target / "resources" / "testharness.js")
    (target / "resources" / "testharnessreport.js").write_text("// inert\n")
    (target / "boot").mkdir()
    variants = "\n".join(f"// META: variant=?{n}" for n in range(1, pages + 1))
    (target / "boot" / "boot.https.any.js").write_text(BOOT_TEST.format(variants=variants, prefix=PHASE_PREFIX))
    return target


def run_pages(root: Path, browser: str, jobs: int, tree: Path, extra: list[str]) -> list[dict]:
    """The boot pages through `tree`'s runner CLI (this checkout's or a baseline's): wptreport results."""
    with tempfile.TemporaryDirectory(prefix="wpt-boot-report-") as folder:
        report = Path(folder) / "report.json"
        subprocess.run([sys.executable, "-m", "wpt_runner", "run", "--wpt-root", str(root), "boot/", "--browser",
                        browser, "--jobs", str(jobs), "-q", "--report", str(report), *extra],
                       cwd=tree, check=False, capture_output=True, text=True)
        if not report.is_file():
            raise SystemExit(f"no report from {tree}'s runner")
        return json.loads(report.read_text())["results"]


def phases_of(result: dict) -> dict | None:
    for subtest in result["subtests"]:
        if subtest["name"].startswith(PHASE_PREFIX):
            return json.loads(subtest["name"][len(PHASE_PREFIX):])
    return None


def summarize_boot(label: str, results: list) -> None:
    durations = [r["duration"] / 1000 for r in results]
    booted = [(r, phases_of(r)) for r in results]
    bad = [r["test"] for r, p in booted if p is None]
    marks = [p for _, p in booted if p]
    print(f"  {label}: {len(results)} pages, median page {statistics.median(durations):.2f} s "
          f"(min {min(durations):.2f}, max {max(durations):.2f})"
          + (f", ready in page median {statistics.median(p['context'] for p in marks) / 1000:.2f} s" if marks else "")
          + (f"; NOT BOOTED: {bad}" if bad else ""))
    for scope in ("html", "worker.html"):
        scoped = [p for r, p in booted if p and r["test"].split("?")[0].endswith(".any." + scope)]
        if not scoped:
            continue
        order = sorted(scoped[0], key=lambda name: scoped[0][name])
        steps = []
        for before, after in zip(order, order[1:]):
            gaps = [p[after] - p[before] for p in scoped if before in p and after in p]
            if gaps:
                steps.append(f"{after} {statistics.median(gaps) / 1000:.2f}")
        start = statistics.median(p[order[0]] for p in scoped) / 1000
        print(f"    {'window' if scope == 'html' else 'worker'}: {order[0]} at {start:.2f}, then " + ", ".join(steps))


def page_boot(browser: str, jobs: int, pages: int, rounds: int, modes: list[str], baseline: Path | None) -> None:
    """Each configuration's boot pages, round by round, alternating the order."""
    configs = [(f"--memory-snapshot {mode}", REPO, ["--memory-snapshot", mode]) for mode in modes]
    if baseline:
        configs.append((f"baseline {baseline.name}", baseline, []))
    collected: dict[str, list] = {label: [] for label, _, _ in configs}
    with tempfile.TemporaryDirectory(prefix="wpt-boot-") as folder:
        root = boot_tree(Path(folder), pages)
        for number in range(rounds):
            for label, tree, extra in (configs if number % 2 == 0 else configs[::-1]):
                collected[label] += run_pages(root, browser, jobs, tree, extra)
    for label, results in collected.items():
        summarize_boot(label, results)


# ---- 3. the directory ---------------------------------------------------------------------

def cli(wpt_root: Path, browser: str, jobs: int | None, extra: list[str]) -> list[str]:
    command = [sys.executable, "-m", "wpt_runner", "run", "--wpt-root", str(wpt_root), "webnn/",
               "--browser", browser] + extra
    return command + (["--jobs", str(jobs)] if jobs else [])


def directory(wpt_root: Path, browser: str, jobs: int | None, sample_chunks: int, whole: bool,
              keep_report: Path | None) -> None:
    listed = subprocess.run(cli(wpt_root, browser, None, ["--list"]), capture_output=True, text=True, cwd=REPO,
                            check=True).stdout.split()
    chunk = [] if whole else ["--total-chunks", str(sample_chunks), "--this-chunk", "1"]
    sample = len(listed) if whole else len(subprocess.run(cli(wpt_root, browser, None, ["--list"] + chunk),
                                                           capture_output=True, text=True, cwd=REPO,
                                                           check=True).stdout.split())
    expectations = REPO / "wpt_runner" / "expectations"
    layers = ["--expectations", str(expectations / "upstream-2025-03-31.json"),
              "--expectations", str(expectations / f"upstream-2025-03-31-{browser}.json")]
    with tempfile.TemporaryDirectory(prefix="wpt-dir-") as folder:
        report = Path(folder) / "report.json"
        print(f"  {load()} before; {sample} of {len(listed)} URLs" + ("" if whole else f" (hash chunk 1 of {sample_chunks})"),
              flush=True)
        started = time.monotonic()
        run = subprocess.run(cli(wpt_root, browser, jobs, chunk + layers + ["-q", "--report", str(report)]),
                             capture_output=True, text=True, cwd=REPO)
        wall = time.monotonic() - started
        results = json.loads(report.read_text())["results"] if report.is_file() else []
        if keep_report and report.is_file():
            shutil.copy(report, keep_report)
    subtests = [s for r in results for s in r["subtests"]]
    passed = sum(s["status"] == "PASS" for s in subtests)
    statuses = {}
    for result in results:
        statuses[result["status"]] = statuses.get(result["status"], 0) + 1
    durations = sorted(r["duration"] / 1000 for r in results)
    print(f"  {len(results)} pages {statuses}, {passed} of {len(subtests)} subtests pass "
          f"({100 * passed / max(1, len(subtests)):.1f} %), exit status {run.returncode} "
          f"({'all as expected' if run.returncode == 0 else 'unexpected results'})")
    if durations:
        print(f"  page median {statistics.median(durations):.1f} s, 90th percentile "
              f"{durations[int(0.9 * (len(durations) - 1))]:.1f} s")
    print(f"  wall {wall:.0f} s ({wall / 60:.1f} min) for {sample} URLs; {load()} after")
    if not whole:
        print(f"  EXTRAPOLATED to all {len(listed)} URLs: {wall * len(listed) / sample / 60:.1f} min "
              "(sample wall x all / sample; not a measured whole-directory run)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--browser", choices=("chromium", "firefox", "webkit"), default="chromium")
    parser.add_argument("--jobs", type=int, default=None, help="pages at once (default: the runner's default)")
    parser.add_argument("--boot-pages", type=int, default=4, help="boot pages per scope and round (window, worker)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of boot pages (configurations alternate)")
    parser.add_argument("--snapshot-modes", default="engine",
                        help="comma-separated --memory-snapshot modes to boot with, alternating (engine,boot,off)")
    parser.add_argument("--baseline", type=Path, metavar="TREE",
                        help="also boot through another commit's runner: a source tree (git archive) whose build/ "
                             "and node_modules link to this checkout's")
    parser.add_argument("--wpt-root", type=Path, help="an upstream web-platform-tests checkout: run its webnn/")
    parser.add_argument("--sample-chunks", type=int, default=16, help="run hash chunk 1 of this many and extrapolate")
    parser.add_argument("--whole", action="store_true", help="run every URL of webnn/ (no extrapolation)")
    parser.add_argument("--report", type=Path, metavar="FILE.json", help="keep the directory run's wptreport")
    parser.add_argument("--skip-calls", action="store_true", help="leave out the builder-call measurement")
    parser.add_argument("--skip-boot", action="store_true", help="leave out the page boot measurement")
    parser.add_argument("--call-samples", type=int, default=10)
    args = parser.parse_args()
    from wpt_runner.cli import default_jobs
    jobs = args.jobs or default_jobs()

    print(f"wpt_throughput: {args.browser}, {jobs} pages at once, {os.cpu_count()} CPUs, {load()}", flush=True)
    if not args.skip_calls:
        ms = builder_calls(args.call_samples, 50, 20.0)
        print(f"1. builder call (bench/call_cost.py's mix, Chromium, median of {args.call_samples} samples of "
              f"50 calls): {ms:.4f} ms (target <= 0.1); {load()}", flush=True)
    if not args.skip_boot:
        print(f"2. page boot in the runner ({args.boot_pages} window + {args.boot_pages} worker pages x "
              f"{args.rounds} rounds per runtime, {jobs} at a time; {load()}):", flush=True)
        page_boot(args.browser, jobs, args.boot_pages, args.rounds, args.snapshot_modes.split(","),
                  args.baseline.resolve() if args.baseline else None)
        print(f"  {load()}", flush=True)
    if args.wpt_root:
        print("3. the webnn/ directory, every variant and global scope:", flush=True)
        directory(args.wpt_root.resolve(), args.browser, args.jobs, args.sample_chunks, args.whole, args.report)


if __name__ == "__main__":
    main()
