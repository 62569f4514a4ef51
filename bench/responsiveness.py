"""What cooperative dispatch costs and buys, side by side in one headless Chromium.

    .venv/bin/python bench/responsiveness.py [--repeat N]

Runs the long jobs of tests/browser/pages/responsive.html (300 chained 128x128
matmuls; a 30,000-iteration loop) alternately with the default time slice
(8 ms) and with slicing off (timeSlice: 0), N times each, and prints medians of
the run time (dispatch → readTensor resolved), the longest and 90th-percentile
gap between setInterval(10 ms) ticks, the animation frames seen, and the
run-time ratio sliced / unsliced. No assertion: numbers only.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

JOBS = {"matmul chain (300 x 128x128)": ("matmul", 128, 300), "loop (30,000 iterations)": ("loop", 30000, 10**6)}
MODES = {"sliced (8 ms)": "", "unsliced": "?slice=0"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from webnn_py.serve import PolyfillServer
    from browsers.chromium import launch_chromium

    results: dict[tuple[str, str], list[dict]] = {}
    with PolyfillServer(root=REPO / "tests" / "browser" / "pages") as server, launch_chromium() as browser:
        for _ in range(args.repeat):
            for job, (kind, a, b) in JOBS.items():
                for mode, query in MODES.items():     # alternate, so load changes hit both alike
                    page = browser.new_page()
                    page.goto(f"{server.url}/responsive.html{query}")
                    page.evaluate("window.ready")
                    results.setdefault((job, mode), []).append(page.evaluate(f"longRun({kind!r}, {a}, {b})"))
                    page.close()

    print(f"{'job':30} {'mode':14} {'run ms':>8} {'max gap':>8} {'p90 gap':>8} {'frames':>7}")
    for job in JOBS:
        medians = {}
        for mode in MODES:
            runs = results[(job, mode)]
            med = {key: statistics.median(r[key] for r in runs) for key in ("ms", "maxGapMs", "p90GapMs", "frames")}
            medians[mode] = med
            print(f"{job:30} {mode:14} {med['ms']:8.0f} {med['maxGapMs']:8.1f} {med['p90GapMs']:8.1f} "
                  f"{med['frames']:7.0f}")
        ratio = medians["sliced (8 ms)"]["ms"] / medians["unsliced"]["ms"]
        print(f"{job:30} {'sliced/unsliced run time':>25}: {ratio:.2f}")


if __name__ == "__main__":
    main()
