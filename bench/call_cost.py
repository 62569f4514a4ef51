"""What one call into the polyfill costs in the page: builder calls and a tensor round trip.

    .venv/bin/python bench/call_cost.py [--repeat N] [--samples N] [--max-warmup S]

In one headless Chromium page (bench/call_cost.html, polyfill served by
webnn_py.serve), page script times blocks of `--repeat` identical calls and divides:

- builder calls, in the mix of a WPT validation file: input(), constant(descriptor,
  buffer), add(), conv2d() with options, reshape(), relu(), and add() with a
  non-operand (a TypeError the page catches); the summary line is the median over
  all calls of the mix (issue 16's target: <= 0.1 ms);
- writeTensor + dispatch + await readTensor of c = a + b (2 float32 elements)
  (issue 17's target: <= 0.15 ms).

Each side warms up until the median of a batch of samples stops falling by more
than 2 % (at most --max-warmup seconds), then --samples samples are taken. Prints
medians per kind and the load average. No assertion: numbers only.
"""
from __future__ import annotations

import argparse
import os
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50, help="calls per timed block")
    parser.add_argument("--samples", type=int, default=30, help="timed blocks after warm-up")
    parser.add_argument("--max-warmup", type=float, default=30.0, help="seconds of warm-up at most, per side")
    args = parser.parse_args()

    from webnn_py.serve import PolyfillServer
    from wpt_runner.chromium import launch_chromium

    # The page loads build/pyodide's wheel: rebuilt from the current sources first, as the
    # browser tests' pyodide_runtime fixture does (a hash check when nothing changed).
    for step in ("build_kernels.py", "setup_runtime.py"):
        subprocess.run([sys.executable, str(REPO / "tools" / step)], check=True, stdout=subprocess.DEVNULL)

    with PolyfillServer(root=BENCH) as server, launch_chromium() as browser:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{server.url}/call_cost.html")
        page.wait_for_function("self.benchReady === true", timeout=120_000)
        page.evaluate("setUp()")
        page.evaluate("setUpRoundTrip()")

        def builder_sample() -> float:
            per_kind = page.evaluate(f"builderRound({args.repeat})")
            builder_samples.append(per_kind)
            return statistics.median(per_kind.values())

        def trip_sample() -> float:
            return page.evaluate(f"roundTrips({args.repeat})")

        builder_samples: list[dict] = []
        builder_batches = warm_up(builder_sample, args.max_warmup)
        trip_batches = warm_up(trip_sample, args.max_warmup)
        builder_samples.clear()
        trips = []
        for _ in range(args.samples):      # alternate, so load changes hit both alike
            builder_sample()
            trips.append(trip_sample())
        if errors:
            raise SystemExit(f"page errors: {errors}")

    kinds = list(builder_samples[0])
    print(f"builder calls, median ms per call ({args.samples} samples of {args.repeat} calls each, "
          f"after {builder_batches} warm-up batches):")
    for kind in kinds:
        print(f"  {kind:18} {statistics.median(s[kind] for s in builder_samples):8.4f}")
    every_call = [s[kind] for s in builder_samples for kind in kinds]
    print(f"  {'median of the mix':18} {statistics.median(every_call):8.4f}   (target <= 0.1)")
    print(f"writeTensor + dispatch + readTensor, median ms per round trip "
          f"(after {trip_batches} warm-up batches): {statistics.median(trips):.4f}   (target <= 0.15)")
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
