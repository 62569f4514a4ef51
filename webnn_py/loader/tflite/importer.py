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

from dataclasses import dataclass

import numpy as np

from ...base.errors import NotSupportedError
from .schema import Model, Operator, SubGraph, Tensor

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


class Importer:
    def __init__(self, builder, model: Model, subgraph: SubGraph):
        self.b = builder
        self.model = model
        self.graph = subgraph
        self._operands: dict[int, object] = {}     # tensor index -> MLOperand (float domain if quantized)
        self._constants: dict[int, np.ndarray] = {}
        self.op: Operator | None = None

    # -- errors -----------------------------------------------------------------------------

    def fail(self, problem: str) -> NotSupportedError:
        where = f"operator {self.op.index} ({self.op.opcode.name})" if self.op else "model"
        return TranslationError(f"load: {where}: {problem}")

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
        value = self.const(index)
        if value is None:
            raise self.fail(f"tensor {t.name!r} is read before any operator produced it")
        operand = self.constant_operand(value)
        if _is_quantized(t) and value.dtype in (np.int8, np.uint8, np.int32):
            operand = self.dequantize(operand, t)
        self._operands[index] = operand
        return operand

    def constant_operand(self, value: np.ndarray):
        value = np.ascontiguousarray(value)
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
        return self.constant_operand(np.full([1] * len(like.shape), value, dtype=_NUMPY[like.dataType]))

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

    def run(self, input_names: dict[int, str], output_names: dict[int, str], translators: dict):
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

        for op in self.graph.operators:
            self.op = op
            name = op.opcode.name
            translate = translators.get(name)
            if translate is None:
                raise NotSupportedError(f"load: operator {op.index}: the TFLite operator {name} is not supported")
            if not op.outputs:
                raise self.fail("it has no outputs")
            translate(self)
            for k, index in enumerate(op.outputs):
                if index not in self._operands and index not in self._constants:
                    raise self.fail(f"output {k} was not produced")
        self.op = None

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
        return inputs, outputs, graph_outputs


def _is_quantized(t: Tensor) -> bool:
    return t.quantization is not None and t.numpy_type in (np.int8, np.uint8, np.int32)


def _graph_type(t: Tensor) -> str | None:
    return t.ml_type


_ML_TYPE = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16", np.dtype(np.int32): "int32",
            np.dtype(np.uint32): "uint32", np.dtype(np.int64): "int64", np.dtype(np.uint64): "uint64",
            np.dtype(np.int8): "int8", np.dtype(np.uint8): "uint8"}
_NUMPY = {v: k for k, v in _ML_TYPE.items()}
