"""The benchmark zoo: webnn-py against ONNX Runtime on CNNs, transformers, RNNs and one Add.

    .venv/bin/python bench/zoo.py [--models NAME ...] [--min-warmup S] [--max-warmup S]
                                  [--measure S] [--browser chromium|firefox|webkit]
                                  [--time-slice MS] [--post-task MODE]
                                  [--skip-browser] [--skip-host] [--quick] [--json FILE]

Models (bench/zoo_models.py): mobilenet_v2, resnet18, mobilenet_v3_small, squeezenet1_1,
efficientnet_b0 (torchvision's layer structures, 224×224, random weights with calibrated
batch-norm statistics), vit_block (197×192), transformer (2 layers, seq 128, hidden 256,
FFN 1024), lstm and gru (32 steps, 64 → 128) and add (one Add node: the cost of a run),
fp32, batch 1, exported to ONNX on the host (torch's TorchScript exporter).

Browser: one headless engine (--browser: Chromium by default, Firefox or WebKit, through the
browsers/ layer), two cross-origin-isolated pages, so webnn-py and ORT-web's wasm EP run in
the same engine. Page 1 has three sides per model: ONNX Runtime Web 1.30 (ort.all) through its
WebNN EP over webnn-py's navigator.ml ("webnn-py", or EP; webnn-py on one thread, `kernelThreads:
0`; its kernel pool against ORT's 2 threads is bench/threads.py's); the same ONNX graph on
navigator.ml with no ORT in between ("webnn-py (builder)": bench/onnx_webnn.py's translation,
recorded on the host by bench/webnn_recording.py and replayed by page script through
MLGraphBuilder; a run is writeTensor per input → dispatch → readTensor per output); and ORT's
wasm EP with 1 thread. Page 2 runs ORT's wasm EP with 2 threads (ORT reads the thread count
once per page). Before timing, a check session with ORT's verbose log must show every node
placed on the WebNN EP, and every side's first outputs must match onnxruntime CPU on the host
(allclose, rtol = atol = 1e-3). Each side warms up alone until the median of its last window of
runs (≥ 1 s, ≥ 5 runs) is no more than 2 % below the previous window's (≥ --min-warmup s,
≤ --max-warmup s), then the four are timed in alternation (a few runs each per turn, after a
50 ms pause and one untimed run, in an order rotated every turn) until --measure s have passed.
Medians, the ratios of both webnn-py sides against ORT-web wasm 1 and 2 threads, their
geometric means and the load average are printed, then where a builder run goes: a few hundred
more builder runs with each call timed on its own (the writes, dispatch(), the awaited reads).
--time-slice MS and --post-task MODE set the polyfill's timeSlice and postTask in both pages
(README "Responsiveness": how a dispatch's later slices are scheduled), e.g. --time-slice 0 to
see what slicing costs in an engine.

Host: webnn_py on CPython (the ONNX graph translated to builder calls by bench/onnx_webnn.py,
writeTensor → dispatch → readTensor) against onnxruntime native, CPU EP, 1 thread, as in
bench/webnn_bench.py. Exits with status 1 if any side's output disagrees or a node is not
on WebNN. Timings are noisy on a shared machine; ratios measured side by side are what count.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import tempfile
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")     # numpy's BLAS on one thread, like onnxruntime's intra_op_num_threads=1

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
for _path in (str(REPO), str(BENCH)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from onnx_webnn import emit_onnx  # noqa: E402
from webnn_recording import record  # noqa: E402
from webnn_bench import (COI_HEADERS, ORT_DIST, _quiet_disconnects, alternate, compare, host_benches,  # noqa: E402
                         median_ms, prepare_browser_runtime, print_table)
from zoo_models import ZOO, export_zoo  # noqa: E402

TOLERANCE = 1e-3          # rtol = atol, as tests/ort: ORT-web's kernels differ from ORT native's in the last bits
DROP = 0.02               # warm-up ends when a window's median falls by no more than this
# side: (page index, kind in zoo.mjs); "webnn-py" runs through ORT-web's WebNN EP.
EP, BUILDER = "webnn-py", "webnn-py (builder)"
SIDES = {EP: (0, "webnn"), BUILDER: (0, "builder"), "ORT-wasm 1T": (0, "wasm"), "ORT-wasm 2T": (1, "wasm")}
PHASE_RUNS = 200          # builder runs with each call timed on its own, after the alternation


class Prepared:
    """A zoo model's ONNX file and inputs in the served directory, with onnxruntime native (1 thread)."""

    def __init__(self, name: str, directory: Path):
        import onnxruntime

        self.zoo = export_zoo(name, directory)
        self.name, self.inputs, self.reference = name, self.zoo.inputs, self.zoo.reference
        self.output_names = list(self.reference)
        self.rtol = self.atol = TOLERANCE
        (directory / f"{name}.inputs.bin").write_bytes(b"".join(a.tobytes() for a in self.inputs.values()))
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        self.ort = onnxruntime.InferenceSession(str(self.zoo.path), options, providers=["CPUExecutionProvider"])

    def emit(self, builder) -> dict:
        return emit_onnx(self.zoo.path, builder)

    def write_recording(self, directory: Path, context) -> None:
        """NAME.webnn.json + NAME.webnn.bin: the builder calls of emit() for zoo.mjs's builder side."""
        text, blob = record(self.emit, context)
        (directory / f"{self.name}.webnn.json").write_text(text)
        (directory / f"{self.name}.webnn.bin").write_bytes(blob)


def placed_on_webnn(log: list[str]) -> bool:
    """ORT's verbose log of the WebNN EP's check session: every node on WebNN, none refused."""
    text = "\n".join(log)
    return "All nodes placed on [WebNNExecutionProvider]" in text and "supported: [0]" not in text


class EvaluatingPage:
    """A browsers.Page with the call style the timing loop uses (webnn_bench.alternate):
    evaluate(function source, argument) calls the page function with the JSON argument."""

    def __init__(self, page):
        self.page = page

    def evaluate(self, source: str, arg=None):
        return self.page.evaluate(source if arg is None else f"({source})({json.dumps(arg)})")


@contextlib.contextmanager
def zoo_pages(directory: Path, engine: str, page_file: str, queries: list[str]):
    """(engine name, [EvaluatingPage]): `page_file` (zoo.html or threads.html) once per query,
    cross-origin isolated, from one server and one browser, each booted."""
    import browsers
    from webnn_py.serve import PolyfillServer

    # /ort-pages/: the tests' page scripts the zoo pages share (the console capture).
    mounts = {"/ort/": ORT_DIST, "/models/": directory, "/ort-pages/": REPO / "tests" / "ort" / "pages"}
    with PolyfillServer(root=BENCH, mounts=mounts, headers=COI_HEADERS) as server, \
            browsers.launch(engine) as browser:
        _quiet_disconnects(server.httpd)
        pages = []
        for query in queries:
            page = browser.new_page()
            page.goto(f"{server.url}/{page_file}?{query}")
            page.wait_for("self.zooReady === true", timeout=600)
            pages.append(EvaluatingPage(page))
        yield f"{browser.engine} {browser.version}", pages


def run_model(pages: list, sides: dict, name: str, p: Prepared, warm: dict, measure: float, min_runs: int) -> dict:
    """One model on every side ({side: (page index, kind)}): set up (outputs compared with
    onnxruntime's), warmed up until each side's median settles, then timed in alternation."""
    dims = {k: list(v.shape) for k, v in p.inputs.items()}
    seen = [len(page.page.console) for page in pages]
    setups = {side: pages[page].evaluate("(a) => setup(a)", {"kind": kind, "name": name, "dims": dims})
              for side, (page, kind) in sides.items()}
    diffs = {side: compare(s["output"], p.reference, p.rtol, p.atol) for side, s in setups.items()}
    warmed = {side: pages[page].evaluate("([k, o]) => warmUp(k, o)", [kind, warm])
              for side, (page, kind) in sides.items()}
    times = alternate({side: (pages[page], kind) for side, (page, kind) in sides.items()}, measure, min_runs)
    split = {side: pages[page].evaluate("([k, n]) => phases(k, n)", [kind, PHASE_RUNS])
             for side, (page, kind) in sides.items() if kind == "builder"}
    for page in pages:
        page.evaluate("release()")
    errors = [e for page in pages for e in page.page.errors]
    # A dispatch that fails leaves its outputs as they were and is only logged (the spec cannot
    # report it yet), so a side whose runs fail after its checked setup would time as fast:
    # webnn-py's console errors during the model fail the benchmark as the page's errors do.
    errors += [m.text for page, n in zip(pages, seen) for m in page.page.console[n:]
               if m.level == "error" and m.text.startswith("webnn-py:")]
    if errors:
        raise SystemExit(f"page errors: {errors}")
    return {"times": times, "warm": warmed, "diffs": diffs, "setups": setups, "phases": split}


def browser_bench(prepared: dict[str, Prepared], directory: Path, warm: dict, measure: float, min_runs: int,
                  engine: str = "chromium", page_query: str = "") -> dict:
    import asyncio

    import webnn_py

    context = asyncio.run(webnn_py.ml.createContext())      # validates and shapes the recorded calls
    for p in prepared.values():
        p.write_recording(directory, context)
    out = {}
    with zoo_pages(directory, engine, "zoo.html", [f"threads=1{page_query}", f"threads=2{page_query}"]) \
            as (out["engine"], pages):
        out["isolated"] = pages[0].evaluate("self.crossOriginIsolated")
        out["page options"] = pages[0].evaluate("JSON.stringify(self.webnnPolyfillConfig)")
        for name, p in prepared.items():
            print(f"{engine}, {name}: warming each side up until its median settles, then timing {measure:g} s ...",
                  file=sys.stderr, flush=True)
            r = run_model(pages, SIDES, name, p, warm, measure, min_runs)
            setups = r.pop("setups")
            out[name] = {**r, "on_webnn": placed_on_webnn(setups[EP]["log"]),
                         "placement": setups[EP]["log"], "threads": setups["ORT-wasm 2T"]["threads"]}
    return out


def geomean(values) -> float:
    values = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


# Rows that time the cost of a run, not a model (issue 17 gives that cost its own target, so
# the models' geometric mean is printed without them as well).
PER_RUN_COST = ("add",)


def geomean_rows(names: list[str], columns: list[list[float]]) -> list[tuple[str, list[float]]]:
    """("geometric mean", its value per column) over every row, and over the models alone
    when a per-run-cost row is among them."""
    rows = [("geometric mean", [geomean(c) for c in columns])]
    models = [i for i, name in enumerate(names) if name not in PER_RUN_COST]
    if 0 < len(models) < len(names):
        rows.append((f"geometric mean, models (no {', '.join(PER_RUN_COST)})",
                     [geomean([c[i] for i in models]) for c in columns]))
    return rows


def report_browser(browser: dict, names: list[str]) -> bool:
    ok = True
    ours = (EP, BUILDER)
    rows, ratios = [], {(side, base): [] for side in ours for base in ("ORT-wasm 1T", "ORT-wasm 2T")}
    for name in names:
        r = browser[name]
        med = {side: median_ms(t) for side, t in r["times"].items()}
        for side, base in ratios:
            ratios[side, base].append(med[side] / med[base])
        warm = " / ".join(f"{w['ms'] / 1000:.0f}{'' if w['settled'] else '!'}" for w in r["warm"].values())
        good = all(d[1] for d in r["diffs"].values()) and r["on_webnn"]
        ok = ok and good
        rows.append((name, *(f"{med[side]:.3f}" for side in SIDES), *(f"{q[-1]:.2f}×" for q in ratios.values()),
                     " / ".join(str(len(t)) for t in r["times"].values()), warm,
                     "yes" if r["on_webnn"] else "NO",
                     "; ".join(f"{d[0]:.0e}{'' if d[1] else ' MISMATCH'}" for d in r["diffs"].values())))
    for label, means in geomean_rows(names, list(ratios.values())):
        rows.append((label, *[""] * len(SIDES), *(f"{m:.2f}×" for m in means), "", "", "", ""))
    print_table(("model", "EP ms", "builder ms", "ORT-wasm 1T ms", "ORT-wasm 2T ms", "EP /1T", "EP /2T",
                 "builder /1T", "builder /2T", "timed runs (EP/b/1T/2T)", "warm-up s (EP/b/1T/2T)",
                 "all on WebNN", "max |Δ| vs ORT native"), rows)
    print(f"\nWhere a builder run goes ({PHASE_RUNS} runs after the alternation, each call timed on its own; "
          "medians in ms): writeTensor for every input, dispatch(), readTensor for every output awaited (a "
          "dispatch longer than a time slice goes on after dispatch() returns: the reads wait for it)")
    print_table(("model", "writeTensor ×n", "dispatch", "readTensor ×n", "run"),
                [(name, *(f"{browser[name]['phases'][BUILDER][k]:.3f}" for k in ("write", "dispatch", "read", "run")))
                 for name in names])
    return ok


def blas_core() -> str:
    """numpy's OpenBLAS kernel set (it picks one per CPU at load, unless OPENBLAS_CORETYPE
    names one): GEMMs run ~2x faster on this machine's AVX-512 set (Cooperlake) than with
    Haswell's AVX2 kernels, so the host table says which one ran."""
    import ctypes
    import glob

    import numpy
    forced = os.environ.get("OPENBLAS_CORETYPE")
    note = f" (OPENBLAS_CORETYPE={forced} in the environment)" if forced else ""
    for path in glob.glob(str(Path(numpy.__file__).parent.parent / "numpy.libs" / "libscipy_openblas*.so")):
        for name in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename"):
            function = getattr(ctypes.CDLL(path), name, None)
            if function is not None:
                function.restype = ctypes.c_char_p
                return function().decode() + note
    return "unknown" + note


def report_host(host: dict) -> bool:
    rows, ratios, cpu_ratios, ok = [], [], [], True
    for name, r in host.items():
        med = {side: median_ms(t) for side, t in r["times"].items()}
        cpu = {side: median_ms(t) for side, t in r["cpu_times"].items()}
        ratios.append(med["webnn"] / med["ort"])
        cpu_ratios.append(cpu["webnn"] / cpu["ort"])
        ok = ok and r["diff"][1]
        rows.append((name, f"{med['webnn']:.3f}", f"{med['ort']:.3f}", f"{ratios[-1]:.2f}×",
                     f"{cpu['webnn']:.3f} / {cpu['ort']:.3f}", f"{cpu_ratios[-1]:.2f}×",
                     " / ".join(str(len(t)) for t in r["times"].values()), f"{r['build_ms']:.0f}",
                     f"{r['diff'][0]:.0e}{'' if r['diff'][1] else ' MISMATCH'}"))
    for label, (mean, cpu_mean) in geomean_rows(list(host), [ratios, cpu_ratios]):
        rows.append((label, "", "", f"{mean:.2f}×", "", f"{cpu_mean:.2f}×", "", "", ""))
    print_table(("model", "webnn-py ms", "ORT native 1T ms", "ratio", "CPU ms (w/ORT)", "CPU ratio",
                 "timed runs (w/ORT)", "build() ms", "max |Δ| vs ORT native"), rows)
    return ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=list(ZOO), default=list(ZOO))
    parser.add_argument("--min-warmup", type=float, help="seconds of warm-up per side at least (default 5)")
    parser.add_argument("--max-warmup", type=float, help="seconds of warm-up per side at most (default 60)")
    parser.add_argument("--measure", type=float, help="seconds of alternating timed runs per model (default 10)")
    parser.add_argument("--min-runs", type=int, default=None, help="timed runs per side at least (default 10)")
    parser.add_argument("--browser", choices=["chromium", "firefox", "webkit"], default="chromium",
                        help="the engine of the browser side (default chromium): webnn-py and ORT-web's wasm EP "
                             "both run in it")
    parser.add_argument("--time-slice", type=float, default=None,
                        help="the polyfill's timeSlice in the pages, ms (default: its own, 8; 0: a dispatch runs "
                             "in one task, unsliced)")
    parser.add_argument("--post-task", choices=["user-visible", "background", "pyodide"], default=None,
                        help="the polyfill's postTask in the pages: how a dispatch's next slice is scheduled "
                             "(default: its own, user-visible)")
    parser.add_argument("--skip-browser", action="store_true")
    parser.add_argument("--skip-host", action="store_true")
    parser.add_argument("--quick", action="store_true", help="a smoke run: short warm-up and measurement")
    parser.add_argument("--json", type=Path, help="also write every sample to this JSON file")
    parser.add_argument("--no-setup", action="store_true", help="do not rebuild build/pyodide's wheel first")
    args = parser.parse_args(argv)
    min_warm = args.min_warmup if args.min_warmup is not None else (0.2 if args.quick else 5.0)
    max_warm = args.max_warmup if args.max_warmup is not None else (1.0 if args.quick else 60.0)
    measure = args.measure if args.measure is not None else (0.3 if args.quick else 10.0)
    min_runs = args.min_runs if args.min_runs is not None else (3 if args.quick else 10)
    warm = {"minMs": min_warm * 1000, "maxMs": max_warm * 1000, "windowMs": 100 if args.quick else 1000,
            "drop": DROP}
    if not args.skip_browser:
        prepare_browser_runtime(parser, "ort.all.min.mjs", rebuild=not args.no_setup)

    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="webnn-zoo-") as tmp:
        directory = Path(tmp)
        print("exporting the models to ONNX ...", file=sys.stderr, flush=True)
        prepared = {name: Prepared(name, directory) for name in args.models}
        browser = None
        if not args.skip_browser:
            page_query = "".join(f"&{key}={value}" for key, value in (("slice", args.time_slice),
                                                                       ("post", args.post_task)) if value is not None)
            browser = browser_bench(prepared, directory, warm, measure, min_runs, args.browser, page_query)
            load.append(os.getloadavg()[0])
        host = {}
        if not args.skip_host:
            host = host_benches(prepared, min_warm, measure, min_runs)
            load.append(os.getloadavg()[0])

    ok = True
    print(f"machine: {os.cpu_count()} CPUs, 1-minute load average "
          + " → ".join(f"{v:.1f}" for v in load) + " (start → after browser/host parts)")
    if browser:
        threads = sorted({r["threads"] for name, r in browser.items() if name in args.models})
        print(f"\nBrowser: headless {browser.pop('engine')}, crossOriginIsolated={browser.pop('isolated')}, "
              f"the polyfill's {browser.pop('page options')}, "
              f"the 2T page's ORT-web ran {'/'.join(map(str, threads))} thread(s); webnn-py through ONNX Runtime Web's "
              f"WebNN EP over navigator.ml (EP: session.run()) and through MLGraphBuilder directly (builder: "
              f"writeTensor per input, dispatch, readTensor per output); warm-up until a 1 s window's median falls "
              f"< 2 % (! = hit --max-warmup), then {measure:g} s alternating; medians per run in ms")
        ok = report_browser(browser, args.models) and ok
    if host:
        print(f"\nHost: CPython webnn_py (ONNX → builder) vs onnxruntime native (CPU EP, 1 thread); medians in ms "
              f"(wall clock, and this thread's CPU time per run); numpy's OpenBLAS core: {blas_core()}")
        ok = report_host(host) and ok
    if args.json:
        args.json.write_text(json.dumps({"load_average": load, "browser": browser,
                                         "host": {k: {**r, "diff": list(r["diff"])} for k, r in host.items()}},
                                        indent=1, default=float))
    print("\nratio = webnn-py latency / ONNX Runtime latency (below 1: webnn-py is faster).")
    if not ok:
        print("FAILED: an output differs from onnxruntime native beyond rtol=atol=1e-3, or a node is not on WebNN",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
