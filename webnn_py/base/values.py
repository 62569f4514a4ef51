"""The base of the implementation's immutable value classes (DataType, OperandDescriptor,
TensorLimits, OperatorKind): equal when their fields are, hashable, frozen.

Written out instead of `@dataclass(frozen=True)`: that decorator builds each class's
__init__, __eq__, __hash__, __repr__ and __setattr__ as source text and compiles it with
exec() when the module is imported, so every page paid it (and the import of
dataclasses) at every boot (README "Use it in your page"). A subclass names its fields
in `__slots__`, in order, takes them in that order in its __init__ and sets them there with
`object.__setattr__`.
"""
from __future__ import annotations


class FrozenValue:
    __slots__ = ()

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__qualname__}({fields})"

    def __reduce__(self):
        # copy, deepcopy and pickle rebuild it through __init__ (which takes the fields in
        # order): their default way sets each slot with setattr, which a frozen value refuses.
        return type(self), self._values()

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")
