"""A `loop` (ops/loop.py; OpenVINO Loop-5, ../shared/spec/003_ea60059f0e025f60.txt)
whose body steps one lstmCell (§8.9.34) or gruCell (§8.9.26) over a sliced
sequence runs as ONE sequence run of the lstm/gru runners (ops/recurrent.py
lstm_runner / gru_runner: the weights laid out once, here, at build(); per run
the input parts of every step in one GEMM and the time loop in C), instead of one
walk of the body's plan per iteration (runtime/loop.py, which stays the
reference and serves every loop this module declines).

The shape recognised, on the body's graph (the IR its plan was compiled from):
  * exactly one lstmCell / gruCell, float32, whose weight, recurrentWeight and
    options' bias, recurrentBias, peepholeWeight are constant: computed from body
    constants and body inputs bound as-is (no back edge) to outer-graph
    constants, through any operators (an importer's gate re-ordering gather, a
    bias split by slice + concat), evaluated here with the operators' kernels;
  * its `input` is the one sliced body input (Loop-5 port_map `axis`: part size 1,
    the axis kept, any axis) through reshape/identity only;
  * its hiddenState (and cellState) is a body input, through reshape/identity,
    fed by a back edge (Loop-5 back_edges) from a body output that is the cell's
    own new hidden (cell) state through reshape/identity;
  * every loop output is the new hidden or cell state through reshape/identity,
    taken at the last iteration, or the new hidden state so reshaped that the
    concatenation axis has size 1, concatenated over the iterations;
  * the body's condition output reads only constants and loop-invariant body
    inputs (bound as-is, with no back edge or one that passes the input through
    unchanged): its value is the same at every iteration, so Loop-5's
    "for (i = 0; (trip < 0 || i < trip) && cond; ++i) cond = body(...)" runs
    min(trip count, slices) iterations when it is true, one when it is false;
  * no currentIteration input.
At run time the count is computed from the loop's inputs as runtime/loop.py
would find it; zero iterations, or more than maxIterations (whose OperationError
the per-iteration walk raises after maxIterations iterations, as it does now),
go to the per-iteration walk. Any other body keeps the per-iteration walk.

The runners compute the cell math of §8.9.34 / §8.9.26 (the lstm/gru
decompositions' per-step algorithm) in the same float32 operations in the same
order as the numpy cell kernels, sigmoid and tanh within 3 float32 ULP of the
exact values: within the kernels' float32 accuracy of the per-iteration walk.
One run does not suspend between iterations (as lstm and gru do not).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...ops import operator_kind
from ...ops.recurrent import gru_runner, lstm_runner
from ..ir import Node, Value

_F32 = np.dtype(np.float32)
# Operators that pass a value on unchanged but for its shape.
_PASS_THROUGH = ("reshape", "identity")
# By cell: its sequence runner, the operand positions of its states (state k's new value is
# the cell's output k) and of its options that must be constant. Operands 0-2 are input,
# weight and recurrentWeight for both (§8.9.34 / §8.9.26 argument order).
_CELLS = {
    "lstmCell": (lstm_runner, (3, 4), (5, 6, 7)),   # hiddenState, cellState; bias, recurrentBias, peepholeWeight
    "gruCell": (gru_runner, (3,), (4, 5)),           # hiddenState; bias, recurrentBias
}


def _source(value: Value) -> Value:
    """The value `value` is a reshape/identity chain of."""
    while value.producer is not None and value.producer.kind in _PASS_THROUGH:
        value = value.producer.inputs[0]
    return value


class _Cone:
    """The nodes computing `value` from constants and the body inputs named in
    `inputs`; `nodes` is None when the value needs another body input or a loop.
    `reads` names the body inputs it reads."""

    def __init__(self, value: Value, inputs):
        self.value = value
        self.reads: set[str] = set()
        self.nodes: list[Node] | None = []
        seen: set[int] = set()
        stack: list[tuple[Value, bool]] = [(value, False)]
        while stack:
            current, expanded = stack.pop()
            node = current.producer
            if node is None:
                if current.is_input:
                    if current.input_name not in inputs:
                        self.nodes = None
                        return
                    self.reads.add(current.input_name)
                continue
            if expanded:
                if id(node) not in seen:
                    seen.add(id(node))
                    self.nodes.append(node)
            elif id(node) not in seen:
                if node.kind == "loop":       # as folding.py: a loop is never run at build()
                    self.nodes = None
                    return
                stack.append((current, True))
                stack.extend((v, False) for v in node.inputs if v is not None)

    def evaluate(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """The value, by the operators' registered kernels, from the body inputs' arrays."""
        known: dict[int, np.ndarray] = {}

        def array(value: Value | None):
            if value is None:
                return None
            if value.is_constant:
                return value.constant
            return inputs[value.input_name] if value.is_input else known[id(value)]

        with np.errstate(all="ignore"):
            for node in self.nodes:
                results = operator_kind(node.kind).kernel([array(v) for v in node.inputs], node.attributes,
                                                          [v.descriptor for v in node.outputs])
                for value, result in zip(node.outputs, results):
                    known[id(value)] = result
        return np.asarray(array(self.value))


def fused_recurrent_loop(node: Node, constant_of: Callable) -> Callable | None:
    """The loop node's kernel as one lstm/gru sequence run, or None (the shape above not
    found, no C kernels): the caller then keeps the per-iteration walk."""
    attributes = node.attributes
    body = attributes["body"]
    outputs_of = body.plan.output_values          # body output name -> Value
    if attributes["current_iteration"] is not None:
        return None
    # Body input -> (position among the loop's operands after tripCount and executionCondition,
    # slicing axis or None).
    bound = {name: (index, axis) for index, (name, axis) in enumerate(attributes["bindings"])}
    sliced = [name for name, (_, axis) in bound.items() if axis is not None]
    if len(sliced) != 1:
        return None
    fed_by = {target: source for source, target in attributes["back_edges"]}
    # Loop-invariant body inputs: bound as-is, with no back edge or one passing the input through.
    invariant = {name for name, (_, axis) in bound.items() if axis is None
                 and (name not in fed_by or _source(outputs_of[fed_by[name]]).input_name == name)}

    # The cell: the one node every other back edge and every loop output comes from.
    carried = [name for target, name in fed_by.items() if target not in invariant]
    roots = [_source(outputs_of[name]) for name in carried + [name for name, _ in attributes["outputs"]]]
    cell = roots[0].producer if roots else None
    if cell is None or cell.kind not in _CELLS or any(root.producer is not cell for root in roots):
        return None
    runner, state_positions, option_positions = _CELLS[cell.kind]
    x_value = cell.inputs[0]
    if x_value.descriptor.type.numpy != _F32 or _source(x_value).input_name != sliced[0]:
        return None

    # Each state: a body input with a back edge from the cell's own new state (Loop-5 back_edges).
    state_names = [_source(cell.inputs[position]).input_name for position in state_positions]
    for k, name in enumerate(state_names):
        if name not in fed_by or _source(outputs_of[fed_by[name]]) is not cell.outputs[k]:
            return None
    if {target for target in fed_by if target not in invariant} != set(state_names):
        return None

    # Weights, biases and peepholes: constant under the bindings (§8.9.34 / §8.9.26 take them
    # as operands; here they must not change from one iteration or dispatch to the next).
    constants = {name: constant_of(node.inputs[2 + bound[name][0]]) for name in invariant if name not in fed_by}
    constants = {name: array for name, array in constants.items() if array is not None}
    parameters = []
    for position in (1, 2, *option_positions):
        value = cell.inputs[position]
        cone = None if value is None else _Cone(value, constants)
        if cone is not None and cone.nodes is None:
            return None
        try:
            parameters.append(None if cone is None else cone.evaluate(constants)[None])   # one direction
        except Exception:  # noqa: BLE001 -- left to the per-iteration walk, which reports it at dispatch
            return None

    # The outputs: (state k, concatenation axis or None, the body output's shape, the loop output's).
    outputs = []
    for (name, axis), value in zip(attributes["outputs"], node.outputs):
        k = cell.outputs.index(_source(outputs_of[name]))
        body_shape = outputs_of[name].descriptor.shape
        if axis is not None and (k != 0 or body_shape[axis] != 1):
            return None
        outputs.append((k, axis, body_shape, value.descriptor.shape))

    # The body's condition: the same at every iteration; evaluated once here when it reads
    # no body input, else once per run from the invariant inputs' values.
    condition = _Cone(outputs_of[attributes["condition"]], invariant)
    if condition.nodes is None:
        return None
    fixed_condition = None
    if not condition.reads:
        try:
            fixed_condition = bool(condition.evaluate({}).reshape(-1)[0])
        except Exception:  # noqa: BLE001 -- as above
            return None

    batch, input_size = x_value.descriptor.shape
    hidden = cell.attributes["hidden_size"]
    run = runner(*parameters, {**cell.attributes, "direction": "forward",
                               "return_sequence": any(axis is not None for _, axis, _, _ in outputs)})
    if run is None:
        return None
    x_at, x_axis = bound[sliced[0]]
    state_at = [bound[name][0] for name in state_names]
    slice_count = attributes["slice_count"]

    def iterations(inputs) -> int:
        """How many times runtime/loop.py's walk would run the body for these inputs
        (Loop-5's pseudo-code, with the condition the same at every iteration)."""
        if not bool(inputs[1].reshape(-1)[0]):
            return 0
        trip = int(inputs[0].reshape(-1)[0])
        limit = slice_count if trip < 0 else min(trip, slice_count)
        if limit == 0:
            return 0
        again = fixed_condition
        if again is None:
            values = {name: inputs[2 + bound[name][0]] for name in condition.reads}
            again = bool(condition.evaluate(values).reshape(-1)[0])
        return limit if again else 1

    def kernel(inputs, _attributes, output_descriptors):
        count = iterations(inputs)
        if count == 0 or count > attributes["max_iterations"]:
            return body.run_loop(inputs, attributes, output_descriptors)
        # The cell's input at iteration i is slice i of the sliced operand, reshaped.
        x = np.moveaxis(inputs[2 + x_at], x_axis, 0)[:count].reshape(count, batch, input_size)
        results = run(x, *(inputs[2 + at].reshape(1, batch, hidden) for at in state_at))
        arrays = []                        # results: the final states [1, B, H]..., the sequence [T, 1, B, H]
        for k, axis, body_shape, shape in outputs:
            if axis is None:
                arrays.append(results[k].reshape(shape))
            else:
                # Iteration i's part is h_i reshaped to body_shape, whose axis `axis` has size 1.
                parts = results[-1].reshape((count,) + body_shape[:axis] + body_shape[axis + 1:])
                arrays.append(np.ascontiguousarray(np.moveaxis(parts, 0, axis)))
        return arrays
    return kernel
