"""readTensor(tensor, outputData) and writeTensor() with a view of another element type
but the right byte length (issue 19, item 15; webnn_py.api.buffers.strict_view_types).

Spec-exact (the host's default): §8.3.5 step 6 / §8.3.6 step 4 reject it with a TypeError.
Lenient (the browser's default, as Chromium does): its bytes are used as they are. Both
log the mismatch once, naming the call. constant() stays strict either way.
"""
import contextlib
import logging

import numpy as np

import webnn_py
from webnn_py.api import buffers

from .expect import raises, rejects

F32 = {"dataType": "float32", "shape": [2]}
VALUES = np.array([1.5, -2], np.float32)


@contextlib.contextmanager
def _view_types(strict):
    seen = []

    class Capture(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    logger = logging.getLogger("webnn_py")
    handler = Capture(logging.WARNING)
    logger.addHandler(handler)
    saved = buffers.strict_view_types
    buffers.strict_view_types = strict
    buffers._reported.clear()
    try:
        yield seen
    finally:
        buffers.strict_view_types = saved
        logger.removeHandler(handler)


async def _tensor():
    context = await webnn_py.ml.createContext()
    tensor = await context.createTensor({**F32, "readable": True, "writable": True})
    context.writeTensor(tensor, VALUES)
    return context, tensor


async def test_lenient_views_are_read_and_written_as_bytes_and_reported_once():
    context, tensor = await _tensor()
    with _view_types(strict=False) as seen:
        out = np.zeros(8, np.int8)                      # an Int8Array over 8 bytes
        await context.readTensor(tensor, out)
        assert out.view(np.float32).tolist() == [1.5, -2]
        await context.readTensor(tensor, np.zeros(8, np.int8))
        context.writeTensor(tensor, np.array([3.25, 4], np.float32).view(np.int16))   # an Int16Array
        assert np.frombuffer(await context.readTensor(tensor), np.float32).tolist() == [3.25, 4]
        with raises(TypeError, "bytes"):               # the byte length is still checked
            context.writeTensor(tensor, np.zeros(3, np.int16))
        with raises(TypeError, "cannot hold"):         # constant() is not lenient
            webnn_py.MLGraphBuilder(context).constant(F32, np.zeros(8, np.int8))
    assert len(seen) == 2, seen                         # once per kind of mismatch
    assert seen[0].startswith("readTensor(tensor, outputData): an Int8Array cannot hold float32 data")
    assert seen[1].startswith("writeTensor(tensor, inputData): an Int16Array cannot hold float32 data")
    assert "strictBufferTypes" in seen[0]


async def test_strict_views_are_the_spec_type_error_and_reported():
    context, tensor = await _tensor()
    with _view_types(strict=True) as seen:
        await rejects(context.readTensor(tensor, np.zeros(8, np.int8)), TypeError, "Int8Array cannot hold float32")
        with raises(TypeError, "Int16Array cannot hold float32"):
            context.writeTensor(tensor, np.zeros(4, np.int16))
        out = np.zeros(8, np.uint8)                     # Uint8Array: always fine
        await context.readTensor(tensor, out)
        assert out.view(np.float32).tolist() == [1.5, -2]
    assert len(seen) == 2 and all("rejected with a TypeError" in line for line in seen), seen
