"""The graph as the builder records it: values (edges) and nodes (operators).

`api.MLOperand` wraps a `Value`; `api.MLGraphBuilder` appends `Node`s. The
runtime compiles the subgraph reachable from the requested outputs.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base.descriptor import OperandDescriptor


class Value:
    # Plain classes (not dataclasses: their decorator compiles generated methods with exec()
    # at import, at every page's boot); compared by identity.
    def __init__(self, descriptor: OperandDescriptor, producer: "Node | None" = None, input_name: str | None = None,
                 constant: np.ndarray | None = None, constant_source: Any = None):
        self.descriptor = descriptor
        self.producer = producer              # None for graph inputs and constants
        self.input_name = input_name          # set for graph inputs
        self.constant = constant              # set for constants (already laid out)
        self.constant_source = constant_source  # the MLTensor of constant(tensor), for build()'s checks

    def __repr__(self) -> str:
        role = (f"input {self.input_name!r}" if self.is_input else "constant" if self.is_constant
                else f"output of {self.producer.kind}" if self.producer is not None else "unbound")
        return f"Value({self.descriptor}, {role})"

    @property
    def is_input(self) -> bool:
        return self.input_name is not None

    @property
    def is_constant(self) -> bool:
        return self.constant is not None


class Node:
    def __init__(self, kind: str, inputs: list[Value | None], attributes: dict, label: str,
                 outputs: list[Value] | None = None):
        self.kind = kind                  # operator name, a key of ops.OPERATORS
        self.inputs = inputs              # None for an absent optional operand
        self.attributes = attributes      # what the kernel needs, as the build step normalised it
        self.label = label
        self.outputs = [] if outputs is None else outputs

    def __repr__(self) -> str:
        return f"Node({self.kind!r}, label={self.label!r}, {len(self.inputs)} inputs, {len(self.outputs)} outputs)"
