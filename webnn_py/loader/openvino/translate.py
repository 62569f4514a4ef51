"""Translating an IR graph (ir.py) into MLGraphBuilder calls.

Every IR output port becomes a *value*:
  * an np.ndarray: known at load time (Const, and what the translators fold:
    shapes, axes, indices -- OpenVINO feeds those as i64 tensors, WebNN wants
    them as plain numbers, so they must be constants);
  * an MLOperand of the builder;
  * an Empty: a tensor with a zero-size dimension, which only a Loop that runs
    zero times with a concatenated output produces (WebNN operands cannot be
    empty, so an Empty may only flow to a Result).

A translation is a function of the concrete input shapes and of the iteration
counts of the Loops whose concatenated outputs have a size known only at run
time (`counts`); see loop.py and model.py for how those are found.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...base.errors import DataError, NotSupportedError
from .ir import Graph, Layer, extent_problem

NUMPY_TO_WEBNN = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16", np.dtype(np.int32): "int32",
                  np.dtype(np.int64): "int64", np.dtype(np.uint8): "uint8"}


@dataclass
class Empty:
    """A zero-size tensor (see the module docstring)."""
    data_type: str
    shape: tuple[int, ...]


@dataclass
class Session:
    """What the translations of one specialisation share."""
    translators: dict                      # IR type -> translate(translator, inputs) -> outputs
    counts: dict[str, int]                 # loop key -> iteration count found at run time
    count_target: str | None = None        # translate only up to this loop and give its iteration count
    max_iterations: int | None = None      # MLLoopOptions.maxIterations (None: the builder's default)


class NeedCount(Exception):
    """A Loop's concatenated output has a run-time size: its iteration count is needed."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


class Counted(Exception):
    """Raised in counting mode when the target Loop's iteration-count operand exists."""

    def __init__(self, operand):
        super().__init__("counted")
        self.operand = operand


class Translator:
    def __init__(self, builder, graph: Graph, session: Session, path: str = "", in_body: bool = False):
        self.b = builder
        self.graph = graph
        self.session = session
        self.path = path                     # "" for the model, "3/" inside the body of loop 3, ...
        self.in_body = in_body
        self.env: dict[tuple[int, int], object] = {}
        self.layer: Layer | None = None
        self._constants: dict[int, object] = {}

    # -- errors ------------------------------------------------------------------------------

    def unsupported(self, problem: str) -> NotSupportedError:
        return NotSupportedError(f"load: {self.layer.where}: {problem}")

    def malformed(self, problem: str) -> DataError:
        return DataError(f"load: {self.layer.where}: {problem}")

    def check_extent(self, shape, what: str) -> None:
        """A DataError when a tensor of `shape` (from the model's attributes or
        constants) could not exist: a dimension above MAX_DIMENSION, or more
        bytes than maxTensorByteLength even at one byte an element. Checked
        before a translator builds tables of that size in numpy."""
        problem = extent_problem(shape, 1)
        if problem:
            raise self.malformed(f"{what} {list(shape)} {problem}")

    def arity(self, inputs: list, *counts: int) -> None:
        """A DataError unless the layer has one of `counts` inputs."""
        if len(inputs) not in counts:
            allowed = " or ".join(str(n) for n in counts)
            raise self.malformed(f"{self.layer.type} takes {allowed} input{'' if counts == (1,) else 's'}, "
                                 f"not {len(inputs)}")

    # -- values ------------------------------------------------------------------------------

    def operand(self, value):
        """An MLOperand for a value (constants are created once per array)."""
        if isinstance(value, np.ndarray):
            cached = self._constants.get(id(value))
            if cached is not None and cached[0] is value:
                return cached[1]
            data_type = NUMPY_TO_WEBNN.get(value.dtype)
            if data_type is None:
                raise self.unsupported(f"a constant of numpy type {value.dtype} has no WebNN data type")
            operand = self.b.constant({"dataType": data_type, "shape": list(value.shape)},
                                      np.ascontiguousarray(value))
            self._constants[id(value)] = (value, operand)
            return operand
        if isinstance(value, Empty):
            raise self.unsupported(f"an input is empty (shape {list(value.shape)}, from a Loop that ran zero times); "
                                   "WebNN operands cannot have a zero-size dimension")
        return value

    def const(self, value, what: str) -> np.ndarray:
        if not isinstance(value, np.ndarray):
            raise self.unsupported(f"{what} must be known at load time (a Const, or computed from Consts), "
                                   "since WebNN takes it as a plain value")
        return value

    @staticmethod
    def shape(value) -> tuple[int, ...]:
        return tuple(value.shape)        # ndarray, Empty and MLOperand alike

    @staticmethod
    def data_type(value) -> str:
        if isinstance(value, np.ndarray):
            return NUMPY_TO_WEBNN.get(value.dtype, str(value.dtype))
        if isinstance(value, Empty):
            return value.data_type
        return value.dataType

    def ints(self, value, what: str) -> list[int]:
        array = self.const(value, what)
        if array.dtype.kind not in "iu":
            raise self.malformed(f"{what} has element type {array.dtype}, not an integer type")
        return [int(v) for v in array.reshape(-1)]

    def one_int(self, value, what: str) -> int:
        """The single integer of a load-time input such as an axis or k."""
        values = self.ints(value, what)
        if len(values) != 1:
            raise self.malformed(f"{what} holds {len(values)} values, not 1")
        return values[0]

    def _attr_number(self, key: str, default, convert, kind: str):
        """The attribute `key` read by `convert`; `default` when absent (None: it must be present)."""
        text = self.layer.data.get(key)
        if text is None:
            if default is None:
                raise self.malformed(f"the {key!r} attribute is missing")
            return default
        try:
            return convert(text)
        except ValueError:
            raise self.malformed(f"the {key!r} attribute {text!r} is not {kind}") from None

    def attr_int(self, key: str, default=None) -> int:
        return self._attr_number(key, default, int, "an integer")

    def attr_flag(self, key: str, default: bool = False) -> bool:
        """A boolean attribute: "true" or "1" (any case) is true."""
        text = self.layer.data.get(key)
        return default if text is None else text.strip().lower() in ("true", "1")

    def attr_float(self, key: str, default: float | None = None) -> float:
        return self._attr_number(key, default, float, "a number")

    def attr_ints(self, key: str, default=None) -> list[int]:
        text = self.layer.data.get(key)
        if text is None:
            if default is None:
                raise self.malformed(f"the {key!r} attribute is missing")
            return list(default)
        text = text.strip()
        if not text:
            return []
        try:
            return [int(v) for v in text.split(",")]
        except ValueError:
            raise self.malformed(f"the {key!r} attribute {text!r} is not a list of integers") from None

    def axis(self, axis: int, rank: int, what: str = "axis") -> int:
        if not -rank <= axis < max(rank, 1):
            raise self.malformed(f"{what} {axis} is out of range for rank {rank}")
        return axis + rank if axis < 0 else axis

    # -- the walk ----------------------------------------------------------------------------

    async def run(self, parameters: dict[int, object]) -> dict[int, object]:
        """Translate every layer; returns {Result layer id: value}."""
        from .loop import translate_loop
        results: dict[int, object] = {}
        for lid in self.graph.order:
            layer = self.graph.layers[lid]
            self.layer = layer
            inputs = [self.env[self.graph.sources[(lid, port.id)]] for port in layer.inputs]
            if layer.type == "Parameter":
                if lid not in parameters:
                    raise self.malformed("the Parameter is not bound to any input")
                outputs = [parameters[lid]]
            elif layer.type == "Const":
                outputs = [layer.data["__value__"]]
            elif layer.type == "Result":
                if len(inputs) != 1:
                    raise self.malformed(f"a Result has one input, not {len(inputs)}")
                results[lid] = inputs[0]
                continue
            else:
                try:
                    if layer.type == "Loop":
                        outputs = await translate_loop(self, layer, inputs)
                    else:
                        if any(isinstance(v, Empty) for v in inputs):
                            self.operand(next(v for v in inputs if isinstance(v, Empty)))   # raises
                        outputs = self.session.translators[layer.type](self, inputs)
                except TypeError as exc:
                    # A builder method rejected what the layer asked for: the model's
                    # shapes, types or attributes are inconsistent.
                    self.layer = layer
                    raise self.malformed(str(exc)) from None
                except IndexError as exc:
                    # A translator read an axis the input does not have: the
                    # model's ranks do not fit the operation.
                    self.layer = layer
                    raise self.malformed(f"an input's rank does not fit the operation ({exc})") from None
                except (ValueError, OverflowError) as exc:
                    # numpy refused a fold on constants (a shape it cannot hold,
                    # values that do not fit): the constants are inconsistent.
                    self.layer = layer
                    raise self.malformed(f"computing the layer on its constants failed: {exc}") from None
            if len(outputs) != len(layer.outputs):
                raise self.malformed(f"the layer has {len(layer.outputs)} output ports, {layer.type} gives "
                                     f"{len(outputs)}")
            for port, value in zip(layer.outputs, outputs):
                if isinstance(value, np.generic):
                    value = np.asarray(value)      # numpy gives 0-d results as scalars
                self.env[(lid, port.id)] = value
        self.layer = None
        return results

