"""The MLOperand interface (§8.6)."""
from __future__ import annotations

from ..runtime.ir import Value
from .idl import register_interface


class MLOperand:
    __slots__ = ("_builder", "_value", "__weakref__")

    def __init__(self, builder, value: Value):
        # "create an MLOperand" (§8.6.1)
        self._builder = builder
        self._value = value

    @property
    def dataType(self) -> str:
        return self._value.descriptor.data_type

    @property
    def shape(self) -> list[int]:
        return list(self._value.descriptor.shape)

    @property
    def _descriptor(self):
        return self._value.descriptor

    def __repr__(self) -> str:
        return f"<MLOperand {self._value.descriptor}>"


register_interface("MLOperand", MLOperand)
