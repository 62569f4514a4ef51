"""The words webnn_py/browser/tensor_memory.py publishes for the shim, read back the way the shim
reads them -- through Emscripten's HEAPU32 / HEAPU8 views of Pyodide's memory, from JS --
after each change of state: runs only inside Pyodide (tests/test_pyodide.py runs it through
tests/pyodide/run_portable.mjs; the file name keeps host pytest from collecting it).
Expected values are hand-computed; the addresses are compared with numpy's own."""
from __future__ import annotations

import asyncio
import gc

import numpy as np
import pyodide_js
from pyodide.ffi import to_js

import webnn_py
from webnn_py.browser.tensor_memory import READABLE, READY, WRITABLE, record_of

F32 = {"dataType": "float32", "shape": [4]}
HEAP = pyodide_js._module


def _word(index: int) -> int:
    return HEAP.HEAPU32[index]


def _bytes_at(address: int, n: int) -> bytes:
    return bytes(HEAP.HEAPU8.subarray(address, address + n).to_py())


async def _context(slice_seconds=60.0):
    context = await webnn_py.ml.createContext()
    context._timeline.slice_seconds = slice_seconds   # as the browser bridge sets it
    return context


async def test_a_tensor_slot_follows_its_data_and_its_destruction():
    context = await _context()
    tensor = await context.createTensor({**F32, "writable": True, "readable": True})
    context.writeTensor(tensor, np.array([1, 2, 3, 4], np.float32))
    context_word, context_serial, word, serial, view_type = record_of(context, tensor)
    assert view_type == "Float32Array" and serial != 0 and context_serial != 0
    assert (_word(word), _word(word + 1), _word(word + 3)) == (serial, READABLE | WRITABLE, 16)
    assert (_word(context_word), _word(context_word + 1)) == (context_serial, READY)
    address = _word(word + 2)
    assert address == tensor._data.__array_interface__["data"][0]
    assert _bytes_at(address, 16) == np.array([1, 2, 3, 4], np.float32).tobytes()
    # Python's own write replaces [[data]]: the words name the new array.
    context.writeTensor(tensor, np.array([5, 6, 7, 8], np.float32))
    assert _bytes_at(_word(word + 2), 16) == np.array([5, 6, 7, 8], np.float32).tobytes()
    # Bytes written at the address (as the shim writes them) are the tensor's [[data]].
    HEAP.HEAPU8.set(to_js(np.array([-1, 0.5, 9, 10], np.float32).tobytes()), _word(word + 2))
    assert np.frombuffer(await context.readTensor(tensor), np.float32).tolist() == [-1, 0.5, 9, 10]
    tensor.destroy()
    assert (_word(word), _word(word + 1)) == (serial, 0)
    context.destroy()


async def test_usage_flags_and_the_tensors_the_shim_never_handles():
    context, other = await _context(), await _context()
    written = await context.createTensor({**F32, "writable": True})
    read = await context.createTensor({**F32, "readable": True})
    neither = await context.createTensor(F32)
    constant = await context.createConstantTensor(F32, np.zeros(4, np.float32))
    assert _word(record_of(context, written)[2] + 1) == WRITABLE
    assert _word(record_of(context, read)[2] + 1) == READABLE
    assert _word(record_of(context, neither)[2] + 1) == 0
    assert record_of(other, written) is None           # another context's
    assert record_of(context, constant) is None
    context.destroy()
    other.destroy()


async def test_the_context_word_is_ready_only_while_a_step_would_run_in_the_call():
    context = await _context(slice_seconds=0.0)          # one step per task: a dispatch suspends
    builder = webnn_py.MLGraphBuilder(context)
    x = builder.input("x", F32)
    y = x
    for _ in range(3):
        y = builder.max(builder.add(y, builder.constant("float32", 1)), y)   # 3 steps, no fusion
    graph = await builder.build({"y": y})
    tx = await context.createTensor({**F32, "writable": True})
    ty = await context.createTensor({**F32, "readable": True})
    context_word = record_of(context, tx)[0]
    for _ in range(3):
        await asyncio.sleep(0)
    assert _word(context_word + 1) == READY
    context.dispatch(graph, {"x": tx}, {"y": ty})
    assert _word(context_word + 1) == 0                  # suspended after its first step
    assert np.frombuffer(await context.readTensor(ty), np.float32).tolist() == [3] * 4
    for _ in range(3):
        await asyncio.sleep(0)
    assert _word(context_word + 1) == READY
    context.destroy()
    assert _word(context_word + 1) == 0                  # lost
    unsliced = await _context(slice_seconds=None)        # each step in a task of its own
    tensor = await unsliced.createTensor({**F32, "writable": True})
    assert _word(record_of(unsliced, tensor)[0] + 1) == 0
    unsliced.destroy()


async def test_a_slot_outlives_no_object_and_a_reused_one_has_a_new_serial():
    context = await _context()
    tensor = await context.createTensor({**F32, "writable": True})
    _, _, word, serial, _ = record_of(context, tensor)
    del tensor
    for _ in range(3):
        await asyncio.sleep(0)       # the event loop's references to createTensor's future go
    gc.collect()
    assert (_word(word), _word(word + 1)) == (0, 0)      # released with its tensor
    fresh = await context.createTensor({**F32, "writable": True})
    _, _, fresh_word, fresh_serial, _ = record_of(context, fresh)
    assert fresh_word == word and fresh_serial != serial  # the same slot, told apart
    context.destroy()
