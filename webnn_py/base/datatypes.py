"""MLOperandDataType facts: numpy storage type, element size, matching view type.

The table of §12.1 (MLOperandDataType and ArrayBufferView compatibility) lives
here, so buffer validation and the JS shim read the same facts.
"""
from __future__ import annotations

import numpy as np

from .values import FrozenValue


class DataType(FrozenValue):
    __slots__ = ("name", "numpy", "view_type")

    def __init__(self, name: str, numpy: np.dtype, view_type: str):
        object.__setattr__(self, "name", name)            # the MLOperandDataType enum value
        object.__setattr__(self, "numpy", numpy)          # storage type of tensors of this type
        object.__setattr__(self, "view_type", view_type)  # the ArrayBufferView type of §12.1

    @property
    def byte_size(self) -> int:
        return self.numpy.itemsize

    @property
    def is_float(self) -> bool:
        return self.numpy.kind == "f"


DATA_TYPES: dict[str, DataType] = {
    dt.name: dt
    for dt in (
        DataType("float32", np.dtype(np.float32), "Float32Array"),
        DataType("float16", np.dtype(np.float16), "Float16Array"),
        DataType("int32", np.dtype(np.int32), "Int32Array"),
        DataType("uint32", np.dtype(np.uint32), "Uint32Array"),
        DataType("int64", np.dtype(np.int64), "BigInt64Array"),
        DataType("uint64", np.dtype(np.uint64), "BigUint64Array"),
        DataType("int8", np.dtype(np.int8), "Int8Array"),
        DataType("uint8", np.dtype(np.uint8), "Uint8Array"),
    )
}


def data_type(name: str) -> DataType:
    return DATA_TYPES[name]
