"""MLOperandDescriptor as an immutable value (§8.5).

Converted IDL dictionaries are plain dicts; inside the implementation a
descriptor is this frozen value so it can be compared ("equal" in §8.5),
hashed and shared between operands without defensive copies.
"""
from __future__ import annotations

from math import prod

from .datatypes import DataType, data_type
from .values import FrozenValue

# §8.5: "a valid dimension is an integer greater than zero and in the range of long".
MAX_DIMENSION = 2**31 - 1
# §8.5: a valid tensor rank is greater than... at most 8192; an implementation may set a lower limit.
MAX_RANK = 8
# The largest tensor this implementation allocates (reported by opSupportLimits()).
MAX_TENSOR_BYTE_LENGTH = 2**31 - 1


class OperandDescriptor(FrozenValue):
    __slots__ = ("data_type", "shape")

    def __init__(self, data_type: str, shape: tuple[int, ...]):
        object.__setattr__(self, "data_type", data_type)
        object.__setattr__(self, "shape", shape)

    # Spelled out (not FrozenValue's loop over the fields): descriptors are compared and
    # hashed on every builder call and compiler pass.
    def __eq__(self, other):
        if other.__class__ is OperandDescriptor:
            return self.data_type == other.data_type and self.shape == other.shape
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.data_type, self.shape))

    @classmethod
    def from_dict(cls, d: dict) -> "OperandDescriptor":
        return cls(d["dataType"], tuple(int(x) for x in d["shape"]))

    @property
    def type(self) -> DataType:
        return data_type(self.data_type)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def element_count(self) -> int:
        """§8.5 "element count"."""
        return prod(self.shape)

    @property
    def byte_length(self) -> int:
        """§8.5 "byte length"."""
        return self.element_count * self.type.byte_size

    def to_dict(self) -> dict:
        return {"dataType": self.data_type, "shape": list(self.shape)}

    def __str__(self) -> str:
        return f"{self.data_type}[{', '.join(map(str, self.shape))}]"


def check_dimensions(desc: OperandDescriptor) -> str | None:
    """§8.5 "check dimensions": None when valid, else why not."""
    for dim in desc.shape:
        if not 0 < dim <= MAX_DIMENSION:
            return f"dimension {dim} of shape {list(desc.shape)} is not a valid dimension (1 to {MAX_DIMENSION})"
    if desc.rank > MAX_RANK:
        return f"rank {desc.rank} exceeds the supported maximum of {MAX_RANK}"
    if desc.element_count > MAX_DIMENSION:
        return f"element count {desc.element_count} exceeds {MAX_DIMENSION}"
    if desc.byte_length > MAX_TENSOR_BYTE_LENGTH:
        return f"byte length {desc.byte_length} exceeds maxTensorByteLength {MAX_TENSOR_BYTE_LENGTH}"
    return None
