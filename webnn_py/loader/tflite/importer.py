"""Translate one TFLite subgraph into MLGraphBuilder calls.

Every TFLite tensor becomes either a numpy constant (weights, shapes, and
whatever the importer folds: fp16 weights behind DEQUANTIZE, DENSIFY) or an
MLOperand. Quantized tensors (int8/uint8 with scale/zero point) are carried
in the float domain: a quantized graph input is dequantizeLinear'ed once,
every quantized op output is rounded through quantizeLinear+dequantizeLinear
(so values stay on the tensor's quantization grid, as TFLite's integer kernels
keep them), and a quantized graph output is quantizeLinear'ed back.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import numpy as np

from ...base.errors import DataError, NotSupportedError
from .schema import Model, Operator, SubGraph, Tensor

# TensorType BOOL: WebNN has no boolean type; booleans are uint8 operands (0/1).
BOOL = 6

# TFLite's ActivationFunctionType.
ACTIVATIONS = {0: None, 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}


@dataclass
class IOInfo:
    name: str           # the name compute() uses
    tensor: Tensor
    graph_name: str     # the MLGraph input/output name
    data_type: str      # MLOperandDataType of the graph's operand
    shape: tuple[int, ...]


class TranslationError(NotSupportedError):
    pass


# Control flow (WHILE) translates subgraphs inside subgraphs. A hostile file could
# nest them deeply or make one subgraph's WHILEs refer to the next one several
# times over (exponential expansion), so both the nesting depth and the total
# number of operators translated are bounded; the budget is linear in the file.
MAX_NESTING = 16
OPERATOR_BUDGET_FACTOR = 8
OPERATOR_BUDGET_MIN = 1024
# Constants a translator makes itself (FILL, RANGE, ONE_HOT's depth ramp, eye masks,
# index grids) are sized by the model's values: at most this many elements, so a
# hostile file cannot make load() allocate without bound before the builder's checks.
MAX_MADE_ELEMENTS = 1 << 24


@dataclass
class Session:
    """What the importers of one model share: the translators, the loop options,
    the subgraphs being translated (to detect recursion) and the operator budget."""
    model: Model
    translators: dict
    max_iterations: int | None = None       # MLLoopOptions.maxIterations of WHILE loops (None: the default)
    stack: list[int] = field(default_factory=list)
    budget: int = 0
    states: dict = field(default_factory=dict)      # state key -> state.StateVar (state.py)
    init: tuple | None = None                       # CALL_ONCE: (MLGraph, reads, writes)

    def __post_init__(self):
        total = sum(len(g.operators) for g in self.model.subgraphs)
        self.budget = OPERATOR_BUDGET_FACTOR * total + OPERATOR_BUDGET_MIN


class Importer:
    def __init__(self, builder, model: Model, subgraph: SubGraph, session: Session | None = None):
        self.b = builder
        self.model = model
        self.graph = subgraph
        self.session = session if session is not None else Session(model, {})
        self._operands: dict[int, object] = {}     # tensor index -> MLOperand (float domain if quantized)
        self._constants: dict[int, np.ndarray] = {}
        self._resources: dict[int, tuple] = {}     # tensor index -> resource variable key (VAR_HANDLE)
        self.state = None                          # state.StateScope of a graph that may keep state
        self.op: Operator | None = None

    # -- errors -----------------------------------------------------------------------------

    def where(self) -> str:
        """The current operator, with its subgraph when it is not the main one."""
        nested = len(self.session.stack) > 1
        graph = f"subgraph {self.graph.index} " if nested else ""
        if self.op is None:
            return f"{graph}model" if not nested else graph.strip()
        return f"{graph}operator {self.op.index} ({self.op.opcode.name})"

    def fail(self, problem: str) -> NotSupportedError:
        return TranslationError(f"load: {self.where()}: {problem}")

    def malformed(self, problem: str) -> DataError:
        return DataError(f"load: {self.where()}: {problem}")

    # -- tensors ----------------------------------------------------------------------------

    def tensor(self, index: int) -> Tensor:
        return self.graph.tensors[index]

    def const(self, index: int) -> np.ndarray | None:
        """The tensor's value if it is known at load time (raw storage type), else None."""
        if index in self._constants:
            return self._constants[index]
        t = self.tensor(index)
        if t.buffer == 0 or t.buffer >= len(self.model.buffers):
            return None
        data = self.model.buffers[t.buffer]
        if data is None:
            return None
        if t.sparsity is not None:
            # Sparse data is only meaningful to DENSIFY, which reads it itself.
            return None
        dtype = t.numpy_type
        if dtype is None:
            raise self.fail(f"constant tensor {t.name!r} has type {t.type_name}, which is not supported")
        count = int(np.prod(t.shape, dtype=np.int64)) if t.shape else 1
        itemsize = np.dtype(dtype).itemsize
        if count < 0 or count * itemsize != len(data):
            raise self.fail(f"constant tensor {t.name!r} of shape {list(t.shape)} ({t.type_name}) needs "
                            f"{count * itemsize} bytes, its buffer holds {len(data)}")
        value = np.frombuffer(data, dtype=np.dtype(dtype).newbyteorder("<"), count=count).reshape(t.shape)
        value = value.astype(np.dtype(dtype), copy=False)
        self._constants[index] = value
        return value

    def check_made(self, shape, what: str) -> None:
        """Raise NotSupportedError when a constant of `shape` that a translator is
        about to make exceeds MAX_MADE_ELEMENTS (see there)."""
        count = 1
        for d in shape:
            if d < 0:
                raise self.fail(f"{what} has a negative dimension {list(shape)}")
            count *= int(d)
        if count > MAX_MADE_ELEMENTS:
            raise self.fail(f"{what} would be a constant of {count} elements; the importer makes at most "
                            f"{MAX_MADE_ELEMENTS}")

    def set_const(self, index: int, value: np.ndarray) -> None:
        self._constants[index] = value

    def required_const(self, k: int, what: str) -> np.ndarray:
        index = self.input_index(k)
        value = self.const(index)
        if value is None:
            raise self.fail(f"its {what} (tensor {self.tensor(index).name!r}) must be a constant: "
                            "shapes computed at run time are not supported")
        return value

    def input_index(self, k: int) -> int:
        if k >= len(self.op.inputs) or self.op.inputs[k] < 0:
            raise self.fail(f"input {k} is missing")
        return self.op.inputs[k]

    def has_input(self, k: int) -> bool:
        return k < len(self.op.inputs) and self.op.inputs[k] >= 0

    def input(self, k: int):
        return self.operand(self.input_index(k))

    def input_like(self, k: int, like: int):
        """Input k; an integer input without quantization parameters next to a
        quantized input `like` is in that input's storage domain (a raw int8 init or
        padding value, as LiteRT's kernels read it), so it is dequantized with its
        parameters."""
        t, ref = self.input_tensor(k), self.input_tensor(like)
        operand = self.input(k)
        if t.quantization is None and _is_quantized(ref) and t.numpy_type in (np.int8, np.uint8):
            operand = self.dequantize(operand, ref)
        return operand

    def input_tensor(self, k: int) -> Tensor:
        return self.tensor(self.input_index(k))

    def output_tensor(self, k: int = 0) -> Tensor:
        if k >= len(self.op.outputs):
            raise self.fail(f"output {k} is missing")
        return self.tensor(self.op.outputs[k])

    def operand(self, index: int):
        """The MLOperand of a tensor; constants become builder constants on first use."""
        if index in self._operands:
            return self._operands[index]
        t = self.tensor(index)
        if t.is_variable:
            # A recurrent operator's state (state.py imports this module, hence here).
            from . import state
            operand = state.read(self, *self.variable_tensor(index))
            self._operands[index] = operand
            return operand
        value = self.const(index)
        if value is None:
            raise self.fail(f"tensor {t.name!r} is read before any operator produced it")
        operand = self.constant_operand(value)
        if _is_quantized(t) and value.dtype in (np.int8, np.uint8, np.int32):
            operand = self.dequantize(operand, t)
        self._operands[index] = operand
        return operand

    def constant_operand(self, value: np.ndarray):
        # Not np.ascontiguousarray: it turns a 0-d array (a scalar tensor) into shape [1].
        value = np.require(value, requirements="C")
        dtype = {np.dtype(np.float64): np.float32, np.dtype(np.bool_): np.uint8,
                 np.dtype(np.int16): np.int32, np.dtype(np.uint16): np.int32}.get(value.dtype)
        if dtype is not None:
            value = value.astype(dtype)
        data_type = _ML_TYPE.get(value.dtype)
        if data_type is None:
            raise self.fail(f"a constant of numpy type {value.dtype} has no WebNN data type")
        return self.b.constant({"dataType": data_type, "shape": list(value.shape)}, value)

    def scalar(self, value: float, like) -> object:
        """A constant of the operand's rank (all ones shape), for broadcasting."""
        return self.constant_operand(np.full([1] * len(like.shape), value, dtype=NUMPY_TYPES[like.dataType]))

    def variable_tensor(self, index: int):
        """(key, StateVar) of a variable tensor (Tensor.is_variable) of this subgraph."""
        from . import state
        t = self.tensor(index)
        if not t.is_variable:
            raise self.fail(f"its state tensor {t.name!r} is not a variable tensor")
        key = ("tensor", self.graph.index, index)
        return key, state.variable(self, key, f"variable tensor {t.name!r}", t, t.shape)

    def set_resource(self, index: int, key: tuple) -> None:
        """Tensor `index` (a VAR_HANDLE's output) names the resource variable `key`."""
        self._resources[index] = key

    def resource(self, k: int) -> tuple:
        """The resource variable key of input k (a VAR_HANDLE's output)."""
        index = self.input_index(k)
        if index not in self._resources:
            raise self.fail(f"input {k} (tensor {self.tensor(index).name!r}) is not a VAR_HANDLE's resource")
        return self._resources[index]

    # -- quantization -----------------------------------------------------------------------

    def _quant_params(self, t: Tensor, rank: int):
        q = t.quantization
        shape = [1] * rank
        if len(q.scale) > 1:
            axis = q.axis
            if not 0 <= axis < rank or (rank and t.shape[axis] != len(q.scale)):
                raise self.fail(f"tensor {t.name!r}'s per-axis quantization does not match its shape")
            shape[axis] = len(q.scale)
        zero_type = np.int32 if t.numpy_type == np.int32 else t.numpy_type
        scale = self.constant_operand(q.scale.astype(np.float32).reshape(shape))
        zero = self.constant_operand(q.zero_point.astype(zero_type).reshape(shape))
        return scale, zero

    def dequantize(self, operand, t: Tensor):
        scale, zero = self._quant_params(t, len(operand.shape))
        return self.b.dequantizeLinear(operand, scale, zero)

    def quantize(self, operand, t: Tensor):
        scale, zero = self._quant_params(t, len(operand.shape))
        return self.b.quantizeLinear(operand, scale, zero)

    def set_output(self, k: int, operand) -> None:
        """Bind operator output k; quantized outputs are rounded onto their grid."""
        if k >= len(self.op.outputs):
            raise self.fail(f"output {k} is missing")
        index = self.op.outputs[k]
        t = self.tensor(index)
        if _is_quantized(t) and t.numpy_type in (np.int8, np.uint8):
            operand = self.dequantize(self.quantize(operand, t), t)
        expected = tuple(t.shape)
        if t.shape_signature is None and expected and tuple(operand.shape) != expected:
            raise self.fail(f"produced shape {operand.shape}, but the model declares {list(expected)} "
                            f"for {t.name!r}")
        self._operands[index] = operand

    def activation(self, operand, code: int):
        kind = ACTIVATIONS.get(code, f"activation {code}")
        if kind is None:
            return operand
        if kind == "RELU":
            return self.b.relu(operand)
        if kind == "RELU6":
            return self.b.clamp(operand, {"minValue": 0, "maxValue": 6})
        if kind == "RELU_N1_TO_1":
            return self.b.clamp(operand, {"minValue": -1, "maxValue": 1})
        if kind == "TANH":
            return self.b.tanh(operand)
        raise self.fail(f"the fused activation {kind} is not supported")

    # -- the whole subgraph -----------------------------------------------------------------

    async def _operators(self) -> None:
        """Translate every operator of the subgraph, in order (TFLite stores them
        topologically sorted). A translator may be a coroutine (WHILE builds a body graph)."""
        session = self.session
        for op in self.graph.operators:
            self.op = op
            name = op.opcode.name
            translate = session.translators.get(name)
            if translate is None:
                raise NotSupportedError(f"load: {self.where()}: the TFLite operator {name} is not supported")
            if not op.outputs and not getattr(translate, "without_outputs", False):
                raise self.fail("it has no outputs")
            session.budget -= 1
            if session.budget < 0:
                raise self.fail("the model's subgraphs expand to too many operators (WHILE loops referring to "
                                "the same subgraphs over and over)")
            try:
                result = translate(self)
                if inspect.isawaitable(result):
                    await result
            except TypeError as exc:
                # A builder method rejected what an operator asked for: the model's
                # shapes or attributes are inconsistent (or beyond what WebNN expresses).
                raise self.malformed(str(exc)) from None
            for k, index in enumerate(op.outputs):
                if index not in self._operands and index not in self._constants and index not in self._resources:
                    raise self.fail(f"output {k} was not produced")
        self.op = None

    async def run(self, input_names: dict[int, str], output_names: dict[int, str], translators: dict):
        """The main subgraph: its inputs become graph inputs, its outputs graph outputs,
        and the state it keeps (state.py) extra inputs and outputs.
        Returns (inputs, outputs, graph_outputs, state.StatePlan or None)."""
        from . import state
        self.session.translators = translators
        self.session.stack = [self.graph.index]
        self.state = state.StateScope(self.b)
        inputs = []
        for index, name in input_names.items():
            t = self.tensor(index)
            data_type = _graph_type(t)
            if data_type is None:
                raise TranslationError(f"load: input {name!r} has type {t.type_name}, which is not supported")
            if any(d < 0 for d in t.shape):
                raise TranslationError(f"load: input {name!r} has a dynamic shape {list(t.shape)}; "
                                       "only static shapes are supported")
            graph_name = f"input_{len(inputs)}"
            operand = self.b.input(graph_name, {"dataType": data_type, "shape": list(t.shape)})
            if _is_quantized(t) and t.numpy_type in (np.int8, np.uint8):
                operand = self.dequantize(operand, t)
            self._operands[index] = operand
            inputs.append(IOInfo(name, t, graph_name, data_type, tuple(t.shape)))

        await self._operators()

        outputs, graph_outputs = [], {}
        for index, name in output_names.items():
            t = self.tensor(index)
            operand = self.operand(index)
            if _is_quantized(t) and t.numpy_type in (np.int8, np.uint8):
                operand = self.quantize(operand, t)
            if operand._value.is_input or operand._value.is_constant:
                operand = self.b.identity(operand)
            graph_name = f"output_{len(outputs)}"
            graph_outputs[graph_name] = operand
            outputs.append(IOInfo(name, t, graph_name, operand.dataType, tuple(operand.shape)))
        if not self.session.states:
            return inputs, outputs, graph_outputs, None
        state_outputs, reads, writes = state.outputs(self, self.state, self.session.states,
                                                     taken={id(o._value) for o in graph_outputs.values()})
        graph_outputs.update(state_outputs)
        plan = state.StatePlan(self.session.states, reads, writes)
        if self.session.init is not None:
            plan.init_graph, plan.init_reads, plan.init_writes = self.session.init
        return inputs, outputs, graph_outputs, plan

    async def call(self, index: int, builder, operands: list, role: str, state=None) -> list:
        """Translate subgraph `index` into `builder` with its inputs bound to
        `operands` (as a TFLite WHILE invokes its cond and body subgraphs);
        returns the operands of its outputs. `role` names it in errors; `state` is
        the state.StateScope of a graph that keeps state (CALL_ONCE's), else None."""
        session = self.session
        model = self.model
        if not 0 <= index < len(model.subgraphs):
            raise self.malformed(f"its {role} subgraph index {index} is out of range (the model has "
                                 f"{len(model.subgraphs)} subgraphs)")
        if index in session.stack:
            chain = " -> ".join(str(i) for i in [*session.stack, index])
            raise self.malformed(f"its {role} subgraph {index} is already being translated: the subgraphs "
                                 f"call each other recursively ({chain})")
        if len(session.stack) >= MAX_NESTING:
            raise self.fail(f"subgraphs nest more than {MAX_NESTING} deep")
        sub = model.subgraphs[index]
        if len(sub.inputs) != len(operands):
            raise self.malformed(f"its {role} subgraph {index} has {len(sub.inputs)} inputs, "
                                 f"{len(operands)} values are passed to it")
        if len(set(sub.inputs)) != len(sub.inputs):
            raise self.malformed(f"its {role} subgraph {index} lists an input tensor twice")
        child = Importer(builder, model, sub, session)
        child.state = state
        for tensor_index, operand in zip(sub.inputs, operands):
            t = sub.tensors[tensor_index]
            expected = "uint8" if t.type_code == BOOL else t.ml_type
            if not _is_quantized(t) and expected != operand.dataType:
                raise self.malformed(f"its {role} subgraph {index}'s input {t.name!r} is {t.type_name}, "
                                     f"the value passed to it is {operand.dataType}")
            # The subgraph's declared input shapes are not used: like LiteRT, which
            # resizes them to the values passed in, the bound operands decide.
            child._operands[tensor_index] = operand
        session.stack.append(index)
        try:
            await child._operators()
            return [child.operand(i) for i in sub.outputs]
        finally:
            session.stack.pop()


def _is_quantized(t: Tensor) -> bool:
    return t.quantization is not None and t.numpy_type in (np.int8, np.uint8, np.int32)


def quantized_8bit(t: Tensor) -> bool:
    """An int8/uint8 tensor with quantization parameters (carried in the float domain)."""
    return t.quantization is not None and t.numpy_type in (np.int8, np.uint8)


def _graph_type(t: Tensor) -> str | None:
    return t.ml_type


_ML_TYPE = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16", np.dtype(np.int32): "int32",
            np.dtype(np.uint32): "uint32", np.dtype(np.int64): "int64", np.dtype(np.uint64): "uint64",
            np.dtype(np.int8): "int8", np.dtype(np.uint8): "uint8"}
# MLOperandDataType -> numpy type (the translators' constants).
NUMPY_TYPES = {v: k.type for k, v in _ML_TYPE.items()}
