"""webnn-py vs. ONNX Runtime, side by side: in headless Chromium and on the host.

    .venv/bin/python bench/webnn_bench.py [--models mobilenet transformer] [--warmup S] [--measure S]
                                          [--skip-browser] [--skip-host] [--profile MODEL] [--quick]
                                          [--time-slice MS] [--post-task MODE]
                                          [--json FILE]

The models are bench/models.py's: MobileNetV2 (224×224×3) and a 2-layer transformer
encoder (seq 128, hidden 256), fp32, batch 1, seeded weights. Each is defined once
as a list of MLGraphBuilder calls; its torch equivalent (same weights) is exported
to ONNX on the host for ONNX Runtime.

Browser: one headless Chromium, two cross-origin-isolated pages (COOP/COEP, which
ORT-web needs for threads). Page 1 boots webnn-py at once and replays the model's
builder calls through navigator.ml from page script (writeTensor → dispatch →
readTensor per run), and runs ORT-web 1.30's wasm EP with 1 thread; page 2 runs the
wasm EP with 2 threads (ORT reads its thread count once per page). Each of the three
warms up on its own for ≥ --warmup s, then they are timed in alternation (a few runs
each in turn, after a 50 ms pause and one untimed run, in an order rotated every turn) until --measure s
have passed, so all see the same machine load; the tables show medians and ratios
against ORT-web 1 thread. Cold start is page 1's
navigation start → createContext() resolved → first model fetched, replayed, built
and run once.

Host: webnn_py on CPython (the same writeTensor → dispatch → readTensor) vs.
onnxruntime native, CPU EP, intra_op_num_threads=1, alternated the same way; numpy's
BLAS gets one thread too (OPENBLAS_NUM_THREADS etc., unless set in the environment).

Outputs are checked against onnxruntime native on the host (rtol = atol = 1e-4); the
script exits with status 1 if any side disagrees, since its timings would compare
different work. Numbers are noisy on a shared machine; never assert on them.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# webnn-py's host kernels use numpy's BLAS: give it one thread, like onnxruntime's
# intra_op_num_threads=1 and like Pyodide, which has one. A setting in the environment wins.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
for path in (str(REPO), str(BENCH)):
    if path not in sys.path:
        sys.path.insert(0, path)

from models import MODELS, Model, emit, export_onnx  # noqa: E402

ORT_DIST = REPO / "node_modules" / "onnxruntime-web" / "dist"
RUNTIME = REPO / "build" / "pyodide"
# Cross-origin isolation: SharedArrayBuffer for ORT-web's threads, and a 5 µs page clock.
COI_HEADERS = {"Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp"}
RTOL = ATOL = 1e-4
RUNS_PER_TURN = 3      # timed runs per side per alternation turn
SETTLE_S = 0.05        # idle pause before each side's turn


def turn_order(sides: list, turn: int) -> list:
    """The sides in turn `turn`'s order: rotated every turn, so that no side always
    follows the same other one (on 2 cores, ORT-web's 2-thread pool spinning on after
    its runs slowed whichever side came next by ~5 ms: webnn-py, in a fixed order)."""
    shift = turn % len(sides)
    return sides[shift:] + sides[:shift]


def median_ms(times):
    return statistics.median(times) if times else float("nan")


def compare(outputs: dict, reference: dict, rtol: float = RTOL, atol: float = ATOL) -> tuple[float, bool]:
    """max |Δ| against the reference, and whether every output is allclose(rtol, atol)."""
    worst, ok = 0.0, True
    for name, ref in reference.items():
        got = np.asarray(outputs[name], dtype=np.float32).reshape(ref.shape)
        worst = max(worst, float(np.max(np.abs(got - ref))))
        ok = ok and bool(np.allclose(got, ref, rtol=rtol, atol=atol))
    return worst, ok


class Prepared:
    """A model with its files for the page (wire format, inputs, ONNX) and onnxruntime's reference."""

    def __init__(self, key: str, model: Model, directory: Path):
        import onnx
        import onnxruntime

        self.key, self.model = key, model
        description, blob = model.to_wire()
        (directory / f"{key}.json").write_text(json.dumps(description))
        (directory / f"{key}.bin").write_bytes(blob)
        self.inputs = model.sample_inputs()
        (directory / f"{key}.inputs.bin").write_bytes(b"".join(a.tobytes() for a in self.inputs.values()))
        self.onnx_path = export_onnx(model, directory / f"{key}.onnx")
        graph = onnx.load(str(self.onnx_path)).graph
        self.onnx_nodes = sum(1 for node in graph.node if node.op_type != "Constant")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.ort = onnxruntime.InferenceSession(str(self.onnx_path), options, providers=["CPUExecutionProvider"])
        self.output_names = list(model.outputs)
        self.reference = dict(zip(self.output_names, self.ort.run(self.output_names, self.inputs)))
        self.rtol = self.atol = RTOL

    def emit(self, builder) -> dict:
        """The model's builder calls on `builder`; {output name: MLOperand} (for host_bench)."""
        return emit(self.model, builder)


# -- host ---------------------------------------------------------------------------------------

async def host_bench(prepared, warmup: float, measure: float, min_runs: int) -> dict:
    """`prepared`: a Prepared (or bench/zoo.py's equivalent) with emit(builder), inputs (numpy
    arrays by name), ort (an onnxruntime session), output_names, reference, rtol and atol."""
    import webnn_py

    context = await webnn_py.ml.createContext()
    builder = webnn_py.MLGraphBuilder(context)
    outputs = prepared.emit(builder)
    start = time.perf_counter()
    graph = await builder.build(outputs)
    build_ms = (time.perf_counter() - start) * 1000
    inputs = {}
    for name, array in prepared.inputs.items():
        inputs[name] = await context.createTensor({"dataType": "float32", "shape": list(array.shape),
                                                   "writable": True})
    results = {name: await context.createTensor({"dataType": o.dataType, "shape": o.shape, "readable": True})
               for name, o in outputs.items()}

    async def run_webnn():
        for name, array in prepared.inputs.items():
            context.writeTensor(inputs[name], array)
        context.dispatch(graph, inputs, results)
        return {name: np.frombuffer(await context.readTensor(t), np.float32) for name, t in results.items()}

    async def run_ort():
        return dict(zip(prepared.output_names, prepared.ort.run(prepared.output_names, prepared.inputs)))

    sides = {"webnn": run_webnn, "ort": run_ort}
    first = {}
    for side, run in sides.items():
        start = time.perf_counter()
        first[side] = await run()
        if side == "webnn":
            first_run_ms = (time.perf_counter() - start) * 1000
        runs = 1
        while time.perf_counter() - start < warmup or runs < 2:
            await run()
            runs += 1
    times = {side: [] for side in sides}
    # This thread's CPU time per run as well (both sides compute on it: onnxruntime with one
    # thread runs in the caller's): on a loaded machine, time spent descheduled inflates the
    # wall-clock times of the longer runs most, and CPU time leaves it out.
    cpu_times = {side: [] for side in sides}
    start = time.perf_counter()
    turn = 0
    while time.perf_counter() - start < measure or min(len(t) for t in times.values()) < min_runs:
        for side in turn_order(list(sides), turn):
            await asyncio.sleep(SETTLE_S)
            await sides[side]()           # untimed: the switch from the other side settles
            for _ in range(RUNS_PER_TURN):
                t0, c0 = time.perf_counter(), time.thread_time()
                await sides[side]()
                times[side].append((time.perf_counter() - t0) * 1000)
                cpu_times[side].append((time.thread_time() - c0) * 1000)
        turn += 1
    context.destroy()
    return {"build_ms": build_ms, "first_run_ms": first_run_ms, "times": times, "cpu_times": cpu_times,
            "diff": compare(first["webnn"], prepared.reference, prepared.rtol, prepared.atol)}


def host_benches(prepared: dict, warmup: float, measure: float, min_runs: int) -> dict:
    """host_bench for each prepared model in turn: {name: its result}."""
    results = {}
    for key, p in prepared.items():
        print(f"host, {key}: warming up ≥{warmup:g} s per side, then timing {measure:g} s ...", file=sys.stderr,
              flush=True)
        results[key] = asyncio.run(host_bench(p, warmup, measure, min_runs))
    return results


# -- browser ------------------------------------------------------------------------------------

def _quiet_disconnects(httpd) -> None:
    """Chromium may drop a connection mid-response (a cancelled or repeated fetch); that is not
    an error worth a traceback in the benchmark's output. Anything else is still reported."""
    default = httpd.handle_error

    def handle_error(request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            default(request, client_address)
    httpd.handle_error = handle_error


def alternate(sides: dict, measure: float, min_runs: int) -> dict[str, list[float]]:
    """Time the sides ({name: (page, kind)}: the page's timeRuns(kind, n)) in alternation, a few
    runs each per turn in an order rotated every turn, until `measure` s have passed and each
    has `min_runs` samples; {name: [ms, ...]}."""
    times = {side: [] for side in sides}
    start, turn = time.perf_counter(), 0
    while time.perf_counter() - start < measure or min(len(t) for t in times.values()) < min_runs:
        for side in turn_order(list(sides), turn):
            page, kind = sides[side]
            # ORT-web's thread pool spins on for a while after its runs; on a 2-core
            # machine that slowed the next side's first runs by up to 60%. A pause
            # and one untimed run let the switch from the other side settle.
            time.sleep(SETTLE_S)
            times[side] += page.evaluate("([k, n]) => timeRuns(k, n)", [kind, RUNS_PER_TURN + 1])[1:]
        turn += 1
    return times


def browser_bench(prepared: dict[str, Prepared], directory: Path, warmup: float, measure: float,
                  min_runs: int, profile: str | None, profile_runs: int, quick: bool = False,
                  time_slice: float | None = None, post_task: str | None = None) -> dict:
    from webnn_py.serve import PolyfillServer
    from browsers.chromium import launch_chromium

    keys = list(prepared)
    out: dict = {"models": {}}
    with PolyfillServer(root=BENCH, mounts={"/ort/": ORT_DIST, "/models/": directory}, headers=COI_HEADERS) as server, \
            launch_chromium() as browser:
        _quiet_disconnects(server.httpd)
        errors: list[str] = []
        shim_messages: list[str] = []

        def open_page(query: str):
            page = browser.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: shim_messages.append(m.text) if m.text.startswith("webnn-py:") else None)
            page.goto(f"{server.url}/webnn_bench.html?{query}")
            page.wait_for_function("self.benchReady === true", timeout=300_000, polling=100)
            if errors:
                raise SystemExit(f"page errors: {errors}")
            return page

        # Page 1 first, alone: its load in a fresh profile is the cold start.
        slicing = "" if time_slice is None else f"&timeSlice={time_slice:g}"
        slicing += "" if post_task is None else f"&postTask={post_task}"
        webnn_page = open_page(f"webnn=1&threads=1&first={keys[0]}{slicing}")
        cold = webnn_page.evaluate("self.coldStart")
        if "error" in cold:
            raise SystemExit(f"webnn-py failed in the page: {cold['error']}")
        out["cold"] = {k: v for k, v in cold.items() if k != "output"}
        out["shim"] = list(shim_messages)      # e.g. its "Python runtime ready in N s"
        out["isolated"] = webnn_page.evaluate("self.crossOriginIsolated")
        ort2_page = open_page("threads=2")
        if profile and quick:
            # A smoke run's timings mean nothing: boot the profiling Pyodide while they run.
            ort2_page.evaluate("() => { startProfiler(); }")
        sides = {"webnn-py": (webnn_page, "webnn"), "ORT-wasm 1T": (webnn_page, "ort"),
                 "ORT-wasm 2T": (ort2_page, "ort")}
        for key in keys:
            print(f"browser, {key}: warming up ≥{warmup:g} s per side, then timing {measure:g} s ...",
                  file=sys.stderr, flush=True)
            info = cold if key == keys[0] else webnn_page.evaluate("(n) => setupWebnn(n)", key)
            setups = {"webnn-py": info,
                      "ORT-wasm 1T": webnn_page.evaluate("(n) => setupOrt(n)", key),
                      "ORT-wasm 2T": ort2_page.evaluate("(n) => setupOrt(n)", key)}
            diffs = {side: compare(s["output"], prepared[key].reference) for side, s in setups.items()}
            warm = {side: page.evaluate("([k, ms]) => warmUp(k, ms)", [kind, warmup * 1000])
                    for side, (page, kind) in sides.items()}
            times = alternate(sides, measure, min_runs)
            for page in (webnn_page, ort2_page):
                page.evaluate("release()")
            out["models"][key] = {"times": times, "warm": warm, "diffs": diffs, "build_ms": info["buildMs"],
                                  "replay_ms": info["replayMs"], "first_run_ms": info["firstRunMs"],
                                  "ort_threads": setups["ORT-wasm 2T"]["threads"]}
            if errors:
                raise SystemExit(f"page errors: {errors}")
        # A hidden page's tasks may be throttled: both pages must have been timed visible.
        out["visibility"] = [page.evaluate("document.visibilityState") for page in (webnn_page, ort2_page)]
        if profile:
            print(f"browser, {profile}: per-operator profile in Pyodide ...", file=sys.stderr, flush=True)
            # Page 2 (ORT only) hosts the profiling Pyodide, so page 1's runtime stays as measured.
            out["profile"] = ort2_page.evaluate("(a) => profileInPyodide(a)", {"name": profile, "runs": profile_runs,
                                                                                     "warmup": warmup})
    return out


# -- report -------------------------------------------------------------------------------------

def print_table(header, rows):
    table = [tuple(header)] + [tuple(r) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for i, row in enumerate(table):
        print("  ".join(cell.ljust(w) if j == 0 else cell.rjust(w) for j, (cell, w) in enumerate(zip(row, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


def match(diff):
    worst, ok = diff
    return f"{worst:.1e} {'ok' if ok else 'MISMATCH'}"


def print_profile(title, profile, dispatch_ms=None):
    print(f"\n{title} (ExecutionPlan.execute(profile=...), mean of {profile['runs']} runs after the same "
          "warm-up)")
    total = profile["total_ms"]
    rows = [(name, str(profile["counts"].get(name, "")), f"{ms:.2f}", f"{100 * ms / total:.1f}%")
            for name, ms in sorted(profile["steps"].items(), key=lambda kv: -kv[1])]
    rows.append(("total (kernels only)", str(sum(profile["counts"].values())), f"{total:.2f}", "100.0%"))
    print_table(("plan step", "steps", "ms/run", "share"), rows)
    if dispatch_ms is not None:
        print(f"(writeTensor → dispatch → readTensor median: {dispatch_ms:.2f} ms)")


def prepare_browser_runtime(parser, ort_module: str, rebuild: bool) -> None:
    """The browser side's prerequisites (ORT-web's `ort_module`, build/pyodide), and the wheel
    rebuilt from the current sources unless `rebuild` is false (a hash check when unchanged)."""
    if not (ORT_DIST / ort_module).is_file():
        parser.error("node_modules/onnxruntime-web is missing: run ./dev setup")
    if not (RUNTIME / "pyodide.asm.wasm").is_file():
        parser.error("build/pyodide is missing: run ./dev setup")
    if rebuild:
        subprocess.run([sys.executable, str(REPO / "tools" / "setup_runtime.py")], check=True,
                       stdout=subprocess.DEVNULL)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--warmup", type=float, help="seconds of warm-up per side (default 5, at least 5 "
                        "unless --quick)")
    parser.add_argument("--measure", type=float, help="seconds of alternating timed runs per model (default 10)")
    parser.add_argument("--min-runs", type=int, default=None, help="timed runs per side at least (default 10)")
    parser.add_argument("--skip-browser", action="store_true")
    parser.add_argument("--skip-host", action="store_true")
    parser.add_argument("--profile", choices=list(MODELS), default=None,
                        help="model for the per-operator breakdown (default: the first of --models)")
    parser.add_argument("--profile-runs", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="short warm-up and measurement: a smoke run, "
                        "its numbers are not meaningful")
    parser.add_argument("--time-slice", type=float, default=None,
                        help="the polyfill's timeSlice option in ms (default: its own, 8; 0: each dispatch in "
                             "one task): what cooperative slicing costs")
    parser.add_argument("--post-task", default=None,
                        help="the polyfill's postTask option (how the rest of a sliced dispatch is scheduled)")
    parser.add_argument("--json", type=Path, help="also write every measurement (all samples) to this JSON file")
    parser.add_argument("--no-setup", action="store_true", help="do not rebuild build/pyodide's webnn_py wheel "
                        "from the current sources first")
    args = parser.parse_args(argv)
    warmup = args.warmup if args.warmup is not None else (0.3 if args.quick else 5.0)
    measure = args.measure if args.measure is not None else (0.5 if args.quick else 10.0)
    min_runs = args.min_runs if args.min_runs is not None else (3 if args.quick else 10)
    profile_runs = args.profile_runs or (1 if args.quick else 5)
    profile = args.profile or args.models[0]
    if warmup < 5 and not args.quick:
        parser.error("--warmup must be at least 5 s (V8 tiers wasm up gradually), or use --quick")
    if not args.skip_browser:
        prepare_browser_runtime(parser, "ort.wasm.min.mjs", rebuild=not args.no_setup)

    ok = True
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="webnn-bench-") as tmp:
        directory = Path(tmp)
        print("exporting the models to ONNX ...", file=sys.stderr, flush=True)
        prepared = {key: Prepared(key, MODELS[key](), directory) for key in args.models}
        host = {}
        if not args.skip_host:
            host = host_benches(prepared, warmup, measure, min_runs)
            from op_profile import profile_model
            host_profile = asyncio.run(profile_model(profile, profile_runs, warmup))
        browser = None
        if not args.skip_browser:
            browser = browser_bench(prepared, directory, warmup, measure, min_runs, profile, profile_runs,
                                    args.quick, args.time_slice, args.post_task)

    settings = f"warm-up ≥{warmup:g} s per side, then {measure:g} s of alternating runs"
    print(f"machine: {os.cpu_count()} CPUs, 1-minute load average {load_before:.1f} at the start and "
          f"{os.getloadavg()[0]:.1f} at the end")
    if browser:
        threads = {r["ort_threads"] for r in browser["models"].values()}
        print(f"\nBrowser: headless Chromium, crossOriginIsolated={browser['isolated']}, ORT-wasm 2T page's "
              f"numThreads={'/'.join(map(str, threads))}, pages {'/'.join(browser['visibility'])}; {settings}; "
              "medians in ms")
        rows = []
        for key, r in browser["models"].items():
            med = {side: median_ms(t) for side, t in r["times"].items()}
            base = med["ORT-wasm 1T"]
            rows.append((key, f"{med['webnn-py']:.2f}", f"{base:.2f}", f"{med['ORT-wasm 2T']:.2f}",
                         f"{med['webnn-py'] / base:.2f}×", f"{med['webnn-py'] / med['ORT-wasm 2T']:.2f}×",
                         " / ".join(str(len(t)) for t in r["times"].values()),
                         f"{r['build_ms']:.0f}", "; ".join(f"{match(d)}" for d in r["diffs"].values())))
            ok = ok and all(d[1] for d in r["diffs"].values())
        print_table(("model", "webnn-py", "ORT-wasm 1T", "ORT-wasm 2T", "ratio webnn-py/ORT-1T",
                     "ratio webnn-py/ORT-2T", "timed runs (w/1T/2T)", "build() ms",
                     "max |Δ| vs ORT native (w; 1T; 2T)"), rows)
        cold = browser["cold"]
        first = next(iter(browser["models"]))
        print(f"\nCold start ({first}, fresh profile, local assets; ms since navigation start): "
              f"createContext() resolved at {cold['contextResolvedAt']:.0f}; model fetched "
              f"{cold['fetchMs']:.0f}, builder calls replayed {cold['replayMs']:.0f}, build() {cold['buildMs']:.0f}, "
              f"first dispatch→readTensor {cold['firstRunMs']:.0f}; first result at {cold['firstResultAt']:.0f}"
              + (f" (the shim: {'; '.join(browser['shim'])})" if browser["shim"] else ""))
        if "profile" in browser:
            print_profile(f"Per-operator breakdown, {profile}, in Chromium (Pyodide)", browser["profile"],
                          median_ms(browser["models"][profile]["times"]["webnn-py"])
                          if profile in browser["models"] else None)
    if host:
        print(f"\nHost: CPython webnn_py vs onnxruntime native (CPU EP, intra_op_num_threads=1); {settings}; "
              "medians in ms")
        rows = []
        for key, r in host.items():
            med = {side: median_ms(t) for side, t in r["times"].items()}
            rows.append((key, f"{med['webnn']:.2f}", f"{med['ort']:.2f}", f"{med['webnn'] / med['ort']:.2f}×",
                         " / ".join(str(len(t)) for t in r["times"].values()), f"{r['build_ms']:.0f}",
                         f"{r['first_run_ms']:.0f}", match(r["diff"])))
            ok = ok and r["diff"][1]
        print_table(("model", "webnn-py", "ORT native 1T", "ratio webnn-py/ORT", "timed runs (w/ORT)",
                     "build() ms", "first run ms", "max |Δ| vs ORT native"), rows)
        print_profile(f"Per-operator breakdown, {profile}, host CPython", host_profile,
                      median_ms(host[profile]["times"]["webnn"]) if profile in host else None)
    if args.json:
        record = {"settings": {"warmup_s": warmup, "measure_s": measure, "models": args.models, "profile": profile},
                  "load_average": [load_before, os.getloadavg()[0]], "browser": browser,
                  "host": {key: {**r, "diff": list(r["diff"])} for key, r in host.items()},
                  "host_profile": host_profile if host else None}
        args.json.write_text(json.dumps(record, indent=1, default=float))
    print("\nratios: webnn-py latency / ONNX Runtime latency (below 1 means webnn-py is faster). Timings are "
          "noisy on a shared machine.")
    if not ok:
        print("OUTPUT MISMATCH: some side disagrees with onnxruntime native beyond rtol=atol=1e-4", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
