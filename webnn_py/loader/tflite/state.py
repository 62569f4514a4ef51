"""State a TFLite model keeps between invocations, and how an MLModel keeps it
between compute() calls.

TFLite has two kinds:
  * resource variables: VAR_HANDLE names one (container, shared_name),
    READ_VARIABLE reads it, ASSIGN_VARIABLE replaces its value; a CALL_ONCE
    operator runs an initialisation subgraph on the first invocation only;
  * variable tensors (Tensor.is_variable): the recurrent operators' states
    (LSTM/RNN hidden and cell states), which an operator reads as an input and
    overwrites with its final value; they start as their buffer (or zeros).

WebNN graphs are pure functions, so each state variable becomes a graph input
(`state_k`, its value before the call) where the graph reads it and a graph
output (`state_out_k`, its value after) where the graph changes it. The model
keeps two MLTensors per variable and swaps them after every dispatch (WebNN
forbids one tensor as both input and output of a dispatch: §8.3.1 dispatch()
step 4), so the state never leaves the context's timeline (step 8) and
concurrent compute() calls see it in call order.
The CALL_ONCE subgraph becomes a graph of its own, dispatched at load() and by
MLModel.resetState() (our extension, idl/model_loader.idl), which puts every
variable back to its initial value.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .importer import BOOL, NUMPY_TYPES, TranslationError
from .schema import Tensor


@dataclass
class StateVar:
    k: int                      # its number: graph names state_k / state_out_k
    label: str                  # what errors call it
    data_type: str              # MLOperandDataType of the stored value (raw integers when quantized)
    shape: tuple[int, ...]
    tensor: Tensor              # a TFLite tensor of its type (quantization parameters)
    initial: np.ndarray         # the value before the initialisation graph runs


@dataclass
class StateScope:
    """The state variables one graph reads and writes (the main graph, or the
    CALL_ONCE initialisation graph)."""
    builder: object
    reads: dict = field(default_factory=dict)       # key -> graph input operand
    values: dict = field(default_factory=dict)      # key -> current value (float domain)
    written: list = field(default_factory=list)     # keys in the order they were first written


@dataclass
class StatePlan:
    """What MLModel needs: the variables, which graph inputs/outputs carry them,
    and the initialisation graph."""
    variables: dict                                  # key -> StateVar
    reads: dict                                      # key -> graph input name of the main graph
    writes: dict                                     # key -> graph output name of the main graph
    init_graph: object = None                        # MLGraph or None
    init_reads: dict = field(default_factory=dict)
    init_writes: dict = field(default_factory=dict)


def input_name(var: StateVar) -> str:
    return f"state_{var.k}"


def output_name(var: StateVar) -> str:
    return f"state_out_{var.k}"


def variable(ctx, key, label: str, t: Tensor, shape) -> StateVar:
    """The session's state variable `key`, created on first use; its type and shape
    must stay the same wherever it is used."""
    session = ctx.session
    data_type = "uint8" if t.type_code == BOOL else t.ml_type
    shape = tuple(int(d) for d in shape)
    if data_type is None:
        raise ctx.fail(f"{label} has type {t.type_name}, which WebNN has no data type for")
    if any(d < 0 for d in shape):
        raise ctx.fail(f"{label} has a dynamic shape {list(shape)}; WebNN operands have static shapes")
    var = session.states.get(key)
    if var is None:
        initial = np.zeros(shape, NUMPY_TYPES[data_type])
        if t.is_variable:
            value = ctx.const(t.index)
            if value is not None:
                initial = np.asarray(value, NUMPY_TYPES[data_type]).reshape(shape)
        var = StateVar(len(session.states), label, data_type, shape, t, initial)
        session.states[key] = var
    elif (var.data_type, var.shape) != (data_type, shape):
        raise ctx.fail(f"{label} is {data_type} {list(shape)} here and {var.data_type} {list(var.shape)} elsewhere; "
                       "a state variable needs one static type and shape")
    return var


def _scope(ctx) -> StateScope:
    if ctx.state is None:
        raise TranslationError(f"load: {ctx.where()}: state (resource variables, variable tensors) is read or "
                               "written inside a WHILE or IF subgraph; only the main subgraph and CALL_ONCE's "
                               "initialisation may use it")
    return ctx.state


def read(ctx, key, var: StateVar):
    """The variable's current value in this graph (float domain when quantized)."""
    scope = _scope(ctx)
    if key in scope.values:
        return scope.values[key]
    operand = scope.builder.input(input_name(var), {"dataType": var.data_type, "shape": list(var.shape)})
    scope.reads[key] = operand
    if _quantized(var):
        operand = ctx.dequantize(operand, var.tensor)
    scope.values[key] = operand
    return operand


def write(ctx, key, var: StateVar, operand) -> None:
    if tuple(operand.shape) != var.shape:
        raise ctx.fail(f"the value assigned to {var.label} is {list(operand.shape)}, the variable is "
                       f"{list(var.shape)}")
    scope = _scope(ctx)
    if key not in scope.written:
        scope.written.append(key)
    scope.values[key] = operand


def outputs(ctx, scope: StateScope, variables: dict, taken: set | None = None) -> tuple[dict, dict, dict]:
    """Graph outputs for the variables this graph wrote: ({output name: operand},
    {key: input name}, {key: output name}). build() needs each output to be an
    operand of its own: one already an output (its id in `taken`), an input or a
    constant goes through identity()."""
    graph_outputs, writes = {}, {}
    taken = set() if taken is None else set(taken)
    for key in scope.written:
        var = variables[key]
        operand = scope.values[key]
        if _quantized(var):
            operand = ctx.quantize(operand, var.tensor)
        elif operand.dataType != var.data_type:
            operand = scope.builder.cast(operand, var.data_type)
        if operand._value.is_input or operand._value.is_constant or id(operand._value) in taken:
            operand = scope.builder.identity(operand)
        taken.add(id(operand._value))
        graph_outputs[output_name(var)] = operand
        writes[key] = output_name(var)
    reads = {key: input_name(variables[key]) for key in scope.reads}
    return graph_outputs, reads, writes


def _quantized(var: StateVar) -> bool:
    q = var.tensor.quantization
    return q is not None and var.data_type in ("int8", "uint8")


class ModelState:
    """The MLTensors of a loaded model's state variables (two per variable: the
    current value and the one the next dispatch writes)."""

    def __init__(self, context, plan: StatePlan, tensors: dict):
        self._context = context
        self._plan = plan
        self._current = {key: pair[0] for key, pair in tensors.items()}
        self._spare = {key: pair[1] for key, pair in tensors.items()}

    @classmethod
    async def create(cls, context, plan: StatePlan) -> "ModelState":
        tensors = {}
        for key, var in plan.variables.items():
            desc = {"dataType": var.data_type, "shape": list(var.shape), "readable": True, "writable": True}
            tensors[key] = (await context.createTensor(desc), await context.createTensor(desc))
        state = cls(context, plan, tensors)
        state.reset()
        return state

    def reset(self) -> None:
        """Every variable back to its initial value, then the initialisation graph
        (CALL_ONCE), all enqueued on the context's timeline."""
        for key, var in self._plan.variables.items():
            self._context.writeTensor(self._current[key], np.ascontiguousarray(var.initial).reshape(-1))
        if self._plan.init_graph is not None:
            inputs, outputs = self.bind(self._plan.init_graph, self._plan.init_reads, self._plan.init_writes)
            self._context._enqueue_dispatch(self._plan.init_graph, inputs, outputs)
            self.advance(self._plan.init_writes)

    def bind(self, graph, reads: dict, writes: dict) -> tuple[dict, dict]:
        """The tensors of one dispatch: current values in, spare tensors out."""
        used = graph._input_descriptors
        inputs = {name: self._current[key] for key, name in reads.items() if name in used}
        outputs = {name: self._spare[key] for key, name in writes.items()}
        return inputs, outputs

    def advance(self, writes: dict) -> None:
        """After a dispatch: what it wrote is now the current value."""
        for key in writes:
            self._current[key], self._spare[key] = self._spare[key], self._current[key]

    def main_tensors(self, graph) -> tuple[dict, dict]:
        return self.bind(graph, self._plan.reads, self._plan.writes)

    def main_done(self) -> None:
        self.advance(self._plan.writes)
