"""Per-step time of the zoo's models on the host: where webnn_py's plan spends a run.

    .venv/bin/python bench/zoo_profile.py [--models NAME ...] [--runs N] [--warmup S] [--top N]

Each model (bench/zoo_models.py) is exported to ONNX, translated to builder calls
(bench/onnx_webnn.py) and built; its compiled plan then runs with
`ExecutionPlan.execute(inputs, profile=...)`, which adds up seconds per step name
(an operator kind or a fused step such as "conv2d+add+clamp"). Printed per model:
the steps by total time (minimum over --runs runs of each step name's sum, which
is what a quiet machine would show), their count in the plan, the plan's total,
and onnxruntime native's median (CPU EP, 1 thread) beside it, with the load
average. The plan is called directly (no writeTensor / readTensor / timeline), so
the total is the kernels' and the plan walk's time only.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

# bench/zoo.py gives numpy's BLAS one thread (before numpy loads) and puts the repository on
# sys.path; its imports are this script's too.
from zoo import ZOO, emit_onnx, export_zoo  # noqa: E402


async def profile(name: str, directory: Path, runs: int, warmup: float) -> dict:
    import onnxruntime

    import webnn_py

    exported = export_zoo(name, directory)
    context = await webnn_py.ml.createContext()
    builder = webnn_py.MLGraphBuilder(context)
    graph = await builder.build(emit_onnx(exported.path, builder))
    plan = graph._implementation          # api/graph.py keeps the compiled ExecutionPlan here
    inputs = dict(exported.inputs)
    start = time.perf_counter()
    plan.execute(inputs)
    while time.perf_counter() - start < warmup:
        plan.execute(inputs)
    per_run = []
    totals = []
    for _ in range(runs):
        sample: dict[str, float] = {}
        t0 = time.perf_counter()
        plan.execute(inputs, profile=sample)
        totals.append(time.perf_counter() - t0)
        per_run.append(sample)
    steps = {key: min(s[key] for s in per_run) * 1000 for key in per_run[0]}
    counts: dict[str, int] = {}
    for step in plan.steps:
        counts[step.name] = counts.get(step.name, 0) + 1
    context.destroy()

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(exported.path), options, providers=["CPUExecutionProvider"])
    ort_times = []
    start = time.perf_counter()
    while time.perf_counter() - start < max(warmup, 0.5) or len(ort_times) < runs:
        t0 = time.perf_counter()
        session.run(None, exported.inputs)
        ort_times.append(time.perf_counter() - t0)
    ort_times = ort_times[len(ort_times) // 2:]
    return {"steps": steps, "counts": counts, "plan_min_ms": min(totals) * 1000,
            "plan_median_ms": statistics.median(totals) * 1000,
            "ort_min_ms": min(ort_times) * 1000, "ort_median_ms": statistics.median(ort_times) * 1000}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=list(ZOO), default=[m for m in ZOO if m != "add"])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--top", type=int, default=12, help="step names printed per model")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="webnn-zoo-profile-") as tmp:
        for name in args.models:
            r = asyncio.run(profile(name, Path(tmp), args.runs, args.warmup))
            steps = sorted(r["steps"].items(), key=lambda kv: -kv[1])
            print(f"\n{name}: plan {r['plan_min_ms']:.3f} ms min / {r['plan_median_ms']:.3f} median, "
                  f"{sum(r['counts'].values())} steps, sum of per-name minima {sum(r['steps'].values()):.3f} ms; "
                  f"onnxruntime native 1T {r['ort_min_ms']:.3f} min / {r['ort_median_ms']:.3f} median "
                  f"(load {os.getloadavg()[0]:.1f})")
            for key, ms in steps[:args.top]:
                print(f"  {ms:8.3f} ms  {r['counts'].get(key, 0):3d}×  {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
