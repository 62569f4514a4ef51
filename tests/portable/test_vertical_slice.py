"""The first end-to-end slice: context → builder → build → tensors → dispatch → read.

Portable: these async tests run on host CPython (pytest, see tests/conftest.py)
and inside Pyodide under Node.js (tests/test_pyodide.py). Expected values are
computed by hand from the spec's example (§8.3.1.1).
"""
import asyncio

import numpy as np

import webnn_py
from webnn_py import InvalidStateError, MLGraphBuilder

from .expect import raises, rejects

F32_2x2 = {"dataType": "float32", "shape": [2, 2]}


async def test_spec_example_computes_c():
    context = await webnn_py.ml.createContext()
    builder = MLGraphBuilder(context)
    constant = builder.constant(F32_2x2, np.full(4, 0.2, dtype=np.float32))
    a = builder.input("A", F32_2x2)
    b = builder.input("B", F32_2x2)
    c = builder.add(builder.mul(a, constant), b)
    graph = await builder.build({"C": c})
    ta, tb, tc = await asyncio.gather(
        context.createTensor({**F32_2x2, "writable": True}),
        context.createTensor({**F32_2x2, "writable": True}),
        context.createTensor({**F32_2x2, "readable": True}),
    )
    context.writeTensor(ta, np.array([1, 2, 3, 4], dtype=np.float32))
    context.writeTensor(tb, np.full(4, 0.8, dtype=np.float32))
    context.dispatch(graph, {"A": ta, "B": tb}, {"C": tc})
    result = np.frombuffer(await context.readTensor(tc), dtype=np.float32)
    # 0.2f * [1, 2, 3, 4] + 0.8f, each step rounded to float32 (hand-computed)
    expected = [np.float32(np.float32(0.2) * np.float32(x)) + np.float32(0.8) for x in (1, 2, 3, 4)]
    assert result.tolist() == [float(np.float32(e)) for e in expected], result
    assert np.allclose(result, [1.0, 1.2, 1.4, 1.6], atol=1e-6)


async def test_operand_attributes_and_broadcast_shape():
    context = await webnn_py.ml.createContext()
    builder = MLGraphBuilder(context)
    a = builder.input("a", {"dataType": "int32", "shape": [3, 1]})
    b = builder.input("b", {"dataType": "int32", "shape": [4]})
    c = builder.sub(a, b)
    assert (c.dataType, c.shape) == ("int32", [3, 4])


async def test_reads_see_dispatches_in_timeline_order():
    context = await webnn_py.ml.createContext()
    builder = MLGraphBuilder(context)
    x = builder.input("x", {"dataType": "float32", "shape": [3]})
    graph = await builder.build({"y": builder.mul(x, x)})
    tx = await context.createTensor({"dataType": "float32", "shape": [3], "writable": True})
    ty = await context.createTensor({"dataType": "float32", "shape": [3], "readable": True})
    context.writeTensor(tx, np.array([1, 2, 3], dtype=np.float32))
    context.dispatch(graph, {"x": tx}, {"y": ty})
    first = context.readTensor(ty)          # queued before the second write and dispatch
    context.writeTensor(tx, np.array([4, 5, 6], dtype=np.float32))
    context.dispatch(graph, {"x": tx}, {"y": ty})
    second = context.readTensor(ty)
    assert np.frombuffer(await first, np.float32).tolist() == [1, 4, 9]
    assert np.frombuffer(await second, np.float32).tolist() == [16, 25, 36]


async def test_read_into_callers_buffer_and_integer_wraparound():
    context = await webnn_py.ml.createContext()
    builder = MLGraphBuilder(context)
    x = builder.input("x", {"dataType": "int8", "shape": [4]})
    graph = await builder.build({"y": builder.add(x, x)})
    tx = await context.createTensor({"dataType": "int8", "shape": [4], "writable": True})
    ty = await context.createTensor({"dataType": "int8", "shape": [4], "readable": True})
    context.writeTensor(tx, np.array([1, -2, 100, -100], dtype=np.int8))
    context.dispatch(graph, {"x": tx}, {"y": ty})
    out = bytearray(4)
    assert await context.readTensor(ty, out) is None
    # int8 addition wraps around: 200 → -56, -200 → 56
    assert np.frombuffer(out, np.int8).tolist() == [2, -4, -56, 56]


async def test_builder_validation_errors():
    context = await webnn_py.ml.createContext()
    builder = MLGraphBuilder(context)
    a = builder.input("a", {"dataType": "float32", "shape": [2]})
    b = builder.input("b", {"dataType": "int32", "shape": [2]})
    with raises(TypeError, match=r"^\[my-add\] add: .*data type"):
        builder.add(a, b, {"label": "my-add"})
    c = builder.input("c", {"dataType": "float32", "shape": [3]})
    with raises(TypeError, match="not broadcastable"):
        builder.add(a, c)
    with raises(TypeError, match="already exists"):
        builder.input("a", {"dataType": "float32", "shape": [2]})
    with raises(TypeError, match="empty"):
        builder.input("", {"dataType": "float32", "shape": [2]})
    with raises(TypeError, match="not a valid dimension"):
        builder.input("z", {"dataType": "float32", "shape": [0]})
    await rejects(builder.build({"a": a}), TypeError, "identity")
    other = MLGraphBuilder(context)
    with raises(TypeError, match="another MLGraphBuilder"):
        other.add(a, a)
    await builder.build({"y": builder.add(a, a)})
    with raises(InvalidStateError, match="already built"):
        builder.add(a, a)
    await rejects(builder.build({"y2": a}), InvalidStateError)
    await rejects(builder.build({"y2": builder}), TypeError)   # WebIDL conversion fails first


async def test_dispatch_validation_errors():
    context = await webnn_py.ml.createContext()
    builder = MLGraphBuilder(context)
    x = builder.input("x", F32_2x2)
    graph = await builder.build({"y": builder.add(x, x)})
    tx = await context.createTensor({**F32_2x2, "writable": True})
    ty = await context.createTensor({**F32_2x2, "readable": True})
    wrong = await context.createTensor({"dataType": "float32", "shape": [4], "readable": True})
    with raises(TypeError, match="more than once"):
        context.dispatch(graph, {"x": tx}, {"y": tx})
    with raises(TypeError, match="expects"):
        context.dispatch(graph, {"x": tx}, {"y": wrong})
    with raises(TypeError, match="no input named"):
        context.dispatch(graph, {"q": tx}, {"y": ty})
    with raises(TypeError, match="not writable"):
        context.writeTensor(ty, np.zeros(4, np.float32))
    with raises(TypeError, match="bytes"):
        context.writeTensor(tx, np.zeros(3, np.float32))
    await rejects(context.readTensor(tx), TypeError, "not readable")
    graph.destroy()
    with raises(InvalidStateError, match="destroyed"):
        context.dispatch(graph, {"x": tx}, {"y": ty})
    other = await webnn_py.ml.createContext()
    with raises(TypeError, match="another context"):
        other.writeTensor(tx, np.zeros(4, np.float32))


async def test_destroyed_context_rejects_pending_reads():
    context = await webnn_py.ml.createContext()
    t = await context.createTensor({**F32_2x2, "readable": True})
    pending = context.readTensor(t)
    context.destroy()
    await rejects(pending, InvalidStateError)
    assert (await context.lost)["message"]
    await rejects(context.createTensor(F32_2x2), InvalidStateError, "lost")
    with raises(InvalidStateError, match="lost"):
        MLGraphBuilder(context)
