"""The graph as the builder records it: values (edges) and nodes (operators).

`api.MLOperand` wraps a `Value`; `api.MLGraphBuilder` appends `Node`s. The
runtime compiles the subgraph reachable from the requested outputs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..base.descriptor import OperandDescriptor


@dataclass(eq=False)
class Value:
    descriptor: OperandDescriptor
    producer: "Node | None" = None      # None for graph inputs and constants
    input_name: str | None = None       # set for graph inputs
    constant: np.ndarray | None = None  # set for constants (already laid out)
    constant_source: Any = None         # the MLTensor of constant(tensor), for build()'s checks

    @property
    def is_input(self) -> bool:
        return self.input_name is not None

    @property
    def is_constant(self) -> bool:
        return self.constant is not None


@dataclass(eq=False)
class Node:
    kind: str                           # operator name, a key of ops.OPERATORS
    inputs: list[Value | None]          # None for an absent optional operand
    attributes: dict                    # what the kernel needs, as the build step normalised it
    label: str
    outputs: list[Value] = field(default_factory=list)
