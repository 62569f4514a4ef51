"""loop: OpenVINO Loop-5 control flow (../shared/spec/003_ea60059f0e025f60.txt),
our extension (idl/extensions.idl, whose comments state the conventions).

The body is a graph compiled elsewhere; this module sees it only through the
build context's `subgraph(name, graph)`, which returns the body's input and
output descriptors and an opaque handle. The handle offers
  * depends_on_inputs(output) -> bool   (does that body output read any body input?)
  * evaluate(output) -> ndarray         (the value of an output that reads no input)
  * run_loop(arrays, attributes, output descriptors) -> arrays   (the kernel)
so that this module stays free of api/ and runtime/ (runtime/loop.py holds the
execution).
"""
from __future__ import annotations

from ..base.descriptor import OperandDescriptor
from .registry import ANY, BuildContext, TensorLimits, register

DEFAULT_MAX_ITERATIONS = 1_000_000   # idl/extensions.idl: MLLoopOptions.maxIterations

LIMITS = {
    # Loop-5 "ループの入力": int32/int64 trip count, boolean condition (uint8 in WebNN),
    # each a scalar or a 1-element 1-D tensor.
    "tripCount": TensorLimits(("int32", "int64"), 0, 1),
    "executionCondition": TensorLimits(("uint8",), 0, 1),
    "inputs": ANY,
    "outputs": ANY,
}


def _check_one_element(ctx: BuildContext, name: str, desc: OperandDescriptor) -> None:
    if desc.shape not in ((), (1,)):
        ctx.fail(f"{name} must be a scalar or a 1-element 1-D tensor, not shape {list(desc.shape)}")


def _normalize_axis(ctx: BuildContext, name: str, axis: int, rank: int) -> int:
    # Loop-5 port_map `axis`: "負の値は、次元を端から数えることを意味します" (negative counts from the end).
    if not -rank <= axis < rank:
        ctx.fail(f"{name} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def build(ctx: BuildContext, trip_count, execution_condition, body, condition_output: str,
          inputs: list, outputs: list, options: dict):
    trip_desc = ctx.check("tripCount", trip_count)
    _check_one_element(ctx, "tripCount", trip_desc)
    cond_desc = ctx.check("executionCondition", execution_condition)
    _check_one_element(ctx, "executionCondition", cond_desc)
    body_inputs, body_outputs, handle = ctx.subgraph("body", body)

    def input_names() -> str:
        return ", ".join(repr(n) for n in body_inputs) or "none"

    def output_names() -> str:
        return ", ".join(repr(n) for n in body_outputs)

    # The body output giving the next iteration's condition (purpose="execution_condition").
    if condition_output not in body_outputs:
        ctx.fail(f"conditionOutput {condition_output!r} is not an output of the body (outputs: {output_names()})")
    condition_desc = body_outputs[condition_output]
    if condition_desc.data_type != "uint8" or condition_desc.shape not in ((), (1,)):
        ctx.fail(f"the body's condition output {condition_output!r} is {condition_desc}; "
                 "it must be a uint8 scalar or 1-element 1-D tensor")

    # Input bindings: each body input once, as-is or sliced along an axis.
    bound: dict[str, int | None] = {}     # body input -> slicing axis (None: as-is)
    bindings, operands, slice_counts = [], [], []
    for index, entry in enumerate(inputs):
        name, value, axis = entry["bodyInput"], entry["value"], entry.get("axis")
        where = f"inputs[{index}] (bodyInput {name!r})"
        if name not in body_inputs:
            ctx.fail(f"{where}: the body has no such input (inputs: {input_names()}; an input that no "
                     "body output reads is not an input of the body graph)")
        if name in bound:
            ctx.fail(f"{where}: the body input is bound more than once")
        desc = ctx.check(f"{where} value", value, LIMITS["inputs"])
        expected = body_inputs[name]
        if axis is not None:
            if desc.rank == 0:
                ctx.fail(f"{where}: a scalar cannot be sliced along axis {axis}")
            axis = _normalize_axis(ctx, f"{where} axis", axis, desc.rank)
            # One slice per iteration, part size 1, the axis kept (as OpenVINO slices).
            shape = list(desc.shape)
            slice_counts.append(shape[axis])
            shape[axis] = 1
            desc = OperandDescriptor(desc.data_type, tuple(shape))
        if desc != expected:
            sliced = " once sliced" if axis is not None else ""
            ctx.fail(f"{where}: the value{sliced} is {desc}, the body input is {expected}")
        bound[name] = axis
        bindings.append((name, axis))
        operands.append(value)

    # The current-iteration input (purpose="current_iteration").
    current = options.get("currentIteration")
    current_info = None
    if current is not None:
        if current not in body_inputs:
            ctx.fail(f"currentIteration {current!r} is not an input of the body (inputs: {input_names()})")
        if current in bound:
            ctx.fail(f"currentIteration {current!r} is also bound by inputs")
        desc = body_inputs[current]
        if desc.data_type not in ("int32", "int64") or desc.shape not in ((), (1,)):
            ctx.fail(f"the currentIteration input {current!r} is {desc}; it must be an int32 or int64 scalar "
                     "or 1-element 1-D tensor")
        current_info = (current, desc.type.numpy, desc.shape)

    # Back edges: body output -> body input for the next iteration.
    back_edges, targets = [], set()
    for index, edge in enumerate(options.get("backEdges", [])):
        source, target = edge["from"], edge["to"]
        where = f"backEdges[{index}] ({source!r} -> {target!r})"
        if source not in body_outputs:
            ctx.fail(f"{where}: {source!r} is not an output of the body (outputs: {output_names()})")
        if target not in body_inputs:
            ctx.fail(f"{where}: {target!r} is not an input of the body (inputs: {input_names()})")
        if target in targets:
            ctx.fail(f"{where}: the body input {target!r} is the target of another back edge")
        if target == current:
            ctx.fail(f"{where}: {target!r} is the currentIteration input")
        if target not in bound or bound[target] is not None:
            ctx.fail(f"{where}: the body input {target!r} needs its initial value from an MLLoopInput without axis")
        if body_outputs[source] != body_inputs[target]:
            ctx.fail(f"{where}: the body output is {body_outputs[source]}, the body input is {body_inputs[target]}")
        targets.add(target)
        back_edges.append((source, target))

    unbound = [n for n in body_inputs if n not in bound and n != current]
    if unbound:
        ctx.fail(f"body inputs {', '.join(repr(n) for n in unbound)} are not bound (by inputs or currentIteration)")

    max_iterations = options.get("maxIterations", DEFAULT_MAX_ITERATIONS)
    slice_count = min(slice_counts) if slice_counts else None

    # Outputs: last-iteration values or concatenations over all iterations.
    results, descs = [], []
    count = reason = None
    for index, entry in enumerate(outputs):
        name, axis = entry["bodyOutput"], entry.get("axis")
        where = f"outputs[{index}] (bodyOutput {name!r})"
        if name not in body_outputs:
            ctx.fail(f"{where}: the body has no such output (outputs: {output_names()})")
        desc = body_outputs[name]
        if axis is not None:
            if desc.rank == 0:
                ctx.fail(f"{where}: a scalar cannot be concatenated along axis {axis}")
            axis = _normalize_axis(ctx, f"{where} axis", axis, desc.rank)
            if count is None and reason is None:
                count, reason = _static_iteration_count(ctx, trip_count, execution_condition, handle,
                                                        condition_output, slice_count)
            if count is None:
                ctx.fail(f"{where} is concatenated over the iterations, but their number is not known at "
                         f"build time ({reason}); WebNN operands need static shapes")
            if count == 0:
                ctx.fail(f"{where} is concatenated over the iterations, but the loop runs zero times and "
                         "WebNN has no zero-size dimensions")
            if count > max_iterations:
                ctx.fail(f"the loop runs {count} iterations, more than maxIterations ({max_iterations})")
            shape = list(desc.shape)
            shape[axis] *= count
            desc = OperandDescriptor(desc.data_type, tuple(shape))
        results.append((name, axis))
        descs.append(desc)

    attributes = {
        "body": handle, "condition": condition_output, "bindings": tuple(bindings),
        "back_edges": tuple(back_edges), "current_iteration": current_info, "outputs": tuple(results),
        "max_iterations": max_iterations, "slice_count": slice_count,
        "label": ctx.label,  # run-time errors name the operator as build-time ones do
    }
    return ctx.emit([trip_count, execution_condition, *operands], descs, attributes)


def _static_iteration_count(ctx, trip_count, execution_condition, handle, condition_output, slice_count):
    """(count, None) when the number of iterations is known at build time, else
    (None, why not). Follows the five cases of Loop-5's pseudo-code."""
    condition = ctx.constant_value(execution_condition)
    if condition is None:
        return None, "executionCondition is not a constant"
    if not condition.reshape(-1)[0]:
        return 0, None
    trip = ctx.constant_value(trip_count)
    if trip is None:
        return None, "tripCount is not a constant"
    trip = int(trip.reshape(-1)[0])
    limit = trip if trip >= 0 else None
    if slice_count is not None:
        limit = slice_count if limit is None else min(limit, slice_count)
    if limit == 0:
        return 0, None
    if handle.depends_on_inputs(condition_output):
        return None, f"the body's condition output {condition_output!r} depends on body inputs"
    try:
        again = bool(handle.evaluate(condition_output).reshape(-1)[0])
    except Exception as exc:  # noqa: BLE001 -- a body that cannot be evaluated leaves the count unknown
        return None, f"evaluating the body's condition output failed: {exc}"
    if not again:
        return 1, None       # do-while: the first iteration runs, then the condition is false
    if limit is None:
        return None, "tripCount is negative and the body's condition is always true: the loop never ends"
    return limit, None


def kernel(inputs, attributes, outputs):
    # The execution lives in runtime/loop.py, reached through the body handle. It
    # returns a generator (yielding between iterations, so a dispatch can hand the
    # thread back to the page); the plan drives it and takes its return value.
    return attributes["body"].run_loop(inputs, attributes, outputs)


register("loop", build=build, kernel=kernel, limits=LIMITS)
