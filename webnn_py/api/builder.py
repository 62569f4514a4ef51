"""The MLGraphBuilder interface (§8.9): graph inputs, constants, operators, build()."""
from __future__ import annotations

import numpy as np

from ..base.descriptor import OperandDescriptor, check_dimensions
from ..base.errors import InvalidStateError, describe
from ..bindings import INTERFACES
from ..ops import OPERATORS, BuildContext, operator_kind
from ..runtime.ir import Node, Value
from ..runtime.timeline import new_future
from .buffers import copy_of_bytes, validate_buffer_with_descriptor
from ..base.casting import cast_number
from .context import MLContext
from .graph import MLGraph
from .idl import operation, register_interface, rejected
from .operand import MLOperand
from .tensor import MLTensor


class MLGraphBuilder:
    @operation("MLGraphBuilder", "constructor")
    def __init__(self, context: MLContext):
        """§8.9.1 new MLGraphBuilder(context)."""
        if context._is_lost:
            raise InvalidStateError("MLGraphBuilder: the context is lost")
        self._context = context
        self._has_built = False
        self._input_names: set[str] = set()

    # -- shared steps ------------------------------------------------------------------------

    def _check_can_build(self, method: str, label: str = "") -> None:
        """"If this cannot build, throw an InvalidStateError" (§8.9)."""
        if self._has_built:
            raise InvalidStateError(describe(method, label, "the builder has already built a graph"))
        if self._context._is_lost:
            raise InvalidStateError(describe(method, label, "the context is lost"))

    def _validate_operand(self, method: str, label: str, operand: MLOperand) -> Value:
        """§8.6.1 "validate operand"."""
        if operand._builder is not self:
            raise TypeError(describe(method, label, "an operand was created by another MLGraphBuilder"))
        return operand._value

    # -- inputs and constants ----------------------------------------------------------------

    @operation("MLGraphBuilder")
    def input(self, name: str, descriptor: dict) -> MLOperand:
        """§8.9.2 input(name, descriptor)."""
        self._check_can_build("input")
        if not name:
            raise TypeError("input: the name is empty")
        if name in self._input_names:
            raise TypeError(f"input: an input named {name!r} already exists")
        desc = OperandDescriptor.from_dict(descriptor)
        problem = check_dimensions(desc)
        if problem:
            raise TypeError(f"input {name!r}: {problem}")
        self._input_names.add(name)
        return MLOperand(self, Value(desc, input_name=name))

    @operation("MLGraphBuilder", overloaded=True)
    def constant(self, overload: int, *args) -> MLOperand:
        """§8.9.3 the three constant() overloads, in the IDL's order."""
        if overload == 0:
            return self._constant_from_buffer(*args)
        if overload == 1:
            return self._constant_from_number(*args)
        return self._constant_from_tensor(*args)

    def _constant_from_buffer(self, descriptor: dict, buffer) -> MLOperand:
        """§8.9.3.1 constant(descriptor, buffer)."""
        self._check_can_build("constant")
        desc = OperandDescriptor.from_dict(descriptor)
        problem = check_dimensions(desc) or validate_buffer_with_descriptor(buffer, desc)
        if problem:
            raise TypeError(f"constant: {problem}")
        return MLOperand(self, Value(desc, constant=copy_of_bytes(buffer, desc, "constant")))

    def _constant_from_number(self, data_type: str, value) -> MLOperand:
        """§8.9.3.3 constant(dataType, value)."""
        self._check_can_build("constant")
        desc = OperandDescriptor(data_type, ())
        return MLOperand(self, Value(desc, constant=np.array(cast_number(value, data_type), dtype=desc.type.numpy)))

    def _constant_from_tensor(self, tensor: MLTensor) -> MLOperand:
        """§8.9.3.2 constant(tensor)."""
        if tensor._context is not self._context:
            raise TypeError("constant: the tensor belongs to another context")
        if tensor._is_destroyed:
            raise TypeError("constant: the tensor has been destroyed")
        if not tensor._is_constant:
            raise TypeError("constant: the tensor was not created by createConstantTensor()")
        self._check_can_build("constant")
        # The tensor's bytes are final once createConstantTensor() resolved, and
        # the graph must survive the tensor's destruction (§8.3.1 note), so the
        # graph keeps its own reference to the array.
        if tensor._data is None:
            self._context._timeline.drain()
        return MLOperand(self, Value(tensor._descriptor, constant=tensor._data, constant_source=tensor))

    # -- build -------------------------------------------------------------------------------

    @operation("MLGraphBuilder", promise=True)
    def build(self, outputs: dict):
        """§8.9.4 build(outputs)."""
        if self._has_built or self._context._is_lost:
            return rejected(InvalidStateError("build: the builder cannot build (already built, or the context is lost)"))
        if not outputs:
            return rejected(TypeError("build: no outputs were given"))
        for name, operand in outputs.items():
            if not name:
                return rejected(TypeError("build: an output name is empty"))
            if operand._builder is not self:
                return rejected(TypeError(f"build: output {name!r} was created by another MLGraphBuilder"))
            value = operand._value
            if value.is_input or value.is_constant:
                return rejected(TypeError(f"build: output {name!r} is a graph input or constant; "
                                          "pass it through identity() to make it an output"))
        # Steps 5-9: the operands reachable from the outputs, and which of them are inputs.
        output_values = {name: operand._value for name, operand in outputs.items()}
        inputs = _reachable_inputs(output_values.values())
        for value in _reachable_constants(output_values.values()):
            tensor = value.constant_source
            if tensor is not None and tensor._is_destroyed:
                return rejected(TypeError("build: a constant's MLTensor has been destroyed"))
        graph = MLGraph(self._context,
                        {v.input_name: v.descriptor for v in inputs},
                        {name: v.descriptor for name, v in output_values.items()})
        self._has_built = True
        promise = new_future()
        self._context._compile(graph, lambda: _execution_plan(output_values), promise)
        return promise


def _execution_plan(output_values: dict):
    """The compiled graph. runtime.plan (and the compiler it runs) is imported at the first
    build(), not at the page's boot: a page pays for it only when it builds."""
    from ..runtime.plan import ExecutionPlan
    return ExecutionPlan(output_values)


def _walk(outputs):
    seen: set[int] = set()
    stack = list(outputs)
    while stack:
        value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        yield value
        if value.producer is not None:
            stack.extend(v for v in value.producer.inputs if v is not None)


def _reachable_inputs(outputs) -> list[Value]:
    return [v for v in _walk(outputs) if v.is_input]


def _reachable_constants(outputs) -> list[Value]:
    return [v for v in _walk(outputs) if v.is_constant]


class _NodeRecorder(BuildContext):
    """The BuildContext of one builder method call: operands are MLOperands of `builder`."""

    def __init__(self, builder: MLGraphBuilder, op: str, label: str):
        super().__init__(op, label)
        self.builder = builder

    def descriptor(self, operand: MLOperand) -> OperandDescriptor:
        # §8.6.1 "validate operand", for every operand the operator reads.
        if operand._builder is not self.builder:
            self.fail("an operand was created by another MLGraphBuilder")
        return operand._value.descriptor

    # For control-flow operators (ops/loop.py): the operand's constant data, or None.
    def constant_value(self, operand: MLOperand):
        self.descriptor(operand)
        return operand._value.constant

    # A body MLGraph as ops see it: (input descriptors, output descriptors, an
    # opaque runtime.loop.LoopBody holding its compiled plan).
    def subgraph(self, name: str, graph):
        if not isinstance(graph, MLGraph) or graph._context is not self.builder._context:
            self.fail(f"{name} is not an MLGraph of this builder's context")
        if graph._is_destroyed or graph._implementation is None:
            self.fail(f"{name} has been destroyed")
        from ..runtime.loop import LoopBody
        return (dict(graph._input_descriptors), dict(graph._output_descriptors),
                LoopBody(graph._implementation))

    def emit(self, inputs, outputs, attributes=None, kind=None) -> list[MLOperand]:
        # "Connect": a node whose inputs are the operands' values and whose
        # outputs are new values, each wrapped in a new MLOperand.
        # The operators' own steps (§8.9) never run "check dimensions" on what they
        # create, but an output whose byte length exceeds maxTensorByteLength, or
        # whose rank exceeds the supported maximum, could never be allocated or
        # read back (createTensor() rejects the same descriptor): it is refused
        # here, when the offending call is made, as input() and constant() do for
        # theirs (§8.5 "check dimensions" lets implementations set these limits).
        for index, desc in enumerate(outputs):
            problem = check_dimensions(desc)
            if problem:
                which = "the output" if len(outputs) == 1 else f"output {index}"
                self.fail(f"{which} {desc} is not supported: {problem}")
        values = [None if op is None else op._value for op in inputs]
        node = Node(kind or self.op, values, dict(attributes or {}), self.label)
        node.outputs = [Value(desc, producer=node) for desc in outputs]
        return [MLOperand(self.builder, v) for v in node.outputs]


def _operator_method(name: str):
    """The builder method of operator `name`: WebIDL conversion, "can build", then
    the operator's own build step (its section of §8.9)."""
    build = operator_kind(name).build

    @operation("MLGraphBuilder", name)
    def method(self, *args):
        options = args[-1] if args and isinstance(args[-1], dict) else {}
        label = options.get("label", "")
        self._check_can_build(name, label)
        return build(_NodeRecorder(self, name, label), *args)

    method.__name__ = method.__qualname__ = name
    return method


# Every operator of the IDL's MLGraphBuilder that ops/ implements becomes a method.
for _name in INTERFACES["MLGraphBuilder"].operations:
    if _name in OPERATORS:
        setattr(MLGraphBuilder, _name, _operator_method(_name))

register_interface("MLGraphBuilder", MLGraphBuilder)
