"""The operator table: for each operator, its build step (validation and
shape/type inference), its numpy kernel and its support limits.

One table serves three readers:
  * MLGraphBuilder (api) converts a method's IDL arguments and calls `build`,
    which validates through a `BuildContext` and emits one graph node;
  * the runtime calls `kernel` on numpy arrays when the graph runs;
  * opSupportLimits() reports `limits`, the same data-type sets and rank ranges
    that `BuildContext.check` enforces, so the two cannot drift apart.
Operator modules know nothing of MLOperand: they see opaque operand handles and
ask the context for descriptors, so the model loaders reuse the same checks.
"""
from __future__ import annotations

from typing import Any, Callable, NoReturn, Sequence

import numpy as np

from ..base.datatypes import DATA_TYPES
from ..base.descriptor import MAX_RANK, MAX_TENSOR_BYTE_LENGTH, OperandDescriptor
from ..base.errors import describe
from ..base.values import FrozenValue


class TensorLimits(FrozenValue):
    """Allowed data types and ranks of one operand (an MLTensorLimits entry)."""

    __slots__ = ("data_types", "min_rank", "max_rank")

    def __init__(self, data_types: tuple[str, ...], min_rank: int = 0, max_rank: int = MAX_RANK):
        object.__setattr__(self, "data_types", data_types)
        object.__setattr__(self, "min_rank", min_rank)
        object.__setattr__(self, "max_rank", max_rank)

    def ranks(self, min_rank: int | None = None, max_rank: int | None = None) -> "TensorLimits":
        return TensorLimits(self.data_types,
                            self.min_rank if min_rank is None else min_rank,
                            self.max_rank if max_rank is None else max_rank)

    def rank(self, rank: int) -> "TensorLimits":
        return self.ranks(rank, rank)

    def to_idl(self) -> dict:
        return {"dataTypes": list(self.data_types), "rankRange": {"min": self.min_rank, "max": self.max_rank}}


# The data-type sets the spec's operator tables use.
ALL_TYPES = tuple(DATA_TYPES)
FLOATS = ("float32", "float16")
SIGNED = ("float32", "float16", "int32", "int64", "int8")
INTS = ("int32", "uint32", "int64", "uint64", "int8", "uint8")
INDEX_TYPES = ("int32", "uint32", "int64")
ANY = TensorLimits(ALL_TYPES)
FLOAT = TensorLimits(FLOATS)

def compute_type(dtype: np.dtype) -> np.dtype:
    """The type a kernel computes in: float16 is computed in float32 and rounded
    once at the end (as native backends do); other types compute as themselves."""
    return np.dtype(np.float32) if dtype == np.float16 else np.dtype(dtype)


Kernel = Callable[[Sequence[np.ndarray | None], dict, Sequence[OperandDescriptor]], list[np.ndarray]]


class OperatorKind(FrozenValue):
    __slots__ = ("name", "build", "kernel", "limits")

    def __init__(self, name: str, build: Callable[..., Any], kernel: Kernel, limits: dict[str, TensorLimits]):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "build", build)    # (ctx, *converted IDL arguments) -> MLOperand or list of them
        object.__setattr__(self, "kernel", kernel)  # (input arrays, attributes, output descriptors) -> output arrays
        object.__setattr__(self, "limits", limits)  # the operator's MLOpSupportLimits member, by operand name


OPERATORS: dict[str, OperatorKind] = {}


def register(names: str | Sequence[str], *, build: Callable, kernel: Kernel, limits: dict[str, TensorLimits]) -> None:
    for name in [names] if isinstance(names, str) else names:
        if name in OPERATORS:
            raise RuntimeError(f"operator {name!r} registered twice")
        OPERATORS[name] = OperatorKind(name, build, kernel, dict(limits))


def operator_kind(name: str) -> OperatorKind:
    return OPERATORS[name]


class BuildContext:
    """What an operator's build step may do; MLGraphBuilder provides one per call.

    Subclasses implement `descriptor` (including the spec's "validate operand"
    step) and `emit` (recording the node). Everything else is shared.
    """

    def __init__(self, op: str, label: str = ""):
        self.op = op
        self.label = label

    # -- provided by the graph builder --
    def descriptor(self, operand) -> OperandDescriptor:
        raise NotImplementedError

    def emit(self, inputs: Sequence[Any], outputs: Sequence[OperandDescriptor], attributes: dict | None = None,
             kind: str | None = None) -> list:
        """Record one node computing `outputs` from `inputs` (None for absent optional ones)."""
        raise NotImplementedError

    # -- shared helpers --
    def fail(self, problem: str) -> NoReturn:
        raise TypeError(describe(self.op, self.label, problem))

    def check(self, name: str, operand, limits: TensorLimits | None = None) -> OperandDescriptor:
        """Descriptor of `operand`, checked against the operator's limits for `name`
        (the spec's "allowed data types" and "allowed ranks" tables)."""
        desc = self.descriptor(operand)
        limits = limits or operator_kind(self.op).limits[name]
        if desc.data_type not in limits.data_types:
            self.fail(f"{name} has data type {desc.data_type}; allowed: {', '.join(limits.data_types)}")
        if not limits.min_rank <= desc.rank <= limits.max_rank:
            want = (str(limits.min_rank) if limits.min_rank == limits.max_rank
                    else f"{limits.min_rank} to {limits.max_rank}")
            self.fail(f"{name} has rank {desc.rank} (shape {list(desc.shape)}); allowed: {want}")
        return desc

    def same_type(self, name: str, desc: OperandDescriptor, other_name: str, other: OperandDescriptor) -> None:
        if desc.data_type != other.data_type:
            self.fail(f"{name}'s data type {desc.data_type} differs from {other_name}'s {other.data_type}")

    def axis(self, name: str, axis: int, rank: int) -> int:
        """A non-negative axis below `rank`, as the spec's axis checks require."""
        if not 0 <= axis < rank:
            self.fail(f"{name} {axis} is out of range for rank {rank}")
        return axis


def support_limits() -> dict:
    """MLOpSupportLimits (§8.3.7) as this implementation enforces it: the
    top-level members plus one member per registered operator, built from the
    same `limits` tables that `BuildContext.check` validates against."""
    result = {
        # numpy arrays are laid out however we like; NCHW is the spec's default.
        "preferredInputLayout": "nchw",
        "maxTensorByteLength": MAX_TENSOR_BYTE_LENGTH,
        "input": ANY.to_idl(),
        "constant": ANY.to_idl(),
        "output": ANY.to_idl(),
    }
    for name, kind in OPERATORS.items():
        result[name] = {operand: limits.to_idl() for operand, limits in kind.limits.items()}
    return result
