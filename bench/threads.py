"""webnn-py's kernel pool (README "Kernels", Threads) against its one-thread kernels and ORT-web.

    .venv/bin/python bench/threads.py [--models NAME ...] [--gemms-only | --skip-gemms]
                                      [--tables gemm conv depthwise] [--rounds N]
                                      [--min-warmup S] [--max-warmup S] [--measure S]
                                      [--pool SETTINGS ...] [--trace] [--no-setup]

Part 1, GEMMs: in a cross-origin isolated Chromium page (tests/browser/pages/kernel_pool.html:
Pyodide and webnn_py without the polyfill), the zoo CNNs' GEMM shapes (1×1 and im2col
convolutions, packed constant B, bias and relu6 epilogue), then im2col convolutions (also with
only their GEMM pooled, as before the pooled convolution: "GEMM pooled/1T") and mobilenet_v2's
depthwise convolutions, timed on one thread and through the pool in alternation (the pool's thresholds lifted and its per-shape choice off, so every call
of every shape is pooled where a worker is ready: what the pool itself does), with what the
pooled calls' tiles did (taken by a worker, taken back by the page's thread, late).

Part 2, models: bench/zoo.py's CNNs in isolated pages of one headless Chromium
(bench/threads.html): page A with `kernelThreads: 0` (webnn-py's one-thread kernels) and
ORT-web's wasm EP on 1 thread, page B with ORT-web on 2 threads, then a page per --pool value
with the pool; webnn-py runs each model two ways in its pages, as bench/zoo.py's two columns:
through ORT-web's WebNN EP (session.run()) and through MLGraphBuilder directly ("builder":
writeTensor → dispatch → readTensor of the same graph; default: one pool page, the pool's defaults; e.g. `--pool kernelThreadsLingerMs=0.3 ""`
compares two pages, the first with workers that poll 0.3 ms before they sleep; the GEMM table
is then printed once per value). The sides are checked
against onnxruntime native, warmed up alone until their medians settle, then timed in
alternation as bench/zoo.py does. Medians, the ratios and the load
average are printed. --trace adds, per model and pool page, every shape the pool saw (how many
calls the per-shape choice pooled or kept on one thread, their medians, their fastest calls'
ratio) and the percentiles of the wake-ups' Atomics.notify and the workers' start. The machine's other work shares its cores: ratios measured side by side
are what count.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
for _path in (str(REPO), str(BENCH)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from webnn_bench import (COI_HEADERS, median_ms,  # noqa: E402
                         prepare_browser_runtime, print_table)
import webnn_py  # noqa: E402
from zoo import DROP, Prepared, geomean, placed_on_webnn, run_model, zoo_pages  # noqa: E402

CNNS = ["mobilenet_v2", "resnet18", "mobilenet_v3_small", "squeezenet1_1", "efficientnet_b0"]
# (rows m, depth k, columns n): the zoo CNNs' GEMMs at 224×224 (rows = output pixels).
GEMMS = [
    (12544, 147, 64),    # resnet18's 7×7 stem, im2col
    (3136, 576, 64),     # resnet18 layer1 3×3
    (784, 1152, 128),    # resnet18 layer2 3×3
    (196, 2304, 256),    # resnet18 layer3 3×3
    (12544, 32, 16),     # mobilenet_v2 block 1 projection
    (3136, 24, 144),     # mobilenet_v2 expansion
    (3136, 144, 24),     # mobilenet_v2 projection
    (784, 192, 64),      # mobilenet_v2 / efficientnet mid projections
    (196, 384, 96),
    (49, 960, 320),      # mobilenet_v2's last block
    (49, 320, 1280),     # mobilenet_v2's head
    (3136, 64, 256),     # squeezenet expand 1×1, 3×3-ish sizes
]
# (h = w, channels, kernel, stride, padding, out channels): im2col convolutions of the zoo (padding
# on every side; bias + relu6): resnet18's stem and 3×3 layers, squeezenet1_1's 3×3 expands.
CONVS = [
    (224, 3, 7, 2, 3, 64),
    (56, 64, 3, 1, 1, 64),
    (28, 128, 3, 1, 1, 128),
    (14, 256, 3, 1, 1, 256),
    (55, 16, 3, 1, 1, 64),
    (27, 32, 3, 1, 1, 128),
]
# (h = w, channels, stride): mobilenet_v2's 3×3 depthwise convolutions (padding 1, bias + relu6).
DEPTHWISES = [
    (112, 32, 1),
    (112, 96, 2),
    (56, 144, 1),
    (56, 144, 2),
    (28, 192, 1),
    (14, 384, 1),
    (14, 576, 1),
    (7, 960, 1),
]
PAGES = REPO / "tests" / "browser" / "pages"

GEMM_CODE = """
import asyncio, time
import numpy as np
import webnn_py.kernels as K
from webnn_py.kernels import pool as P

P.MIN_MACS = P.MIN_ROWS = P.MIN_COLUMNS = 1     # measure every shape
kernels = K.available()
threads = kernels.threads
rng = np.random.default_rng(0)

def timed(a, b, bias, packed, out, use, runs):
    kernels.threads = threads if use else None
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        kernels.gemm(a, b, bias_n=bias, clamp=(0.0, 6.0), out=out, packed_b=packed)
        times.append((time.perf_counter() - t0) * 1e3)
    kernels.threads = threads
    return times

results = []
warm = rng.standard_normal((2048, 256), dtype=np.float32)
warm_b = rng.standard_normal((256, 256), dtype=np.float32)
warm_packed = kernels.pack_b(warm_b)
for _ in range(100):
    kernels.gemm(warm, warm_b, packed_b=warm_packed)
    if threads.pool is not None and threads.pool.stats()["calls"]:
        break
    await asyncio.sleep(0.1)
threads.pool.set_mode("pool")                  # every call pooled: what the pool itself does
for m, k, n in SHAPES:
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    bias = rng.standard_normal(n, dtype=np.float32)
    packed = kernels.pack_b(b)
    out = np.empty((m, n), np.float32)
    one, pooled = [], []
    macs = m * k * n
    runs = max(3, min(50, int(2e7 / macs)))
    timed(a, b, bias, packed, out, True, runs)
    timed(a, b, bias, packed, out, False, runs)
    before = threads.pool.stats()
    for turn in range(ROUNDS):
        one += timed(a, b, bias, packed, out, False, runs)
        pooled += timed(a, b, bias, packed, out, True, runs)
        await asyncio.sleep(0.02)
    after = threads.pool.stats()
    results.append({"shape": [m, k, n], "one": one, "pool": pooled,
                    "stats": {key: after[key] - before[key] for key in after}})
convs = []
for size, c, kernel, stride, pad, n in CONVS:
    x = rng.standard_normal((size, size, c), dtype=np.float32)
    k = kernel * kernel * c
    b = rng.standard_normal((k, n), dtype=np.float32)
    packed = kernels.pack_b(b)
    bias = rng.standard_normal(n, dtype=np.float32)
    o = (size + 2 * pad - kernel) // stride + 1
    out = np.empty((o * o, n), np.float32)
    cols = np.empty((o * o, k), np.float32)
    geometry = ((kernel, kernel), (stride, stride), (1, 1), (pad, pad))
    runs = max(3, min(50, int(2e7 / (o * o * k * n))))

    def timed_conv(way):
        # "one": im2col + GEMM on this thread; "gemm": im2col here, the GEMM pooled (the copied
        # patch matrix); "pool": the pooled convolution (the workers make their rows' patches).
        kernels.threads = None if way == "one" else threads
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            if way == "pool":
                kernels.im2col_gemm(x, *geometry, (o, o), b, packed, out, cols, bias, None, (0.0, 6.0))
            else:
                kernels.im2col_nhwc(x, *geometry, range(o), o, cols)
                kernels.gemm(cols, b, bias_n=bias, clamp=(0.0, 6.0), out=out, packed_b=packed)
            times.append((time.perf_counter() - t0) * 1e3)
        kernels.threads = threads
        return times
    for way in ("pool", "gemm", "one"):
        timed_conv(way)
    one, pooled, gemm_pooled = [], [], []
    before = threads.pool.stats()
    for turn in range(ROUNDS):
        one += timed_conv("one")
        pooled += timed_conv("pool")
        gemm_pooled += timed_conv("gemm")
        await asyncio.sleep(0.02)
    after = threads.pool.stats()
    convs.append({"shape": [size, c, kernel, stride, n], "one": one, "pool": pooled, "gemm pool": gemm_pooled,
                  "stats": {key: after[key] - before[key] for key in after}})
depthwises = []
P.MIN_DEPTHWISE_MACS = P.MIN_DEPTHWISE_ROWS = 1
P.MAX_DEPTHWISE_COPIES = float("inf")               # stride 2 too
for size, c, stride in DEPTHWISES:
    x = rng.standard_normal((1, size, size, c), dtype=np.float32)
    f = rng.standard_normal((3, 3, c), dtype=np.float32)
    bias = rng.standard_normal(c, dtype=np.float32)
    o = (size - 1) // stride + 1
    out = np.empty((1, o, o, c), np.float32)
    runs = max(3, min(50, int(5e6 / out.size / 9)))

    def timed_dw(use):
        kernels.threads = threads if use else None
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            kernels.depthwise_nhwc(x, f, bias, (o, o), (stride, stride), (1, 1), (1, 1), (0.0, 6.0), out)
            times.append((time.perf_counter() - t0) * 1e3)
        kernels.threads = threads
        return times
    timed_dw(True)
    timed_dw(False)
    one, pooled = [], []
    before = threads.pool.stats()
    for turn in range(ROUNDS):
        one += timed_dw(False)
        pooled += timed_dw(True)
        await asyncio.sleep(0.02)
    after = threads.pool.stats()
    depthwises.append({"shape": [size, c, stride], "one": one, "pool": pooled,
                       "stats": {key: after[key] - before[key] for key in after}})
{"workers": threads.pool.workers, "results": results, "convs": convs, "depthwises": depthwises}
"""


def gemm_bench(rounds: int, settings: str, tables: list[str]) -> dict:
    import browsers
    from webnn_py.serve import PolyfillServer

    code = (GEMM_CODE.replace("SHAPES", repr(GEMMS if "gemm" in tables else []))
            .replace("DEPTHWISES", repr(DEPTHWISES if "depthwise" in tables else []))
            .replace("CONVS", repr(CONVS if "conv" in tables else []))
            .replace("ROUNDS", str(rounds)))
    with PolyfillServer(root=PAGES, headers=COI_HEADERS) as server, browsers.launch("chromium") as browser, \
            browser.new_page() as page:
        page.goto(f"{server.url}/kernel_pool.html?{settings}")
        facts = page.evaluate("window.booted", timeout=300)
        if "error" in facts or not facts["crossOriginIsolated"]:
            raise SystemExit(f"the GEMM page did not boot isolated: {facts}")
        out = page.evaluate(f"window.runPython({json.dumps(code)})", timeout=1800)
        out["engine"] = f"{browser.engine} {browser.version}"
        return out


def report_gemms(gemms: dict) -> None:
    for title, results, shape in (("GEMM m×k×n", gemms["results"], "{}×{}×{}"),
                                  ("conv h×c k×k /stride → n", gemms["convs"], "{0}×{1} {2}×{2} /{3} → {4}"),
                                  ("depthwise 3×3 h×c /stride", gemms["depthwises"], "{}×{} /{}")):
        report_calls(title, [(shape.format(*r["shape"]), r) for r in results])


def report_calls(title: str, results: list) -> None:
    rows = []
    for label, r in results:
        one, pool = median_ms(r["one"]), median_ms(r["pool"])
        s = r["stats"]
        gemm_pool = (f"{median_ms(r['gemm pool']) / one:.2f}× / {min(r['gemm pool']) / min(r['one']):.2f}×"
                     if "gemm pool" in r else "")
        rows.append((label, f"{one:.3f}", f"{pool:.3f}", f"{pool / one:.2f}×", gemm_pool,
                     f"{min(r['one']):.3f}", f"{min(r['pool']):.3f}",
                     f"{min(r['pool']) / min(r['one']):.2f}×",
                     f"{s['calls']}/{s['calls'] + s['oneThread']}", f"{s['workerTiles']}/{s['tiles']}", str(s["late"]),
                     str(s["wakeUps"]), f"{s['startMs'] / max(s['workerCalls'], 1):.3f}",
                     f"{s['mineMacs'] / max(s['mineMs'], 1e-9) * 2e-6:.0f}/{s['workerMacs'] / max(s['workerMs'], 1e-9) * 2e-6:.0f}",
                     *(f"{s[key] / max(s['calls'], 1):.3f}" for key in ("readyMs", "wakeMs", "copyMs", "waitMs"))))
    print_table((title, "1 thread ms", "pool ms", "pool/1T", "GEMM pooled/1T (median / min)", "min 1T", "min pool", "min ratio",
                 "pooled calls", "worker tiles", "late", "wake-ups", "worker start ms", "GFLOP/s page/worker", "ready ms", "wake ms", "copy in ms",
                 "wait+copy back ms"), rows)


def sides_for(pools: list[str]) -> dict:
    """{side: (page index, kind)}: page 0 webnn-py on one thread (through ORT-web's WebNN EP and
    through MLGraphBuilder directly, as bench/zoo.py's two webnn-py columns) + ORT-web 1T, page 1
    ORT-web 2T (whose threads spin on after its runs: nothing else runs in that page), page 2 + i
    the pool with the settings pools[i] (a query string of webnnPolyfillConfig options), again
    through the EP and through the builder."""
    sides = {"webnn-py 1T": (0, "webnn"), "builder 1T": (0, "builder")}
    for i, settings in enumerate(pools):
        sides[pool_side(i, pools)] = (2 + i, "webnn")
        sides[pool_side(i, pools, "builder")] = (2 + i, "builder")
    sides.update({"ORT-wasm 1T": (0, "wasm"), "ORT-wasm 2T": (1, "wasm")})
    return sides


def pool_side(index: int, pools: list[str], api: str = "webnn-py") -> str:
    return f"{api} pool" if len(pools) == 1 else f"{api} P{index + 1}"


def pool_short(index: int, pools: list[str]) -> str:
    return "pool" if len(pools) == 1 else f"P{index + 1}"


def model_bench(names: list[str], warm: dict, measure: float, min_runs: int, pools: list[str],
                trace: bool = False) -> dict:
    out = {}
    with tempfile.TemporaryDirectory(prefix="webnn-threads-") as tmp:
        directory = Path(tmp)
        print("exporting the models to ONNX ...", file=sys.stderr, flush=True)
        prepared = {name: Prepared(name, directory) for name in names}
        context = asyncio.run(webnn_py.ml.createContext())    # validates and shapes the recorded calls
        for p in prepared.values():
            p.write_recording(directory, context)              # the builder sides' graphs
        queries = ["threads=1&kernelThreads=0", "threads=2&kernelThreads=0"]
        queries += [f"threads=1&{settings}" + ("&kernelThreadsTrace=1" if trace else "") for settings in pools]
        with zoo_pages(directory, "chromium", "threads.html", queries) as (out["engine"], pages):
            sides = sides_for(pools)
            for name, p in prepared.items():
                print(f"{name}: warming each side up until its median settles, then timing {measure:g} s ...",
                      file=sys.stderr, flush=True)
                r = run_model(pages, sides, name, p, warm, measure, min_runs)
                setups = r.pop("setups")
                on_webnn = all(placed_on_webnn(setups[side]["log"]) for side, (_, kind) in sides.items()
                               if kind == "webnn")
                out[name] = {**r, "on_webnn": on_webnn, "threads": setups["ORT-wasm 2T"]["threads"]}
                if trace:   # every call of the warm-up and the timed runs, per pooled page
                    out[name]["trace"] = [pages[2 + i].evaluate("self.webnnKernelPoolTrace?.() ?? null")
                                          for i in range(len(pools))]
    return out


def report_trace(models: dict, names: list[str], pools: list[str]) -> None:
    """Per model and pool page: each shape the pool saw, how many calls chooseWay sent to the pool
    and to one thread, their medians, their fastest calls' ratio (a moment when a core was free)
    and the shape's share of the time; the wake-up figures."""
    for name in names:
        for i, trace in enumerate(models[name].get("trace") or []):
            if not trace:
                continue
            rows, total = [], sum(sum(s["pool"]) + sum(s["one"]) for s in trace["shapes"])
            for s in sorted(trace["shapes"], key=lambda s: -(sum(s["pool"]) + sum(s["one"]))):
                pool, one = (median_ms(s[w]) if s[w] else None for w in ("pool", "one"))
                fastest = min(s["pool"]) / min(s["one"]) if s["pool"] and s["one"] else None
                rows.append((s["key"], str(len(s["pool"])), str(len(s["one"])), f"{pool:.3f}" if pool else "-",
                             f"{one:.3f}" if one else "-", f"{pool / one:.2f}×" if pool and one else "-",
                             f"{fastest:.2f}×" if fastest else "-",
                             f"{100 * (sum(s['pool']) + sum(s['one'])) / total:.1f} %"))
            st = trace["stats"]
            print(f"\n{name}, {pool_side(i, pools)}: the pool's shapes (every call since the model's setup)")
            print_table(("shape", "pooled", "one thread", "pooled ms", "1T ms", "pooled/1T", "fastest pooled/1T", "share"),
                        rows)
            print(f"pooled calls {st['calls']:.0f}, one thread {st['oneThread']:.0f} (declined {st['declined']:.0f}); "
                  f"wake-ups {st['wakeUps']:.0f}, notify {st['wakeMs'] / max(st['wakeUps'], 1):.3f} ms each; "
                  f"worker start {st['startMs'] / max(st['workerCalls'], 1):.3f} ms a call "
                  f"({st['workerCalls']:.0f} calls); tiles {st['tiles']:.0f}, by workers {st['workerTiles']:.0f}, "
                  f"stolen {st['stolen']:.0f}, late {st['late']:.0f}")
            for what, times in (("notify", trace["wakes"]), ("worker start", trace["starts"])):
                if times:
                    q = statistics.quantiles(times, n=10) if len(times) > 1 else times * 9
                    print(f"{what} ms over {len(times)} calls: 10th percentile {q[0]:.3f}, median "
                          f"{statistics.median(times):.3f}, 90th {q[8]:.3f}, "
                          f"{100 * sum(t < 0.02 for t in times) / len(times):.0f} % under 0.02 ms")


def report_models(models: dict, names: list[str], pools: list[str]) -> bool:
    """The medians and, for each webnn-py way (EP: session.run() through ORT-web's WebNN EP;
    builder: writeTensor → dispatch → readTensor on navigator.ml, bench/zoo.py's builder column),
    one thread against ORT-web 2T, each pool page against one thread and against ORT-web 2T."""
    sides = sides_for(pools)
    ok, rows, ratios = True, [], {}
    for name in names:
        r = models[name]
        med = {side: median_ms(t) for side, t in r["times"].items()}
        q = {}
        for api, tag in (("webnn-py", "EP"), ("builder", "b")):
            one = med["webnn-py 1T" if api == "webnn-py" else "builder 1T"]
            q[f"1T/ORT 2T ({tag})"] = one / med["ORT-wasm 2T"]
            for i in range(len(pools)):
                side, short = pool_side(i, pools, api), pool_short(i, pools)
                q[f"{short}/1T ({tag})"] = med[side] / one
                q[f"{short}/ORT 2T ({tag})"] = med[side] / med["ORT-wasm 2T"]
        for key, value in q.items():
            ratios.setdefault(key, []).append(value)
        good = all(d[1] for d in r["diffs"].values()) and r["on_webnn"]
        ok = ok and good
        warm = "/".join(f"{w['ms'] / 1000:.0f}{'' if w['settled'] else '!'}" for w in r["warm"].values())
        rows.append((name, *(f"{med[side]:.2f}" for side in sides), *(f"{v:.2f}×" for v in q.values()),
                     "/".join(str(len(t)) for t in r["times"].values()), warm,
                     "ok" if good else "MISMATCH or not on WebNN"))
    rows.append(("geometric mean", *([""] * len(sides)), *(f"{geomean(v):.2f}×" for v in ratios.values()), "", "", ""))
    print_table(("model", *(f"{side} ms" for side in sides), *ratios, "timed runs", "warm-up s", "check"), rows)
    return ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=CNNS, default=CNNS)
    parser.add_argument("--gemms-only", action="store_true", help="part 1 only")
    parser.add_argument("--skip-gemms", action="store_true", help="part 2 only")
    parser.add_argument("--rounds", type=int, default=6, help="alternations per GEMM shape (default 6)")
    parser.add_argument("--tables", nargs="+", choices=("gemm", "conv", "depthwise"),
                        default=["gemm", "conv", "depthwise"], help="part 1's tables (default: all three)")
    parser.add_argument("--min-warmup", type=float, default=5.0)
    parser.add_argument("--max-warmup", type=float, default=40.0)
    parser.add_argument("--measure", type=float, default=10.0)
    parser.add_argument("--min-runs", type=int, default=10)
    parser.add_argument("--pool", nargs="+", default=[""], metavar="SETTINGS",
                        help="one pool page per value, a query string of webnnPolyfillConfig options "
                             "(e.g. kernelThreadsLingerMs=2; default: one page, \"\": the defaults)")
    parser.add_argument("--trace", action="store_true",
                        help="per model and pool page: every shape's pooled and one-thread calls (chooseWay's picks)")
    parser.add_argument("--no-setup", action="store_true", help="do not rebuild build/pyodide's wheel first")
    args = parser.parse_args(argv)
    prepare_browser_runtime(parser, "ort.all.min.mjs", rebuild=not args.no_setup)
    load = [os.getloadavg()[0]]
    gemms = models = None
    if not args.skip_gemms:
        gemms = {settings: gemm_bench(args.rounds, settings, args.tables) for settings in args.pool}
        load.append(os.getloadavg()[0])
    if not args.gemms_only:
        warm = {"minMs": args.min_warmup * 1000, "maxMs": args.max_warmup * 1000, "windowMs": 1000, "drop": DROP}
        models = model_bench(args.models, warm, args.measure, args.min_runs, args.pool, args.trace)
        load.append(os.getloadavg()[0])
    print(f"machine: {os.cpu_count()} CPUs, 1-minute load average " + " → ".join(f"{v:.1f}" for v in load))
    ok = True
    for settings, table in (gemms or {}).items():
        print(f"\nGEMMs: headless {table['engine']}, isolated page, {table['workers']} worker(s) + the page's thread"
              f"{', ' + settings if settings else ''}; packed constant B, bias + relu6 epilogue; medians and minima in ms")
        report_gemms(table)
    if models:
        print(f"\nModels: headless {models.pop('engine')}, isolated pages (kernelThreads 0 + ORT-web 1 thread; "
              "ORT-web 2 threads; the pool" + (f" pages P1..P{len(args.pool)}: " + ", ".join(
                  f"P{i + 1} {v or 'defaults'}" for i, v in enumerate(args.pool)) if len(args.pool) > 1 else "")
              + "); medians in ms of session.run() (webnn-py: through ORT-web's WebNN EP; ORT-wasm) and of "
              "writeTensor → dispatch → readTensor (builder: the same graph on navigator.ml directly)")
        ok = report_models(models, args.models, args.pool)
        report_trace(models, args.models, args.pool)
    print("\nratios: latency / latency (below 1: the first is faster).")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
