"""Words in Pyodide's memory that let the shim run writeTensor() and readTensor() without a
call into Python (issue 17 item 2: a recurrent model's run is 2 writes, a dispatch and 2
reads, and each crossing cost ~6-8 µs of a ~150 µs run).

What the shim may do without asking is decided here, in Python, and published as words the
shim reads (js_shim/webnn-polyfill.js, "Tensor memory"). A slot is 4 uint32 words:

    [serial, flags, address, byte length]

- a tensor's slot: flags READABLE / WRITABLE when the tensor is one and is not destroyed
  and has its [[data]], whose bytes are at `address` (`byte length` of them); 0 otherwise.
- a context's slot: flags READY when its timeline would run a step in the caller's call
  (Timeline.run_at_once): the context is not lost and nothing is queued or suspended. Only
  then may a write go into [[data]] in place (a suspended dispatch keeps the arrays it
  started with: MLContext._write_tensor replaces them), and a read copy [[data]] at once.

Every change of those facts is published before control goes back to JavaScript (MLTensor's
[[data]] and destroy(): TensorSlot.publish; Timeline.publish): Python and the page share one
thread, so the shim always reads them current. A slot is assigned at the shim's first fast call
for its tensor or context, and freed when that object dies; `serial` (never 0 for a live slot,
not given twice in 2**32 slots) lets a record the shim kept for a dead object fail its check
instead of reading the slot's next owner. The slots' arrays are never freed, so a word the shim
reads is always in Python's memory, whatever it holds.
"""
from __future__ import annotations

import itertools
import weakref

import numpy as np

from ..kernels import address_of

READABLE, WRITABLE = 1, 2      # a tensor slot's flags
READY = 1                      # a context slot's flag (written by Timeline.publish)

_SLOTS_PER_CHUNK = 256
_chunks: list[np.ndarray] = []      # (256, 4) uint32 each, kept for the runtime's lifetime
_free: list[np.ndarray] = []        # the rows of dead objects, for reuse
_serials = itertools.count(1)


def _take_slot(owner) -> np.ndarray:
    """A free slot's row (4 uint32 words), given a new serial; released when `owner` dies."""
    if not _free:
        chunk = np.zeros((_SLOTS_PER_CHUNK, 4), dtype=np.uint32)
        _chunks.append(chunk)
        _free.extend(chunk[i] for i in range(_SLOTS_PER_CHUNK - 1, -1, -1))
    row = _free.pop()
    row[:] = (next(_serials) & 0xFFFFFFFF) or next(_serials), 0, 0, 0
    weakref.finalize(owner, _release, row)
    return row


def _release(row: np.ndarray) -> None:
    row[:] = 0
    _free.append(row)


def _word_index(row: np.ndarray) -> int:
    """The row's first word as an index into the heap's Uint32Array view."""
    return row.__array_interface__["data"][0] >> 2


class TensorSlot:
    """An MLTensor's slot (its `_slot`), written from the tensor's state by publish(), which
    the tensor calls on every change of [[data]] and when it is destroyed."""

    __slots__ = ("row",)

    def __init__(self, tensor) -> None:
        self.row = _take_slot(tensor)
        self.publish(tensor)

    def publish(self, tensor) -> None:
        row, array = self.row, tensor._array
        if tensor._is_destroyed or array is None or not array.flags.c_contiguous \
                or array.nbytes != tensor._byte_length:
            row[1] = 0
            return
        row[2] = address_of(array)
        row[3] = array.nbytes
        row[1] = (READABLE if tensor._readable else 0) | (WRITABLE if tensor._writable else 0)


# The timelines' turn words, [asked, tasks] (runtime/timeline.py, set_turn_words): Python sets
# `asked` when a timeline starts a turn; the shim clears it when the call returns and counts its
# own later task in `tasks` ("The end of the caller's turn" in js_shim/webnn-polyfill.js).
_turn_array = np.zeros(2, dtype=np.uint32)      # kept for the runtime's lifetime, like the slots
TURN_WORDS = memoryview(_turn_array)            # indexed as Python ints (a numpy scalar is slower)


def turn_word_index() -> int:
    """The turn words' first word as an index into the heap's Uint32Array view."""
    return _word_index(_turn_array)


def record_of(context, tensor):
    """What the shim keeps for `tensor` used through `context` (bridge.tensor_memory):
    (context slot's word, its serial, tensor slot's word, its serial, the name of the typed
    array type whose bytes the tensor takes as they are besides Uint8Array), or None when
    the shim must always ask Python: a tensor of another context, a constant or empty one."""
    if tensor._context is not context or tensor._is_constant or tensor._byte_length == 0:
        return None
    timeline = context._timeline
    if timeline.mirror is None:
        # Owned by the timeline, the slot's only writer: a task of it may still run after
        # the context has gone.
        timeline.mirror = _take_slot(timeline)
        timeline.publish()
    if tensor._slot is None:
        tensor._slot = TensorSlot(tensor)
    context_row, tensor_row = timeline.mirror, tensor._slot.row
    return (_word_index(context_row), int(context_row[0]), _word_index(tensor_row), int(tensor_row[0]),
            tensor._descriptor.type.view_type)
