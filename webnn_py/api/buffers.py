"""Buffer-source steps shared by MLContext and MLGraphBuilder (§8.3)."""
from __future__ import annotations

import logging

import numpy as np

from ..base.descriptor import OperandDescriptor
from ..base.errors import out_of_memory

# Float16Array is still new in browsers; the spec's note on §12.1 lets
# implementations take float16 data as raw bits in a Uint16Array, which is what
# WPT and the frameworks pass.
_EXTRA_VIEW_TYPES = {"float16": {"Uint16Array"}}

_log = logging.getLogger("webnn_py")

#: Whether readTensor(tensor, outputData) and writeTensor() hold a view to the element
#: type rule of "validate buffer with descriptor" (§8.3.5 step 6, §8.3.6 step 4).
#: True on the host (spec-exact). The browser bridge sets False unless the page asks
#: for `strictBufferTypes`: Chromium checks only the byte length there (its element type
#: check is an open TODO, crbug.com/378604909, see WebNN issue #826), WPT's own tensor
#: tests write a Uint32Array into an int32 tensor, and ONNX Runtime Web reads every
#: partition output through an Int8Array, never catching the rejection (its
#: session.run() would hang: issue 19, item 15). Either way the mismatch is logged.
strict_view_types = True
_reported: set = set()


def validate_buffer_with_descriptor(buffer, desc: OperandDescriptor, operation: str | None = None) -> str | None:
    """§8.3 "validate buffer with descriptor": None when valid, else why not. `operation`
    (readTensor/writeTensor) lets `strict_view_types` = False accept a view of another
    element type with the right byte length, as its raw bytes."""
    if buffer.byte_length != desc.byte_length:
        return f"the buffer holds {buffer.byte_length} bytes, {desc} needs {desc.byte_length}"
    if not buffer.is_view or buffer.element_type == "Uint8Array":
        return None
    allowed = {desc.type.view_type} | _EXTRA_VIEW_TYPES.get(desc.data_type, set())
    if buffer.element_type in allowed:
        return None
    article = "an" if buffer.element_type[0] in "AEIOU" else "a"
    problem = f"{article} {buffer.element_type} cannot hold {desc.data_type} data (use {desc.type.view_type} or Uint8Array)"
    if operation is None:
        return problem
    key = (operation, buffer.element_type, desc.data_type, strict_view_types)
    if key not in _reported:
        # Once per kind of mismatch: a client that does it does it on every run.
        _reported.add(key)
        if strict_view_types:
            _log.warning("%s: rejected with a TypeError: %s (validate buffer with descriptor); clients "
                         "written for Chromium, which checks only the byte length, may not expect it",
                         operation, problem)
        else:
            _log.warning("%s: %s, as validate buffer with descriptor says, but its byte length is right: "
                         "its bytes are used as they are, as Chromium does (strictBufferTypes: true "
                         "rejects it with the spec's TypeError)", operation, problem)
    return problem if strict_view_types else None


def copy_of_bytes(buffer, desc: OperandDescriptor, operation: str) -> np.ndarray:
    """"get a copy of the bytes held by the buffer source", as an array of the descriptor's
    type; when it cannot be allocated, `operation` fails with UnknownError (base.errors.out_of_memory)."""
    try:
        array = np.empty(desc.shape, dtype=desc.type.numpy)
    except MemoryError:
        raise out_of_memory(operation, desc.byte_length, f"the copy of the {desc} data") from None
    # The array itself: copy_to casts its memoryview to bytes (~0.3 µs on the host, where
    # numpy's reshape and view took ~0.45); a memoryview of no elements cannot be cast.
    buffer.copy_to(array if array.size else bytearray())
    return array


def write_bytes_into(buffer, array: np.ndarray) -> None:
    """"write" the array's bytes into the caller's buffer (§8.3.5 step 9)."""
    buffer.copy_from(memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8)))
