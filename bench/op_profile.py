"""Per-operator time breakdown of one benchmark model, on host CPython or inside Pyodide.

The model is built through webnn_py's public API (bench/models.py's emit), then
its compiled plan runs with `ExecutionPlan.execute(inputs, profile=dict)`, which
adds up seconds per plan step name (an operator kind, or the name of a fused
step such as "conv2d+clamp"). Calling the plan directly skips the context
timeline and the tensor copies, so the steps add up to the kernels' time only;
the benchmark prints that total beside the dispatch latency.
"""
from __future__ import annotations

import inspect
import time

import numpy as np


async def profile_model(name: str, runs: int = 5) -> dict:
    """{"steps": {step name: ms per run}, "total_ms", "runs", "method"} for bench/models.py's `name`."""
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
    plan.execute(inputs)                      # first run: one-time checks and allocations
    if "profile" in inspect.signature(plan.execute).parameters:
        method = "ExecutionPlan.execute(profile=...)"
        totals: dict[str, float] = {}
        for _ in range(runs):
            plan.execute(inputs, profile=totals)
    else:
        method = "external per-step timing (this plan has no profile argument)"
        totals = _time_steps(plan, inputs, runs)
    context.destroy()
    steps = {key: seconds * 1000 / runs for key, seconds in totals.items()}
    return {"steps": steps, "total_ms": sum(steps.values()), "runs": runs, "method": method}


def _time_steps(plan, inputs, runs) -> dict[str, float]:
    """Fallback for a plan without execute(profile=): walk its steps like execute() does."""
    totals: dict[str, float] = {}
    for _ in range(runs):
        slots = [None] * plan.slot_count
        for slot, array in plan.constants.items():
            slots[slot] = array
        for input_name, slot in plan.input_slots.items():
            slots[slot] = inputs[input_name]
        for step in plan.steps:
            start = time.perf_counter()
            results = step.kernel([None if i < 0 else slots[i] for i in step.input_slots],
                                  step.node.attributes, step.output_descriptors)
            results = [np.asarray(r) for r in results]
            key = getattr(step, "name", "") or step.node.kind
            totals[key] = totals.get(key, 0.0) + time.perf_counter() - start
            for slot, result in zip(step.output_slots, results):
                slots[slot] = result
    return totals
