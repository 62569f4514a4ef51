"""ONNX Runtime Web latency: its WebNN EP over webnn-py's navigator.ml vs. its own wasm EP.

    .venv/bin/python bench/ort_bench.py [--models mobilenet transformer lstm embedding]
                                        [--warmup SECONDS] [--measure SECONDS] [--min-runs N]

One headless Chromium page loads the polyfill and ORT-web 1.30 (npm
onnxruntime-web, ort.all.min.mjs). For each model (the test models of tests/ort,
exported from torch into a temporary directory) it creates two sessions, one per
execution provider, warms each up for at least --warmup seconds on its own, then
times session.run() alternately on both until --measure seconds have passed,
so both sides share the machine's state (each sample averages a batch of runs
lasting ~20 ms, as the page's clock is coarsened to 0.1 ms). It prints median
latencies side by side
and their ratio (WebNN EP over webnn-py / wasm EP: above 1 means webnn-py is slower).
Both EPs run single-threaded: the page is not cross-origin isolated. Needs
./dev setup (Pyodide runtime, node_modules) and torch/onnx/onnxruntime on the host.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.ort.models import MODELS, export  # noqa: E402
from webnn_py.serve import PolyfillServer  # noqa: E402
from browsers.chromium import launch_chromium  # noqa: E402

ORT_DIST = REPO / "node_modules" / "onnxruntime-web" / "dist"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds of warm-up per EP (at least 5)")
    parser.add_argument("--measure", type=float, default=5.0, help="seconds of alternating timed runs")
    parser.add_argument("--min-runs", type=int, default=10, help="timed runs per EP at least")
    args = parser.parse_args(argv)
    if args.warmup < 5:
        parser.error("--warmup must be at least 5 s: V8 tiers wasm up gradually")
    if not (ORT_DIST / "ort.all.min.mjs").is_file():
        parser.error("node_modules/onnxruntime-web is missing: run ./dev setup")
    if not (REPO / "build" / "pyodide" / "pyodide.asm.wasm").is_file():
        parser.error("build/pyodide is missing: run ./dev setup")

    rows = []
    with tempfile.TemporaryDirectory(prefix="ort-bench-") as tmp:
        models = {name: export(name, Path(tmp)) for name in args.models}
        mounts = {"/ort/": ORT_DIST, "/models/": tmp}
        with PolyfillServer(root=Path(__file__).parent, mounts=mounts) as server, launch_chromium() as browser:
            page = browser.new_page()
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"{server.url}/ort_bench.html")
            page.wait_for_function("self.benchReady === true", timeout=60_000)
            for name, model in models.items():
                print(f"{name}: warming up {args.warmup:g} s per EP, then timing {args.measure:g} s ...",
                      file=sys.stderr, flush=True)
                result = page.evaluate("(a) => benchModel(a)", {
                    "url": f"/models/{model.path.name}",
                    "inputs": {k: {"data": v.ravel().tolist(), "dims": list(v.shape), "type": str(v.dtype)}
                               for k, v in model.inputs.items()},
                    "warmupMs": args.warmup * 1000, "measureMs": args.measure * 1000, "minRuns": args.min_runs,
                })
                if errors:
                    raise SystemExit(f"page errors: {errors}")
                webnn = statistics.median(result["times"]["webnn"])
                wasm = statistics.median(result["times"]["wasm"])
                timed = tuple(len(result["times"][ep]) * result["batch"][ep] for ep in ("webnn", "wasm"))
                warmed = tuple(result["warmup"][ep]["runs"] for ep in ("webnn", "wasm"))
                rows.append((name, model.node_count, webnn, wasm, webnn / wasm, timed, *warmed, result["maxDiff"]))

    header = ("model", "ONNX nodes", "WebNN EP / webnn-py ms", "wasm EP ms", "ratio", "timed runs (webnn, wasm)",
              "warm-up runs (webnn, wasm)", "max |Δ| between EPs")
    table = [header] + [(n, str(c), f"{a:.3f}", f"{b:.3f}", f"{r:.1f}×", f"{k[0]}, {k[1]}", f"{w1}, {w2}", f"{d:.1e}")
                        for n, c, a, b, r, k, w1, w2, d in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for i, row in enumerate(table):
        print("  ".join(cell.ljust(w) if j == 0 else cell.rjust(w) for j, (cell, w) in enumerate(zip(row, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print("\nmedian latency of session.run() in one headless Chromium page, EPs timed alternately after "
          f"≥{args.warmup:g} s warm-up each; ratio = WebNN EP over webnn-py / wasm EP")
    return 0


if __name__ == "__main__":
    sys.exit(main())
