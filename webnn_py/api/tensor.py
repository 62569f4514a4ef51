"""The MLTensor interface (§8.8)."""
from __future__ import annotations

import numpy as np

from ..base.descriptor import OperandDescriptor
from ..base.errors import InvalidStateError
from .idl import operation, register_interface


class MLTensor:
    # The browser shim's slot for this tensor (browser/tensor_memory.py), once it has asked for
    # one: every change of [[data]] or of destroyed-ness is published to it.
    _slot = None

    def __init__(self, context, descriptor: OperandDescriptor, readable: bool, writable: bool, constant: bool):
        # "create an MLTensor" (§8.8.1) / "create a constant MLTensor" (§8.8.3)
        self._context = context
        self._descriptor = descriptor
        self._readable = readable
        self._writable = writable
        self._is_constant = constant
        self._is_destroyed = False
        self._pending_promises: set = set()
        self._array: np.ndarray | None = None   # [[data]]: created on the timeline (_data)
        # Facts of the descriptor the per-run calls read (MLContext._write_tensor): its byte
        # length and the view types "validate buffer with descriptor" (§8.3)
        # accepts for it without a second look (others go through it in full).
        data_type = descriptor.type
        self._byte_length = descriptor.byte_length
        self._plain_views = frozenset(("Uint8Array", data_type.view_type))

    @property
    def _data(self) -> np.ndarray | None:
        """[[data]]: None before it is created and after the tensor is destroyed."""
        return self._array

    @_data.setter
    def _data(self, array: np.ndarray | None) -> None:
        self._array = array
        if self._slot is not None:
            self._slot.publish(self)

    @property
    def dataType(self) -> str:
        return self._descriptor.data_type

    @property
    def shape(self) -> list[int]:
        return list(self._descriptor.shape)

    @property
    def readable(self) -> bool:
        return self._readable

    @property
    def writable(self) -> bool:
        return self._writable

    @property
    def constant(self) -> bool:
        return self._is_constant

    @operation("MLTensor")
    def destroy(self) -> None:
        """§8.8.2 destroy()."""
        self._is_destroyed = True
        if self._slot is not None:
            self._slot.publish(self)
        for future in list(self._pending_promises):
            self._pending_promises.discard(future)
            if not future.done():
                future.set_exception(InvalidStateError("readTensor: the tensor was destroyed"))

        def free():
            self._data = None
        self._context._timeline.enqueue(free, free)

    def _allocate(self) -> None:
        self._data = np.zeros(self._descriptor.shape, dtype=self._descriptor.type.numpy)

    def __repr__(self) -> str:
        return f"<MLTensor {self._descriptor}{' destroyed' if self._is_destroyed else ''}>"


register_interface("MLTensor", MLTensor)
