"""Per-operator time breakdown of one benchmark model, on host CPython or inside Pyodide.

The model is built through webnn_py's public API (bench/models.py's emit), then
its compiled plan runs with `ExecutionPlan.execute(inputs, profile=dict)`, which
adds up seconds per plan step name (an operator kind, or the name of a fused
step such as "conv2d+clamp"). Calling the plan directly skips the context
timeline and the tensor copies, so the steps add up to the kernels' time only;
the benchmark prints that total beside the dispatch latency.
"""
from __future__ import annotations

import time


async def profile_model(name: str, runs: int = 5, warmup: float = 0.0) -> dict:
    """{"steps": {step name: ms per run}, "counts": {step name: steps in the plan}, "total_ms", "runs"}
    for bench/models.py's `name`, after `warmup` seconds of unprofiled runs (wasm tiers up gradually)."""
    import webnn_py
    from models import MODELS, emit

    model = MODELS[name]()
    context = await webnn_py.ml.createContext()
    builder = webnn_py.MLGraphBuilder(context)
    graph = await builder.build(emit(model, builder))
    inputs = model.sample_inputs()
    # build() resolves once the plan exists; MLGraph keeps it as its implementation (api/graph.py).
    plan = graph._implementation
    if plan is None:
        raise RuntimeError("the built graph has no execution plan")
    start = time.perf_counter()
    plan.execute(inputs)                      # first run: one-time checks and allocations
    while time.perf_counter() - start < warmup:
        plan.execute(inputs)
    totals: dict[str, float] = {}
    for _ in range(runs):
        plan.execute(inputs, profile=totals)
    counts: dict[str, int] = {}
    for step in plan.steps:
        counts[step.name] = counts.get(step.name, 0) + 1
    context.destroy()
    steps = {key: seconds * 1000 / runs for key, seconds in totals.items()}
    return {"steps": steps, "counts": counts, "total_ms": sum(steps.values()), "runs": runs}

