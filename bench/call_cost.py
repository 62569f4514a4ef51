"""What one call into the polyfill costs in the page: builder calls and a tensor round trip.

    .venv/bin/python bench/call_cost.py [--repeat N] [--samples N] [--max-warmup S]
                                        [--baseline TREE]

In one headless Chromium page (bench/call_cost.html, polyfill served by
webnn_py.serve), page script times blocks of `--repeat` identical calls and divides:

- builder calls, in the mix of a WPT validation file: input(), constant(descriptor,
  buffer), add(), conv2d() with options, reshape(), relu(), and add() with a
  non-operand (a TypeError the page catches); the summary line is the median over
  all calls of the mix (issue 16's target: <= 0.1 ms);
- writeTensor + dispatch + await readTensor of c = a + b (2 float32 elements)
  (issue 17's target: <= 0.15 ms), and each of those three calls timed alone (`repeat`
  of it in a row): where the round trip goes.

`--baseline TREE` measures another version side by side in the same browser: TREE is a
source tree of another commit (`git archive <commit> | tar -x -C TREE`, with
`node_modules` and `build/cache` linked to this checkout's); its runtime is built
there and served by its own webnn_py.serve, the same page runs against each, and
the samples alternate between the two, so load changes hit both alike.

Each side warms up until the median of a batch of samples stops falling by more
than 2 % (at most --max-warmup seconds), then --samples samples are taken. Prints
medians per kind and the load average. No assertion: numbers only.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
BENCH = REPO / "bench"

BATCH = 5                 # samples per warm-up batch
SETTLED = 0.98            # a batch median above 98 % of the best so far: warm


def warm_up(sample, max_seconds: float) -> int:
    """Take batches of samples until a batch's median no longer beats the best by 2 %."""
    best, batches, start = float("inf"), 0, time.perf_counter()
    while time.perf_counter() - start < max_seconds:
        median = statistics.median(sample() for _ in range(BATCH))
        batches += 1
        if median > best * SETTLED:
            break
        best = min(best, median)
    return batches


def build_runtime(tree: Path) -> None:
    """The tree's build/pyodide, rebuilt from its sources (a hash check when nothing
    changed), as the browser tests' pyodide_runtime fixture does."""
    for step in ("build_kernels.py", "setup_runtime.py"):
        subprocess.run([sys.executable, str(tree / "tools" / step)], check=True, stdout=subprocess.DEVNULL, cwd=tree)


@contextlib.contextmanager
def baseline_server(tree: Path):
    """The baseline tree's polyfill server (its own webnn_py.serve, in a subprocess),
    also serving this checkout's bench pages; yields its URL."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from webnn_py.serve import main; "
            "main(['--port', '0', '--root', sys.argv[2]])")
    process = subprocess.Popen([sys.executable, "-c", code, str(tree), str(BENCH)], cwd=tree,
                               stdout=subprocess.PIPE, text=True)
    try:
        match = re.search(r'src="(http://[^/"]+)', process.stdout.readline())
        if not match:
            raise SystemExit("the baseline's server did not start")
        yield match.group(1)
    finally:
        process.terminate()
        process.wait()


class Side:
    """One version's page and samples."""

    def __init__(self, browser, url: str, repeat: int):
        self.page = browser.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(f"{url}/call_cost.html")
        self.page.wait_for_function("self.benchReady === true", timeout=120_000)
        self.page.evaluate("setUp()")
        self.page.evaluate("setUpRoundTrip()")
        self.repeat = repeat
        self.builder_samples: list[dict] = []
        self.trips: list[float] = []
        self.tensor_calls: list[dict] = []

    def builder_sample(self) -> float:
        per_kind = self.page.evaluate(f"builderRound({self.repeat})")
        self.builder_samples.append(per_kind)
        return statistics.median(per_kind.values())

    def trip_sample(self) -> float:
        ms = self.page.evaluate(f"roundTrips({self.repeat})")
        self.trips.append(ms)
        return ms

    def tensor_call_sample(self) -> None:
        self.tensor_calls.append(self.page.evaluate(f"tensorCalls({self.repeat})"))

    def warm_up(self, max_seconds: float) -> tuple[int, int]:
        batches = warm_up(self.builder_sample, max_seconds), warm_up(self.trip_sample, max_seconds)
        self.builder_samples.clear()
        self.trips.clear()
        return batches

    def medians(self) -> dict:
        kinds = list(self.builder_samples[0])
        out = {kind: statistics.median(s[kind] for s in self.builder_samples) for kind in kinds}
        out["median of the mix"] = statistics.median(s[kind] for s in self.builder_samples for kind in kinds)
        out["round trip"] = statistics.median(self.trips)
        for call in self.tensor_calls[0]:
            out[f"  {call}"] = statistics.median(s[call] for s in self.tensor_calls)
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50, help="calls per timed block")
    parser.add_argument("--samples", type=int, default=30, help="timed blocks after warm-up")
    parser.add_argument("--max-warmup", type=float, default=30.0, help="seconds of warm-up at most, per side")
    parser.add_argument("--baseline", type=Path, help="a source tree of another commit, measured side by side")
    args = parser.parse_args()

    from webnn_py.serve import PolyfillServer
    from browsers.chromium import launch_chromium

    build_runtime(REPO)
    trees = [("this", REPO)]
    if args.baseline:
        build_runtime(args.baseline.resolve())
        trees.append(("baseline", args.baseline.resolve()))
    load = [os.getloadavg()[0]]
    with contextlib.ExitStack() as stack:
        browser = stack.enter_context(launch_chromium())
        sides = {}
        for name, tree in trees:
            url = (stack.enter_context(PolyfillServer(root=BENCH)).url if tree == REPO
                   else stack.enter_context(baseline_server(tree)))
            sides[name] = Side(browser, url, args.repeat)
        warm = {name: side.warm_up(args.max_warmup) for name, side in sides.items()}
        load.append(os.getloadavg()[0])
        for _ in range(args.samples):      # alternate, so load changes hit every side alike
            for side in sides.values():
                side.builder_sample()
                side.trip_sample()
                side.tensor_call_sample()
        load.append(os.getloadavg()[0])
        errors = [f"{name}: {e}" for name, side in sides.items() for e in side.errors]
        if errors:
            raise SystemExit(f"page errors: {errors}")

    medians = {name: side.medians() for name, side in sides.items()}
    names = list(medians)
    print(f"median ms per call ({args.samples} samples of {args.repeat} calls each; warm-up batches "
          + ", ".join(f"{name}: {b} builder, {t} round trip" for name, (b, t) in warm.items()) + ")")
    print(f"  {'':20}" + "".join(f"{name:>10}" for name in names) + ("     ratio" if len(names) == 2 else ""))
    targets = {"median of the mix": "   (target <= 0.1)",
               "round trip": "   (writeTensor + dispatch + await readTensor; target <= 0.15)"}
    for kind in medians["this"]:
        row = [medians[name][kind] for name in names]
        ratio = f"{row[0] / row[1]:10.2f}" if len(row) == 2 and row[1] else ""
        print(f"  {kind:20}" + "".join(f"{value:10.4f}" for value in row) + ratio + targets.get(kind, ""))
    print("load average (1 min) at start, after warm-up, at end: " + " ".join(f"{x:.2f}" for x in load))


if __name__ == "__main__":
    main()
