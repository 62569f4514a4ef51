"""Patterns: gelu, layerNormalization and softmax spelled out in smaller operators
become the operator itself, computed by its one kernel.

Graphs converted from formats older than those operators spell them out: ONNX
exports before opset 17 write LayerNormalization as ReduceMean, Sub, Pow, Add,
Sqrt, Div, Mul, Add; before opset 20, Gelu as Div (or Mul), Erf, Add, Mul, Mul;
and a numerically stable softmax is exp(x - reduceMax(x)) / reduceSum(...). ONNX
Runtime's WebNN execution provider (and any other translator) hands such graphs
to the builder one operator at a time. Each of them is a string of float32
passes over the data; the operator's kernel is one pass (kernels.c's rows), so
recognising them is worth what fusion cannot give.

A subgraph is replaced only when it is exactly the operator's formula, (§8.9.23
gelu, §8.9.30 layerNormalization, §8.9.55 softmax's decomposition) with its
constants (1/2, 1, sqrt 2 or its inverse, epsilon, scale, bias) within float32
rounding of theirs, every intermediate value is read by the subgraph alone (not
elsewhere, not a graph output), and everything is float32. The replacement
computes the same mathematical function rounded once, so its results differ
from the spelled-out chain's by the chain's own rounding errors (a few ulp).
The builder's graph is not modified: replaced nodes and their readers are new.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Callable, Mapping

import numpy as np

from ...base.datatypes import DATA_TYPES
from ...base.descriptor import OperandDescriptor
from ..ir import Node, Value

_FLOAT32 = np.dtype(np.float32)


def recognise(order: list[Node], outputs: Mapping[str, Value],
              constant_of: Callable) -> tuple[list[Node], dict[str, Value]]:
    """The node list and outputs with every recognised subgraph replaced (unchanged
    when there is none)."""
    uses = Counter(id(v) for node in order for v in node.inputs if v is not None)
    for value in outputs.values():
        uses[id(value)] += 1                 # a graph output is read outside the graph
    matcher = _Matcher(uses, constant_of)
    replacement: dict[int, Node] = {}        # id(last node of a subgraph) -> its operator
    removed: set[int] = set()
    # Last nodes first: a subgraph is matched whole (x / std * scale + bias) before any
    # smaller one inside it (x / std) could claim part of it.
    for node in reversed(order):
        if id(node) in removed or len(node.outputs) != 1 or not _is_float32(node.outputs[0]):
            continue
        found = matcher.match(node)
        if found is None:
            continue
        kind, inputs, attributes, interior = found
        if any(id(n) in removed or id(n) in replacement for n in interior):
            continue
        operator = Node(kind, inputs, attributes, node.label)
        operator.outputs = [Value(node.outputs[0].descriptor, producer=operator)]
        replacement[id(node)] = operator
        removed.update(id(n) for n in interior)
    if not replacement:
        return order, dict(outputs)

    current: dict[int, Value] = {}           # id(original value) -> the value now carrying it

    def now(value: Value | None) -> Value | None:
        return None if value is None else current.get(id(value), value)

    result: list[Node] = []
    for node in order:
        if id(node) in removed:
            continue
        new = replacement.get(id(node))
        if new is None:
            inputs = [now(v) for v in node.inputs]
            if all(a is b for a, b in zip(inputs, node.inputs)):
                result.append(node)
                continue
            new = Node(node.kind, inputs, node.attributes, node.label)
            new.outputs = [Value(v.descriptor, producer=new) for v in node.outputs]
        else:
            new.inputs = [now(v) for v in new.inputs]
        for old, value in zip(node.outputs, new.outputs):
            current[id(old)] = value
        result.append(new)
    return result, {name: now(value) for name, value in outputs.items()}


def _is_float32(value: Value) -> bool:
    return value.descriptor.type.numpy == _FLOAT32


def _near(value: float | None, target: float) -> bool:
    """A constant equal to `target` up to float32 rounding."""
    return value is not None and abs(value - target) <= 1e-6 * abs(target)


class _Matcher:
    def __init__(self, uses: Counter, constant_of: Callable):
        self.uses = uses
        self.constant_of = constant_of

    def match(self, node: Node):
        """(kind, inputs, attributes, interior nodes) of the operator `node` completes, or None."""
        for matcher in (self._gelu, self._layer_normalization, self._softmax):
            found = matcher(node)
            if found is not None:
                kind, inputs, attributes, interior = found
                if self._closed(node, interior) and all(v is None or _is_float32(v) for v in inputs):
                    return found
        return None

    def _closed(self, last: Node, interior: list[Node]) -> bool:
        """Every interior node has one float32 output, read only inside the subgraph."""
        reads = Counter(id(v) for n in interior + [last] for v in n.inputs if v is not None)
        for node in interior:
            if len(node.outputs) != 1 or not _is_float32(node.outputs[0]):
                return False
            value = node.outputs[0]
            if self.uses[id(value)] != reads[id(value)]:
                return False
        return True

    # -- helpers --

    def scalar(self, value: Value | None) -> float | None:
        constant = None if value is None else self.constant_of(value)
        if constant is None or constant.size != 1:
            return None
        return float(constant.reshape(-1)[0])

    def made_by(self, value: Value | None, *kinds: str) -> Node | None:
        """The node computing `value` if it is one of `kinds` (that nothing else reads
        the value is checked by _closed, for the whole subgraph)."""
        node = None if value is None else value.producer
        return node if node is not None and node.kind in kinds else None

    def split(self, node: Node, test: Callable[[Value], bool]) -> tuple[Value, Value] | None:
        """(the operand passing `test`, the other) of a commutative binary node."""
        a, b = node.inputs
        if test(a):
            return a, b
        if test(b):
            return b, a
        return None

    # -- §8.9.23 gelu: 0.5 * x * (1 + erf(x / sqrt 2)) --

    def _gelu(self, last: Node):
        if last.kind != "mul":
            return None
        interior: list[Node] = []
        factors: list[Value] = []

        def flatten(value: Value) -> None:
            # Three factors need one inner mul; a longer chain is not gelu (and is not walked).
            inner = self.made_by(value, "mul")
            if inner is not None and self.uses[id(value)] == 1 and not interior:
                interior.append(inner)
                flatten(inner.inputs[0])
                flatten(inner.inputs[1])
            else:
                factors.append(value)

        flatten(last.inputs[0])
        flatten(last.inputs[1])
        if len(factors) != 3:
            return None
        for tail in factors:
            add = self.made_by(tail, "add")
            parts = add and self.split(add, lambda v: _near(self.scalar(v), 1.0))
            erf = parts and self.made_by(parts[1], "erf")
            scaled = erf and self.made_by(erf.inputs[0], "div", "mul")
            if scaled is None:
                continue
            if scaled.kind == "div":
                x, root = scaled.inputs
                if not _near(self.scalar(root), math.sqrt(2.0)):
                    continue
            else:
                pair = self.split(scaled, lambda v: _near(self.scalar(v), 1 / math.sqrt(2.0)))
                if pair is None:
                    continue
                x = pair[1]
            rest = [f for f in factors if f is not tail]
            if rest[0] is x and _near(self.scalar(rest[1]), 0.5) or \
                    rest[1] is x and _near(self.scalar(rest[0]), 0.5):
                return "gelu", [x], {}, interior + [add, erf, scaled]
        return None

    # -- §8.9.30 layerNormalization: (x - mean) / sqrt(variance + epsilon) * scale + bias --

    def _layer_normalization(self, last: Node):
        node, scale, bias, visited = last, None, None, [last]
        if node.kind == "add":                                   # + bias
            pair = self.split(node, lambda v: self.constant_of(v) is not None)
            node = pair and self.made_by(pair[1], "mul", "div")
            if node is None:
                return None
            bias = pair[0]
            visited.append(node)
        if node.kind == "mul":                                   # * scale
            pair = self.split(node, lambda v: self.constant_of(v) is not None)
            node = pair and self.made_by(pair[1], "div")
            if node is None:
                return None
            scale = pair[0]
            visited.append(node)
        if node.kind != "div":
            return None
        deviation_of, root_of = node.inputs                      # (x - mean) / sqrt(variance + epsilon)
        sub = self.made_by(deviation_of, "sub")
        sqrt = self.made_by(root_of, "sqrt")
        plus = sqrt and self.made_by(sqrt.inputs[0], "add")
        pair = plus and self.split(plus, lambda v: self.scalar(v) is not None)
        variance = pair and self.made_by(pair[1], "reduceMean")
        square = variance and self.made_by(variance.inputs[0], "pow", "mul")
        if sub is None or square is None:
            return None
        x, mean_of = sub.inputs
        mean = self.made_by(mean_of, "reduceMean")
        if mean is None or mean.inputs[0] is not x or square.inputs[0] is not deviation_of:
            return None
        squared = (self.scalar(square.inputs[1]) == 2.0 if square.kind == "pow"
                   else square.inputs[1] is deviation_of)
        axes = tuple(mean.attributes["axes"])
        rank = x.descriptor.rank
        if (not squared or not axes or tuple(variance.attributes["axes"]) != axes
                or mean.outputs[0].descriptor.rank != rank or variance.outputs[0].descriptor.rank != rank):
            return None
        # scale and bias broadcast along the last axes: the normalised ones must be those.
        if sorted(axes) != list(range(rank - len(axes), rank)):
            return None
        per_feature = tuple(x.descriptor.shape[rank - len(axes):])
        operands = [None if v is None else self._per_feature(v, per_feature) for v in (scale, bias)]
        if any(o is None and v is not None for o, v in zip(operands, (scale, bias))):
            return None
        interior = visited[1:] + [sub, sqrt, plus, variance, square, mean]
        return ("layerNormalization", [x] + operands,
                {"axes": tuple(sorted(axes)), "epsilon": self.scalar(pair[0])}, interior)

    def _per_feature(self, value: Value, shape: tuple) -> Value | None:
        """A constant that broadcasts along the normalised (last) axes alone, as a
        constant of exactly their shape (layerNormalization's scale and bias)."""
        constant = self.constant_of(value)
        leading = constant.shape[:max(0, constant.ndim - len(shape))]
        if any(d != 1 for d in leading) or np.broadcast_shapes(constant.shape[len(leading):], shape) != shape:
            return None
        array = np.ascontiguousarray(np.broadcast_to(constant.reshape(constant.shape[len(leading):]), shape))
        array.setflags(write=False)
        data_type = next(name for name, t in DATA_TYPES.items() if t.numpy == array.dtype)
        return Value(OperandDescriptor(data_type, shape), constant=array)

    # -- §8.9.55 softmax: exp(x - max(x)) / sum(exp(x - max(x))) along one axis --

    def _softmax(self, last: Node):
        if last.kind != "div":
            return None
        exp_of, sum_of = last.inputs
        exp = self.made_by(exp_of, "exp")
        total = self.made_by(sum_of, "reduceSum")
        sub = exp and self.made_by(exp.inputs[0], "sub")
        if total is None or sub is None or total.inputs[0] is not exp_of:
            return None
        x, max_of = sub.inputs
        peak = self.made_by(max_of, "reduceMax")
        axes = tuple(total.attributes["axes"])
        rank = x.descriptor.rank
        if (peak is None or peak.inputs[0] is not x or len(axes) != 1 or tuple(peak.attributes["axes"]) != axes
                or peak.outputs[0].descriptor.rank != rank or total.outputs[0].descriptor.rank != rank):
            return None
        return "softmax", [x], {"axis": axes[0]}, [exp, total, sub, peak]
