"""MLGraphBuilder calls recorded on the host, for page script to replay through navigator.ml.

bench/zoo.py's "webnn-py (builder)" side runs the zoo's ONNX graphs on navigator.ml with no
ONNX Runtime in between. The translation from ONNX to builder calls is bench/onnx_webnn.py's
(the host side's own), run once on the host against a RecordingBuilder: it forwards every
call to a real webnn_py MLGraphBuilder (which validates it and knows every result's shape,
which the translation reads) and records it as JSON-able data, the constants' bytes in one
binary blob. bench/zoo.mjs replays the recording generically, `builder[op](...args)` with
the references resolved: no per-operator code on either side.

Recording format ({"calls": [...], "inputs": {...}, "outputs": {...}} + blob):
  call     {"op": builder method, "args": [encoded argument, ...], "result": id or [id, ...]}
           (an operator returning a sequence of operands, e.g. lstm or split, gets a list)
  encoded  an operand {"$operand": id}; a numpy array {"$bytes": [offset, length], "type":
           its typed array's name} (offset 8-byte aligned, length in elements); a non-finite
           number {"$number": "Infinity" | "-Infinity" | "NaN"} (JSON has none); lists and
           dictionaries element by element; anything else as it is
  inputs   {name: MLOperandDescriptor} of the builder.input() calls, in call order
  outputs  {graph output name: id}
"""
from __future__ import annotations

import json
import math

import numpy as np

TYPED_ARRAYS = {np.dtype(np.float32): "Float32Array", np.dtype(np.int32): "Int32Array",
                np.dtype(np.uint32): "Uint32Array", np.dtype(np.int8): "Int8Array",
                np.dtype(np.uint8): "Uint8Array", np.dtype(np.int64): "BigInt64Array",
                np.dtype(np.uint64): "BigUint64Array", np.dtype(np.float16): "Float16Array"}


class RecordedOperand:
    """A recorded call's result: its id in the recording; reads (shape, dataType) go to the
    real builder's MLOperand."""

    __slots__ = ("id", "operand")

    def __init__(self, id_: int, operand):
        self.id, self.operand = id_, operand

    def __getattr__(self, name):
        return getattr(self.operand, name)


class RecordingBuilder:
    """An MLGraphBuilder look-alike: `builder.<op>(...)` calls `real.<op>(...)` and records it."""

    def __init__(self, real):
        self._real = real
        self.calls: list[dict] = []
        self.inputs: dict[str, dict] = {}
        self._blob = bytearray()
        self._next_id = 0

    def __getattr__(self, op: str):
        method = getattr(self._real, op)

        def record(*args):
            if op == "input":
                self.inputs[args[0]] = {"dataType": args[1]["dataType"], "shape": list(args[1]["shape"])}
            encoded = [self._encode(a) for a in args]     # before the call: its arrays as they are now
            result = method(*[_real_value(a) for a in args])
            if isinstance(result, (list, tuple)):
                wrapped = [self._wrap(r) for r in result]
                self.calls.append({"op": op, "args": encoded, "result": [w.id for w in wrapped]})
                return wrapped
            wrapped = self._wrap(result)
            self.calls.append({"op": op, "args": encoded, "result": wrapped.id})
            return wrapped
        return record

    def _wrap(self, operand) -> RecordedOperand:
        self._next_id += 1
        return RecordedOperand(self._next_id - 1, operand)

    def _encode(self, value):
        if isinstance(value, RecordedOperand):
            return {"$operand": value.id}
        if isinstance(value, np.ndarray):
            array = np.ascontiguousarray(value)
            if array.dtype not in TYPED_ARRAYS:
                raise TypeError(f"no typed array for a {array.dtype} constant")
            self._blob += bytes(-len(self._blob) % 8)
            offset = len(self._blob)
            self._blob += array.tobytes()
            return {"$bytes": [offset, int(array.size)], "type": TYPED_ARRAYS[array.dtype]}
        if isinstance(value, float) and not math.isfinite(value):
            return {"$number": "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")}
        if isinstance(value, (list, tuple)):
            return [self._encode(v) for v in value]
        if isinstance(value, dict):
            return {k: self._encode(v) for k, v in value.items()}
        if isinstance(value, np.generic):
            return self._encode(value.item())
        return value

    def recording(self, outputs: dict) -> tuple[str, bytes]:
        """(the recording's JSON text, its blob) for the graph outputs {name: RecordedOperand}."""
        description = {"calls": self.calls, "inputs": self.inputs,
                       "outputs": {name: operand.id for name, operand in outputs.items()}}
        return json.dumps(description, allow_nan=False), bytes(self._blob)


def _real_value(value):
    """An argument as the real builder takes it: recorded operands unwrapped, at any depth."""
    if isinstance(value, RecordedOperand):
        return value.operand
    if isinstance(value, (list, tuple)):
        return [_real_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _real_value(v) for k, v in value.items()}
    return value


def record(emit, context) -> tuple[str, bytes]:
    """`emit(builder)` (returning {output name: operand}) on a RecordingBuilder over a real
    MLGraphBuilder of `context`: the recording's JSON text and blob."""
    import webnn_py

    builder = RecordingBuilder(webnn_py.MLGraphBuilder(context))
    return builder.recording(emit(builder))
