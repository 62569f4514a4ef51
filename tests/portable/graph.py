"""Run a small graph end to end through the public API and return numpy results.

Portable (no pytest): operator tests on the host and checks inside Pyodide use it.

    out = await compute(lambda b, x: b.relu(x["x"]), {"x": np.array([-1, 2], np.float32)})
"""
from __future__ import annotations

from typing import Callable

import numpy as np

import webnn_py

DATA_TYPE_OF = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16", np.dtype(np.int32): "int32",
                np.dtype(np.uint32): "uint32", np.dtype(np.int64): "int64", np.dtype(np.uint64): "uint64",
                np.dtype(np.int8): "int8", np.dtype(np.uint8): "uint8"}


def descriptor(array: np.ndarray) -> dict:
    return {"dataType": DATA_TYPE_OF[array.dtype], "shape": list(array.shape)}


def operands_of(builder, inputs: dict[str, np.ndarray], constants: dict[str, np.ndarray] | None = None) -> dict:
    """MLOperands by name: graph inputs described like `inputs`, constant operands holding `constants`."""
    operands = {name: builder.input(name, descriptor(a)) for name, a in inputs.items()}
    for name, a in (constants or {}).items():
        operands[name] = builder.constant(descriptor(a), np.ascontiguousarray(a))
    return operands


async def compute(build: Callable, inputs: dict[str, np.ndarray], constants: dict[str, np.ndarray] | None = None):
    """`build(builder, operands)` gets MLOperands for `inputs` (graph inputs) and
    `constants` (constant operands) by name, and returns an MLOperand, a list of
    them, or a dict of them. Returns numpy arrays shaped the same way."""
    context = await webnn_py.ml.createContext()
    builder = webnn_py.MLGraphBuilder(context)
    result = build(builder, operands_of(builder, inputs, constants))
    if isinstance(result, dict):
        named = result
    elif isinstance(result, (list, tuple)):
        named = {f"out{i}": op for i, op in enumerate(result)}
    else:
        named = {"out": result}
    graph = await builder.build(named)
    in_tensors = {}
    for name, a in inputs.items():
        tensor = await context.createTensor({**descriptor(a), "writable": True})
        context.writeTensor(tensor, np.ascontiguousarray(a))
        in_tensors[name] = tensor
    out_tensors = {name: await context.createTensor({"dataType": op.dataType, "shape": op.shape, "readable": True})
                   for name, op in named.items()}
    context.dispatch(graph, in_tensors, out_tensors)
    arrays = {}
    for name, op in named.items():
        data = await context.readTensor(out_tensors[name])
        dtype = next(d for d, n in DATA_TYPE_OF.items() if n == op.dataType)
        arrays[name] = np.frombuffer(data, dtype=dtype).reshape(op.shape)
    context.destroy()
    if isinstance(result, dict):
        return arrays
    if isinstance(result, (list, tuple)):
        return [arrays[f"out{i}"] for i in range(len(result))]
    return arrays["out"]
