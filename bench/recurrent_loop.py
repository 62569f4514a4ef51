"""A loop over an lstmCell (issue 17 item 3), fused vs walked, on the host.

    nice -n 5 .venv/bin/python bench/recurrent_loop.py [--steps 32] [--input 64] [--hidden 128]
                                                       [--batch 1] [--samples 200] [--browser]

One graph: `loop` (trip count = steps, condition true) over a body that slices x
[steps, batch, input] along axis 0 and steps one lstmCell with constant weights, its
states carried by back edges, outputs the last states and the concatenated hidden
states. Timed side by side, samples alternating:
  fused    the graph as build() compiles it: the loop runs as one lstm sequence
           (webnn_py/runtime/compiler/recurrent_loop.py);
  walked   the same graph without the compiler's passes (ExecutionPlan(optimize=False):
           the loop's registered kernel, one walk of the body's plan per step), which is
           what every loop ran before;
  lstm     builder.lstm over the same weights (the operator itself, for scale).
Each sample is one plan.execute() (numpy's BLAS on one thread); the table gives the median wall-clock and CPU
(this thread) time per run and the ratios, with the load average before and after.

--browser: the same in headless Chromium through navigator.ml (bench/recurrent_loop.html,
the polyfill served by webnn_py.serve), each sample a block of `--repeat` runs of
writeTensor(x) + dispatch + await readTensor(sequence); there "walked" is the same loop
with the cell's weight a body input bound to a graph input (written once), so not fused,
as the page cannot switch the compiler off (the cell kernel reads its weights at every
step either way, so each step's work is the same). Warm-up until a batch median stops
falling by 2 %.

Numbers only, no assertion.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")     # numpy's BLAS on one thread, as bench/zoo.py

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import webnn_py  # noqa: E402
from webnn_py.runtime.plan import ExecutionPlan  # noqa: E402


def f32(*shape):
    return {"dataType": "float32", "shape": list(shape)}


def const(b, a):
    return b.constant(f32(*a.shape), np.ascontiguousarray(a))


async def build_plans(steps: int, batch: int, input_size: int, hidden: int, rng):
    w = rng.uniform(-0.2, 0.2, (4 * hidden, input_size)).astype(np.float32)
    r = rng.uniform(-0.2, 0.2, (4 * hidden, hidden)).astype(np.float32)
    bias = rng.uniform(-0.2, 0.2, 4 * hidden).astype(np.float32)
    context = await webnn_py.ml.createContext()
    bb = webnn_py.MLGraphBuilder(context)
    h, c = bb.input("h", f32(batch, hidden)), bb.input("c", f32(batch, hidden))
    h2, c2 = bb.lstmCell(bb.reshape(bb.input("x", f32(1, batch, input_size)), [batch, input_size]),
                         const(bb, w), const(bb, r), h, c, hidden, {"bias": const(bb, bias)})
    body = await bb.build({"h_out": h2, "c_out": c2, "seq": bb.reshape(h2, [1, batch, hidden]),
                           "cond": bb.identity(bb.constant("uint8", 1))})

    b = webnn_py.MLGraphBuilder(context)
    x, h0, c0 = b.input("x", f32(steps, batch, input_size)), b.input("h0", f32(batch, hidden)), b.input("c0", f32(batch, hidden))
    looped = b.loop(b.constant("int32", steps), b.constant("uint8", 1), body, "cond",
                    [{"bodyInput": "x", "value": x, "axis": 0}, {"bodyInput": "h", "value": h0},
                     {"bodyInput": "c", "value": c0}],
                    [{"bodyOutput": "h_out"}, {"bodyOutput": "c_out"}, {"bodyOutput": "seq", "axis": 0}],
                    {"backEdges": [{"from": "h_out", "to": "h"}, {"from": "c_out", "to": "c"}]})
    outputs = {"h": looped[0], "c": looped[1], "seq": looped[2]}
    graph = await b.build(outputs)
    walked = ExecutionPlan({n: o._value for n, o in outputs.items()}, optimize=False)

    lb = webnn_py.MLGraphBuilder(context)
    seq = lb.lstm(lb.input("x", f32(steps, batch, input_size)), const(lb, w[None]), const(lb, r[None]), steps, hidden,
                  {"bias": const(lb, bias[None]), "returnSequence": True,
                   "initialHiddenState": lb.reshape(lb.input("h0", f32(batch, hidden)), [1, batch, hidden]),
                   "initialCellState": lb.reshape(lb.input("c0", f32(batch, hidden)), [1, batch, hidden])})
    lstm_graph = await lb.build({"h": seq[0], "c": seq[1], "seq": seq[2]})
    return {"fused": graph._implementation, "walked": walked, "lstm": lstm_graph._implementation}


def browser(args) -> None:
    from bench.call_cost import build_runtime, warm_up
    from browsers.chromium import launch_chromium
    from webnn_py.serve import PolyfillServer

    build_runtime(REPO)
    load = [os.getloadavg()[0]]
    with PolyfillServer(root=REPO / "bench") as server, launch_chromium() as chromium:
        page = chromium.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{server.url}/recurrent_loop.html")
        page.wait_for_function("self.benchReady === true", timeout=120_000)
        names = page.evaluate(f"setUp({args.steps}, {args.batch}, {args.input}, {args.hidden})")
        for other in names[1:]:
            print(f"max |{names[0]} - {other}| of the sequence: "
                  f"{page.evaluate(f'maxDifference({names[0]!r}, {other!r})'):.2e}")
        samples = {name: [] for name in names}
        for name in names:
            warm_up(lambda name=name: page.evaluate(f"sample({name!r}, {args.repeat})"), args.max_warmup)
        load.append(os.getloadavg()[0])
        for index in range(args.samples):
            for name in names[index % len(names):] + names[:index % len(names)]:     # rotated order
                samples[name].append(page.evaluate(f"sample({name!r}, {args.repeat})"))
        load.append(os.getloadavg()[0])
        if errors:
            raise SystemExit(f"page errors: {errors}")
    print(f"Chromium, loop over lstmCell, {args.steps} steps, {args.input} -> {args.hidden}, batch {args.batch}: "
          f"median ms per writeTensor + dispatch + readTensor ({args.samples} samples of {args.repeat} runs)")
    base = statistics.median(samples["walked"])
    for name in names:
        median = statistics.median(samples[name])
        print(f"  {name:8} {median:9.3f} ms   walked/x {base / median:6.1f}")
    print("load average (1 min) at start, after warm-up, at end: " + " ".join(f"{x:.2f}" for x in load))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--input", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--browser", action="store_true", help="in headless Chromium instead of the host")
    parser.add_argument("--repeat", type=int, default=5, help="--browser: runs per sample")
    parser.add_argument("--max-warmup", type=float, default=15.0, help="--browser: seconds of warm-up at most, per graph")
    args = parser.parse_args()
    if args.browser:
        browser(args)
        return
    rng = np.random.default_rng(0)
    plans = asyncio.run(build_plans(args.steps, args.batch, args.input, args.hidden, rng))
    feeds = {"x": rng.uniform(-1, 1, (args.steps, args.batch, args.input)).astype(np.float32),
             "h0": np.zeros((args.batch, args.hidden), np.float32), "c0": np.zeros((args.batch, args.hidden), np.float32)}
    results = {name: plan.execute(feeds) for name, plan in plans.items()}
    for name in ("h", "c", "seq"):     # the same values, within the kernels' float32 accuracy
        difference = np.abs(results["fused"][name] - results["walked"][name]).max()
        print(f"max |fused - walked| {name}: {difference:.2e}")
    load_before = os.getloadavg()
    wall = {name: [] for name in plans}
    cpu = {name: [] for name in plans}
    for _ in range(10):               # warm-up
        for plan in plans.values():
            plan.execute(feeds)
    for sample in range(args.samples):
        names = list(plans)
        names = names[sample % len(names):] + names[:sample % len(names)]     # rotated order
        for name in names:
            start_wall, start_cpu = time.perf_counter(), time.thread_time()
            plans[name].execute(feeds)
            cpu[name].append(time.thread_time() - start_cpu)
            wall[name].append(time.perf_counter() - start_wall)
    load_after = os.getloadavg()
    print(f"loop over lstmCell, {args.steps} steps, {args.input} -> {args.hidden}, batch {args.batch}; "
          f"{args.samples} samples each; load average {load_before[0]:.2f} -> {load_after[0]:.2f}; "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '')}")
    base_wall, base_cpu = statistics.median(wall["walked"]), statistics.median(cpu["walked"])
    print(f"{'':8} {'wall ms':>9} {'cpu ms':>9} {'walked/x (wall)':>16} {'walked/x (cpu)':>15}")
    for name in plans:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        print(f"{name:8} {w * 1e3:9.3f} {c * 1e3:9.3f} {base_wall / w:16.1f} {base_cpu / c:15.1f}")


if __name__ == "__main__":
    main()
