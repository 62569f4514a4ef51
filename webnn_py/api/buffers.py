"""Buffer-source steps shared by MLContext and MLGraphBuilder (§8.3)."""
from __future__ import annotations

import numpy as np

from ..base.descriptor import OperandDescriptor
from ..base.errors import out_of_memory

# Float16Array is still new in browsers; the spec's note on §12.1 lets
# implementations take float16 data as raw bits in a Uint16Array, which is what
# WPT and the frameworks pass.
_EXTRA_VIEW_TYPES = {"float16": {"Uint16Array"}}


def validate_buffer_with_descriptor(buffer, desc: OperandDescriptor) -> str | None:
    """§8.3 "validate buffer with descriptor": None when valid, else why not."""
    if buffer.byte_length != desc.byte_length:
        return f"the buffer holds {buffer.byte_length} bytes, {desc} needs {desc.byte_length}"
    if not buffer.is_view or buffer.element_type == "Uint8Array":
        return None
    allowed = {desc.type.view_type} | _EXTRA_VIEW_TYPES.get(desc.data_type, set())
    if buffer.element_type not in allowed:
        return f"a {buffer.element_type} cannot hold {desc.data_type} data (use {desc.type.view_type} or Uint8Array)"
    return None


def copy_of_bytes(buffer, desc: OperandDescriptor, operation: str) -> np.ndarray:
    """"get a copy of the bytes held by the buffer source", as an array of the descriptor's
    type; when it cannot be allocated, `operation` fails with UnknownError (base.errors.out_of_memory)."""
    try:
        array = np.empty(desc.shape, dtype=desc.type.numpy)
    except MemoryError:
        raise out_of_memory(operation, desc.byte_length, f"the copy of the {desc} data") from None
    buffer.copy_to(memoryview(array.reshape(-1).view(np.uint8)))
    return array


def write_bytes_into(buffer, array: np.ndarray) -> None:
    """"write" the array's bytes into the caller's buffer (§8.3.5 step 9)."""
    buffer.copy_from(memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8)))
