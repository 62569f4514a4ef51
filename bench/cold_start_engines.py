"""Cold start per engine, side by side: navigation → createContext() resolved in
Chromium, Firefox and WebKit, through the shared browser layer (browsers/).

    .venv/bin/python bench/cold_start_engines.py [--rounds N] [--browser chromium,firefox,webkit]
                                                 [--source dist|dev] [--no-build]
                                                 [--dist LABEL=DIR ...]

The page and the shim's phase marks are bench/cold_start.py's; the polyfill is dist/ (rebuilt
by tools/build_dist.py unless --no-build) from webnn_py.serve's /dist/ route, as a page gets it
from a good static host, or with --source dev the dev server's /webnn-polyfill.js on build/pyodide. Each round opens
the page once per engine, in turn (so load changes hit every engine alike), each
time in a freshly launched browser (empty cache, every asset fetched again from the
local server). Prints per engine the median of each phase and of the total, and
the total's ratio to Chromium's, with the load average before and after. No
assertion: numbers only, and noisy on a shared machine.

`--dist LABEL=DIR` (repeatable) runs the page on each of these built dist/ folders instead
(e.g. `tools/build_dist.py --out DIR` before and after a change), each from a server of its
own, in turn within every round and engine, and prints each one's table and its totals'
ratio to the first's, engine by engine.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for path in (REPO, REPO / "bench"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from cold_start import PAGE, PHASES  # noqa: E402


def phases(result: dict) -> dict[str, float]:
    """Milliseconds spent in each phase (since the previous mark), and the total."""
    spent, previous = {}, 0.0
    for phase in PHASES:
        if phase in result["marks"]:
            spent[phase] = result["marks"][phase] - previous
            previous = result["marks"][phase]
    spent["total"] = result["resolved"]
    return spent


def main() -> None:
    import browsers
    from webnn_py.serve import PolyfillServer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--browser", default=",".join(browsers.ENGINES), help="comma list of engines")
    parser.add_argument("--source", choices=("dist", "dev"), default="dist")
    parser.add_argument("--no-build", action="store_true", help="use dist/ as it is")
    parser.add_argument("--dist", action="append", default=[], metavar="LABEL=DIR",
                        help="compare built dist/ folders side by side (repeatable; implies --no-build)")
    args = parser.parse_args()
    folders = dict(entry.split("=", 1) for entry in args.dist) if args.dist else {args.source: None}
    if args.source == "dist" and not args.no_build and not args.dist:
        subprocess.run([sys.executable, str(REPO / "tools" / "build_dist.py")], check=True)
    engines = [e.strip() for e in args.browser.split(",") if e.strip()]

    load_before = os.getloadavg()[0]
    runs = {label: {engine: [] for engine in engines} for label in folders}
    versions: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as root, contextlib.ExitStack() as servers:
        script = "/dist/webnn-polyfill.js" if args.source == "dist" else "/webnn-polyfill.js"
        (Path(root) / "index.html").write_text(PAGE % {"script": script})
        # dist/ (or each --dist folder) on /dist/, build/pyodide behind /webnn-polyfill.js
        urls = {label: servers.enter_context(PolyfillServer(root=root, **({"dist": folder} if folder else {}))).url
                for label, folder in folders.items()}
        for round_number in range(args.rounds):
            for engine in engines:
                for label, url in urls.items():
                    with browsers.launch(engine) as browser, browser.new_page() as page:
                        versions[engine] = browser.version
                        page.goto(f"{url}/index.html")
                        result = page.evaluate("self.result")
                    if "error" in result:
                        raise SystemExit(f"{engine} ({label}): createContext() rejected: {result['error']}")
                    runs[label][engine].append(phases(result))
                    print(f"round {round_number + 1}, {engine} ({label}): createContext() resolved at "
                          f"{result['resolved']:.0f} ms", file=sys.stderr, flush=True)

    print(f"{args.rounds} rounds, a fresh browser per run, medians in ms (load average {load_before:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after)")
    first = next(iter(runs))
    for label, by_engine in runs.items():
        print(f"{label}{'' if folders[label] is None else ': ' + folders[label]}")
        columns = [p for p in PHASES if all(p in run for runs_of in by_engine.values() for run in runs_of)] + ["total"]
        print(f"{'engine':28}" + "".join(f"{c:>12}" for c in columns) + f"{'vs chromium':>13}"
              + ("" if label == first else f"{'vs ' + first:>14}"))
        base = statistics.median(r["total"] for r in by_engine["chromium"]) if "chromium" in by_engine else None
        for engine, engine_runs in by_engine.items():
            medians = [statistics.median(r[c] for r in engine_runs) for c in columns]
            ratio = f"{medians[-1] / base:13.2f}" if base else ""
            if label != first:
                ratio += f"{medians[-1] / statistics.median(r['total'] for r in runs[first][engine]):14.2f}"
            print(f"{engine + ' ' + versions[engine]:28}" + "".join(f"{m:12.0f}" for m in medians) + ratio)

if __name__ == "__main__":
    main()
