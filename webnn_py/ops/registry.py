"""The operator table: name → validation and kernel.

`infer` takes the input descriptors and the converted options and returns the
output descriptors, raising TypeError (with `describe()`'s message) on invalid
input. `kernel` takes numpy arrays and the same options and returns arrays.
The builder calls `infer`; the runtime calls `kernel`; neither knows any
operator by name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..base.descriptor import OperandDescriptor

InferFn = Callable[[str, Sequence[OperandDescriptor], dict, str], list[OperandDescriptor]]
KernelFn = Callable[[str, Sequence[np.ndarray], dict, Sequence[OperandDescriptor]], list[np.ndarray]]


@dataclass(frozen=True)
class OperatorKind:
    name: str
    infer: InferFn     # (name, input descriptors, options, label) -> output descriptors
    kernel: KernelFn   # (name, input arrays, options, output descriptors) -> output arrays


OPERATORS: dict[str, OperatorKind] = {}


def register(names: Sequence[str], infer: InferFn, kernel: KernelFn) -> None:
    for name in names:
        if name in OPERATORS:
            raise RuntimeError(f"operator {name!r} registered twice")
        OPERATORS[name] = OperatorKind(name, infer, kernel)


def operator_kind(name: str) -> OperatorKind:
    return OPERATORS[name]
