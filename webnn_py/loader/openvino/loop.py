"""Loop-5 (../shared/spec/003_ea60059f0e025f60.txt) onto our builder `loop`
(idl/extensions.idl, ops/loop.py).

The body becomes its own MLGraph (another MLGraphBuilder on the same context):
each body Parameter a graph input named "p<id>", each Result that the Loop
reads a graph output named "r<id>". port_map inputs become MLLoopInputs
(sliced when they have an `axis`), the current_iteration Parameter the
`currentIteration` option, the execution_condition Result `conditionOutput`,
back_edges `backEdges`, and port_map outputs MLLoopOutputs (concatenated when
they have an `axis`).

Slicing attributes (start, end, stride, part_size; Loop-5 names only `axis`,
these come from TensorIterator-1's port_map, which OpenVINO's Loop shares):
start and end are inclusive positions along the axis, negative ones counted
from the end (so the default 0..-1 is the whole axis); iteration i takes
part_size elements from start + i*stride (for a negative stride, the part
ends there); there are as many iterations as whole parts fit between start and
end. Our builder loop slices with part size 1 and stride 1 only, so any other
slicing gathers the parts into a new axis in the outer graph, and the body
reshapes each part back. OpenVINO's Loop accepts only the defaults on
concatenated outputs, and so do we.

Where OpenVINO's runtime departs from the spec text we follow the text: a
negative slicing or concatenation axis counts from the end, and a Loop that
runs zero times gives its initial values and an empty concatenation (an Empty
value, see translate.py).

Concatenated outputs whose size is not known at load time (a while loop) need
the iteration count: `Session.counts` has it once model.py has run the graph
up to this Loop in counting mode (the body then carries an extra counter
through a back edge, and computes only what its condition reads); with the
count known, the Loop is emitted with that
constant trip count and an always-true condition, so its shapes are static.
"""
from __future__ import annotations

import numpy as np

from ...api.builder import MLGraphBuilder
from .ir import element_type, shape_attribute, ELEMENT_TYPES
from .translate import Counted, Empty, NeedCount, Translator

COUNTER_IN, COUNTER_OUT = "__count", "__count_next"


def _entries(t, layer, kind: str) -> list[dict]:
    port_map = layer.element.find("port_map")
    if port_map is None:
        raise t.malformed("the Loop has no <port_map>")
    out = []
    for el in port_map.findall(kind):
        entry = dict(el.attrib)
        for key in ("external_port_id", "internal_layer_id", "axis", "start", "end", "stride", "part_size"):
            if key in entry:
                try:
                    entry[key] = int(entry[key])
                except ValueError:
                    raise t.malformed(f"port_map {kind} attribute {key}={entry[key]!r} is not an integer") from None
        if "internal_layer_id" not in entry or "external_port_id" not in entry:
            raise t.malformed(f"a port_map {kind} lacks external_port_id or internal_layer_id")
        out.append(entry)
    return out


def _slicing(t, entry, dim: int):
    """The start position of every part, or None for the default (the whole
    axis, part size 1, stride 1), which the builder loop slices itself."""
    start, end = entry.get("start", 0), entry.get("end", -1)
    stride, part = entry.get("stride", 1), entry.get("part_size", 1)
    if stride == 0 or part < 1:
        raise t.malformed(f"port_map input stride {stride} / part_size {part} must be non-zero / positive")
    s = start + dim if start < 0 else start
    e = end + dim if end < 0 else end
    if not (0 <= s < dim and 0 <= e < dim):
        raise t.malformed(f"port_map input start {start} / end {end} lie outside an axis of size {dim}")
    if (s, e, stride, part) == (0, dim - 1, 1, 1):
        return None
    if stride > 0:
        count = (e - s - part + 1) // stride + 1 if e - s + 1 >= part else 0
        return [s + i * stride for i in range(count)], part
    count = (s - e - part + 1) // -stride + 1 if s - e + 1 >= part else 0
    return [s + i * stride - part + 1 for i in range(count)], part


async def translate_loop(t: Translator, layer, inputs) -> list:
    key = t.path + str(layer.id)
    session = t.session
    body_graph = layer.body
    if len(layer.inputs) < 2:
        raise t.malformed("a Loop needs the trip count and execution condition inputs")
    by_port = {port.id: value for port, value in zip(layer.inputs, inputs)}
    trip, condition = inputs[0], inputs[1]
    if t.data_type(trip) not in ("int32", "int64"):
        raise t.malformed(f"the trip count is {t.data_type(trip)}, not i32 or i64")
    if t.data_type(condition) != "uint8":
        raise t.malformed(f"the execution condition is {t.data_type(condition)}, not boolean")
    for what, value in (("trip count", trip), ("execution condition", condition)):
        if t.shape(value) not in ((), (1,)):
            raise t.malformed(f"the {what} has shape {list(t.shape(value))}; Loop-5 wants a scalar or a "
                              "1-element 1-D tensor")

    in_entries, out_entries = _entries(t, layer, "input"), _entries(t, layer, "output")
    params = {lid: l for lid, l in body_graph.layers.items() if l.type == "Parameter"}
    results = {lid: l for lid, l in body_graph.layers.items() if l.type == "Result"}
    back_edges = []
    edges_el = layer.element.find("back_edges")
    for edge in (edges_el.findall("edge") if edges_el is not None else []):
        try:
            source, target = int(edge.get("from-layer")), int(edge.get("to-layer"))
        except (TypeError, ValueError):
            raise t.malformed("a back edge's from-layer / to-layer is not an integer") from None
        if source not in results or target not in params:
            raise t.malformed(f"back edge {source} -> {target} must go from a body Result to a body Parameter")
        back_edges.append((source, target))

    # -- the body's inputs -----------------------------------------------------------------
    body = MLGraphBuilder(t.b._context)
    body_values: dict[int, object] = {}
    bindings = []              # (param id, outer operand, axis or None)
    no_slices = False          # a sliced input has no whole part: zero iterations
    current = None
    condition_id = None
    for entry in in_entries:
        pid = entry["internal_layer_id"]
        if pid not in params:
            raise t.malformed(f"port_map input internal_layer_id {pid} is not a body Parameter")
        if entry.get("purpose") == "current_iteration":
            kind = element_type(params[pid])
            shape = shape_attribute(params[pid])
            if ELEMENT_TYPES[kind][1] not in ("int32", "int64") or shape not in ((), (1,)):
                raise t.malformed("the current_iteration Parameter must be an i32/i64 scalar or 1-element tensor")
            current = pid
            body_values[pid] = body.input(f"p{pid}", {"dataType": ELEMENT_TYPES[kind][1], "shape": list(shape)})
            continue
        port = entry["external_port_id"]
        if port not in by_port or port in (layer.inputs[0].id, layer.inputs[1].id):
            raise t.malformed(f"port_map input external_port_id {port} is not one of the Loop's data inputs")
        outer = by_port[port]
        if isinstance(outer, Empty):
            t.operand(outer)      # raises: an empty tensor cannot enter a loop
        shape = list(t.shape(outer))
        data_type = t.data_type(outer)
        axis = entry.get("axis")
        if axis is None:
            body_values[pid] = body.input(f"p{pid}", {"dataType": data_type, "shape": shape})
            bindings.append((pid, outer, None))
            continue
        axis = t.axis(axis, len(shape), "port_map input axis")
        slicing = _slicing(t, entry, shape[axis])
        part_shape = list(shape)
        if slicing is None:
            part_shape[axis] = 1
            body_values[pid] = body.input(f"p{pid}", {"dataType": data_type, "shape": part_shape})
            bindings.append((pid, outer, axis))
            continue
        starts, part = slicing
        part_shape[axis] = part
        if not starts:
            # Not one whole part fits: the loop runs zero times. The body still
            # needs this input, with the part's shape, for its output shapes.
            no_slices = True
            body_values[pid] = body.input(f"p{pid}", {"dataType": data_type, "shape": part_shape})
            bindings.append((pid, outer, axis))
            continue
        # Gather the parts into a new axis: [..., count, part, ...]; the body reshapes each back.
        positions = np.array([[s + j for j in range(part)] for s in starts], dtype=np.int32)
        if isinstance(outer, np.ndarray):
            gathered = np.take(outer, positions, axis=axis)
        else:
            gathered = t.b.gather(outer, t.operand(positions), {"axis": axis})
        sliced_shape = shape[:axis] + [1, part] + shape[axis + 1:]
        raw = body.input(f"p{pid}", {"dataType": data_type, "shape": sliced_shape})
        body_values[pid] = body.reshape(raw, part_shape)
        bindings.append((pid, gathered, axis))
    bound = {pid for pid, _, _ in bindings} | ({current} if current is not None else set())
    for pid in params:
        if pid not in bound:
            raise t.malformed(f"body Parameter {pid} is bound neither by port_map nor as current_iteration")
    for source, target in back_edges:
        if not any(pid == target and axis is None for pid, _, axis in bindings):
            raise t.malformed(f"back edge {source} -> {target}: the Parameter's initial value must come from a "
                              "port_map input without axis")

    outputs = []               # (external port, result id, axis or None)
    for entry in out_entries:
        rid = entry["internal_layer_id"]
        if rid not in results:
            raise t.malformed(f"port_map output internal_layer_id {rid} is not a body Result")
        if entry.get("purpose") == "execution_condition":
            condition_id = rid
            continue
        axis = entry.get("axis")
        if axis is not None and (entry.get("start", 0), entry.get("stride", 1), entry.get("part_size", 1),
                                 entry.get("end", -1)) != (0, 1, 1, -1):
            raise t.malformed("a concatenated output takes only start 0, stride 1, part_size 1, end -1 "
                              "(as OpenVINO's Loop defines)")
        outputs.append((entry["external_port_id"], rid, axis))
    if condition_id is None:
        raise t.malformed('the port_map has no output with purpose="execution_condition"')
    concatenated = any(axis is not None for _, _, axis in outputs)
    known = session.counts.get(key) if concatenated else None
    if no_slices or _never_starts(trip, condition):
        known = 0
    if known == 0:
        return await _zero_iterations(t, layer, key, body, body_graph, body_values, bindings, out_entries,
                                      back_edges)
    counting = session.count_target == key

    # -- the body ---------------------------------------------------------------------------
    translated = await Translator(body, body_graph, session, key + "/", in_body=True).run(body_values)
    t.layer = layer
    body_outputs = {}
    needed = {rid for _, rid, _ in outputs} | {s for s, _ in back_edges} | {condition_id}
    if counting:
        # Only what the condition reads (through back edges too) decides the count.
        needed = _condition_closure(body_graph, condition_id, back_edges)
    for rid in needed:
        value = translated[rid]
        if isinstance(value, Empty):
            raise t.unsupported(f"body Result {rid} is empty; WebNN operands cannot be empty")
        if known is not None and rid == condition_id:
            value = np.ones((), np.uint8)       # the count is known: the trip count alone ends the loop
        body_outputs[f"r{rid}"] = body.identity(_body_operand(body, value))
    if counting:
        counter = body.input(COUNTER_IN, {"dataType": "int32", "shape": []})
        body_outputs[COUNTER_OUT] = body.add(counter, body.constant({"dataType": "int32", "shape": []},
                                                                    np.ones((), np.int32)))
    graph = await body.build(body_outputs)
    used = graph._input_descriptors

    loop_inputs = [{"bodyInput": f"p{pid}", "value": t.operand(value), **({"axis": axis} if axis is not None else {})}
                   for pid, value, axis in bindings if f"p{pid}" in used]
    edges = [{"from": f"r{s}", "to": f"p{d}"} for s, d in back_edges if f"p{d}" in used and f"r{s}" in body_outputs]
    options = {"label": layer.name, "backEdges": edges}
    if current is not None and f"p{current}" in used:
        options["currentIteration"] = f"p{current}"
    if session.max_iterations is not None:
        options["maxIterations"] = session.max_iterations
    trip_operand, condition_operand = t.operand(trip), t.operand(condition)
    if known is not None:
        trip_operand = t.operand(np.array(known, np.int64))
        condition_operand = t.operand(np.ones((), np.uint8))

    if counting:
        loop_inputs.append({"bodyInput": COUNTER_IN, "value": t.operand(np.zeros((), np.int32))})
        options["backEdges"] = edges + [{"from": COUNTER_OUT, "to": COUNTER_IN}]
        (count,) = t.b.loop(trip_operand, condition_operand, graph, f"r{condition_id}", loop_inputs,
                            [{"bodyOutput": COUNTER_OUT}], options)
        raise Counted(count)

    loop_outputs = [{"bodyOutput": f"r{rid}", **({"axis": axis} if axis is not None else {})}
                    for _, rid, axis in outputs]
    try:
        values = t.b.loop(trip_operand, condition_operand, graph, f"r{condition_id}", loop_inputs, loop_outputs,
                          options)
    except TypeError:
        if not concatenated or known is not None:
            raise
        # Is it only the concatenations' size that is unknown? Then the loop is
        # valid without them, and its iteration count is needed.
        t.b.loop(trip_operand, condition_operand, graph, f"r{condition_id}", loop_inputs,
                 [o for o in loop_outputs if "axis" not in o], options)
        if t.in_body:
            raise t.unsupported("a Loop inside a Loop body has a concatenated output whose size changes at run "
                                "time; that cannot be typed for WebNN") from None
        raise NeedCount(key) from None
    by_external = {port: value for (port, _, _), value in zip(outputs, values)}
    return _by_port(t, layer, by_external)


def _condition_closure(graph, condition_id: int, back_edges) -> set[int]:
    """The body Results the execution condition depends on: itself, and those
    feeding (by back edges) the Parameters any of them reads."""
    feeds: dict[int, list[int]] = {}
    for source, target in back_edges:
        feeds.setdefault(target, []).append(source)
    needed: set[int] = set()
    stack = [condition_id]
    while stack:
        rid = stack.pop()
        if rid in needed:
            continue
        needed.add(rid)
        for pid in _parameters_read(graph, rid):
            stack.extend(feeds.get(pid, []))
    return needed


def _parameters_read(graph, lid: int) -> set[int]:
    seen, stack, found = set(), [lid], set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        layer = graph.layers[current]
        if layer.type == "Parameter":
            found.add(current)
        stack.extend(graph.sources[(current, port.id)][0] for port in layer.inputs)
    return found


def _by_port(t, layer, by_external: dict) -> list:
    for port in layer.outputs:
        if port.id not in by_external:
            raise t.malformed(f"output port {port.id} is not mapped by the port_map")
    return [by_external[port.id] for port in layer.outputs]


def _body_operand(body, value):
    if isinstance(value, np.ndarray):
        from .translate import NUMPY_TO_WEBNN
        return body.constant({"dataType": NUMPY_TO_WEBNN[value.dtype], "shape": list(value.shape)},
                             np.ascontiguousarray(value))
    return value


def _never_starts(trip, condition) -> bool:
    """Loop-5's pseudo-code runs no iteration when the trip count is 0 or the
    execution condition is false; with both known at load time, no run is needed
    to find that out."""
    if isinstance(trip, np.ndarray) and int(trip.reshape(-1)[0]) == 0:
        return True
    return isinstance(condition, np.ndarray) and not condition.reshape(-1)[0]


async def _zero_iterations(t, layer, key, body, body_graph, body_values, bindings, out_entries, back_edges):
    """Loop-5 when the body never runs: a last-value output is the initial value
    of the Parameter its Result feeds by a back edge (zeros when it feeds none:
    idl/extensions.idl's convention), a concatenated output is empty. The body
    is translated only for its output shapes."""
    translated = await Translator(body, body_graph, t.session, key + "/", in_body=True).run(body_values)
    t.layer = layer
    initial = {pid: value for pid, value, axis in bindings if axis is None}
    feeds = {s: d for s, d in back_edges}
    by_external = {}
    for entry in out_entries:
        if entry.get("purpose") == "execution_condition":
            continue
        rid = entry["internal_layer_id"]
        value = translated[rid]
        shape, data_type = list(t.shape(value)), t.data_type(value)
        if entry.get("axis") is not None:
            axis = t.axis(entry["axis"], len(shape), "port_map output axis")
            shape[axis] = 0
            by_external[entry["external_port_id"]] = Empty(data_type, tuple(shape))
        elif rid in feeds and feeds[rid] in initial:
            by_external[entry["external_port_id"]] = initial[feeds[rid]]
        else:
            by_external[entry["external_port_id"]] = np.zeros(shape, dtype=np.dtype(data_type))
    return _by_port(t, layer, by_external)
