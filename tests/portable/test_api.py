"""The interface algorithms of §8 step by step: every error path they list, and
the lifetime rules (destroy, lost, timeline order). Portable: also runs in Pyodide."""
import asyncio

import numpy as np

import webnn_py
from webnn_py import InvalidStateError, MLGraphBuilder, NotSupportedError

from .expect import raises, rejects

F32 = {"dataType": "float32", "shape": [2, 2]}


async def _context_graph():
    context = await webnn_py.ml.createContext()
    builder = MLGraphBuilder(context)
    x = builder.input("x", F32)
    graph = await builder.build({"y": builder.add(x, x)})
    return context, graph


# -- ML / createContext (§8.2.2) ---------------------------------------------------------------

async def test_create_context_options_and_attributes():
    context = await webnn_py.ml.createContext({"powerPreference": "low-power", "accelerated": True,
                                               "deviceType": "gpu", "numThreads": 4})   # unknown members ignored
    assert context.accelerated is False          # numpy on the CPU, whatever was asked
    assert not context.lost.done()
    await rejects(webnn_py.ml.createContext({"powerPreference": "fastest"}), TypeError, "MLPowerPreference")


async def test_create_context_from_gpu_device_is_not_supported():
    await rejects(webnn_py.ml.createContext(5), TypeError, "overload")   # neither a dictionary nor a GPUDevice
    # The loader draft's options are accepted beside WebNN's (idl/model_loader.idl).
    context = await webnn_py.ml.createContext({"devicePreference": "cpu", "numThreads": 2})
    assert context.opSupportLimits()["input"]["rankRange"]["max"] >= 4
    assert NotSupportedError.name == "NotSupportedError"


# -- createTensor / createConstantTensor / writeTensor / readTensor (§8.3.2-8.3.6) --------------

async def test_tensor_attributes_and_zero_initialised_contents():
    context = await webnn_py.ml.createContext()
    t = await context.createTensor({"dataType": "int32", "shape": [3], "readable": True})
    assert (t.dataType, t.shape, t.readable, t.writable, t.constant) == ("int32", [3], True, False, False)
    assert bytes(await context.readTensor(t)) == bytes(12)


async def test_create_tensor_rejects_invalid_descriptors():
    context = await webnn_py.ml.createContext()
    await rejects(context.createTensor({"dataType": "float32", "shape": [0]}), TypeError, "dimension")
    await rejects(context.createTensor({"dataType": "float32", "shape": [-1]}), TypeError)
    await rejects(context.createTensor({"dataType": "float32"}), TypeError, "shape")
    await rejects(context.createTensor({"dataType": "float32", "shape": [2**31, 2]}), TypeError)
    await rejects(context.createTensor({"dataType": "float32", "shape": [65536, 65536]}), TypeError)


async def test_constant_tensor_is_copied_at_call_time():
    context = await webnn_py.ml.createContext()
    data = np.array([1, 2, 3, 4], np.float32)
    pending = context.createConstantTensor(F32, data)
    data[:] = 0                                       # the bytes were copied synchronously (step 6)
    constant = await pending
    assert (constant.constant, constant.readable, constant.writable) == (True, False, False)
    builder = MLGraphBuilder(context)
    x = builder.input("x", F32)
    graph = await builder.build({"y": builder.mul(x, builder.constant(constant))})
    constant.destroy()                                # legal after build (§8.3.1 note)
    tx = await context.createTensor({**F32, "writable": True})
    ty = await context.createTensor({**F32, "readable": True})
    context.writeTensor(tx, np.full(4, 2, np.float32))
    context.dispatch(graph, {"x": tx}, {"y": ty})
    assert np.frombuffer(await context.readTensor(ty), np.float32).tolist() == [2, 4, 6, 8]


async def test_constant_tensor_validation():
    context = await webnn_py.ml.createContext()
    await rejects(context.createConstantTensor(F32, np.zeros(3, np.float32)), TypeError, "bytes")
    await rejects(context.createConstantTensor(F32, np.zeros(4, np.int32)), TypeError, "Int32Array")
    # A Uint8Array view of the right length is always accepted (§8.3 "validate buffer with descriptor").
    await context.createConstantTensor(F32, np.zeros(16, np.uint8))
    other = await webnn_py.ml.createContext()
    foreign = await other.createConstantTensor(F32, np.zeros(4, np.float32))
    builder = MLGraphBuilder(context)
    with raises(TypeError, match="another context"):
        builder.constant(foreign)
    plain = await context.createTensor(F32)
    with raises(TypeError, match="createConstantTensor"):
        builder.constant(plain)
    destroyed = await context.createConstantTensor(F32, np.zeros(4, np.float32))
    destroyed.destroy()
    with raises(TypeError, match="destroyed"):
        builder.constant(destroyed)


async def test_build_rejects_a_destroyed_constant_tensor():
    context = await webnn_py.ml.createContext()
    constant = await context.createConstantTensor(F32, np.zeros(4, np.float32))
    builder = MLGraphBuilder(context)
    y = builder.add(builder.input("x", F32), builder.constant(constant))
    constant.destroy()
    await rejects(builder.build({"y": y}), TypeError, "destroyed")


async def test_write_and_read_validation():
    context, graph = await _context_graph()
    t = await context.createTensor({**F32, "writable": True})
    with raises(TypeError, match="Float64Array|cannot hold"):
        context.writeTensor(t, np.zeros(2, np.float64))          # 16 bytes, but the wrong view type
    context.writeTensor(t, bytearray(16))                         # an ArrayBuffer-like of the right size
    with raises(TypeError):
        context.writeTensor(t, [0.0, 0.0, 0.0, 0.0])              # not a buffer source
    readable = await context.createTensor({**F32, "readable": True})
    await rejects(context.readTensor(readable, bytearray(8)), TypeError, "bytes")
    t.destroy()
    t.destroy()                                                   # idempotent
    with raises(TypeError, match="destroyed"):
        context.writeTensor(t, bytearray(16))
    await rejects(context.readTensor(t), TypeError)


async def test_destroying_a_tensor_rejects_its_pending_reads():
    context = await webnn_py.ml.createContext()
    t = await context.createTensor({**F32, "readable": True})
    pending = context.readTensor(t)
    t.destroy()
    await rejects(pending, InvalidStateError)


async def test_read_returns_a_snapshot_in_timeline_order():
    context = await webnn_py.ml.createContext()
    t = await context.createTensor({"dataType": "uint8", "shape": [2], "readable": True, "writable": True})
    context.writeTensor(t, bytes([1, 2]))
    first = context.readTensor(t)
    context.writeTensor(t, bytes([3, 4]))
    second = context.readTensor(t)
    assert bytes(await first) == bytes([1, 2])
    assert bytes(await second) == bytes([3, 4])


# -- dispatch (§8.3.1) --------------------------------------------------------------------------

async def test_dispatch_validation_steps():
    context, graph = await _context_graph()
    tx = await context.createTensor({**F32, "writable": True})
    ty = await context.createTensor({**F32, "readable": True})
    other_context, other_graph = await _context_graph()
    with raises(TypeError, match="another context"):
        context.dispatch(other_graph, {"x": tx}, {"y": ty})                       # step 1
    foreign = await other_context.createTensor(F32)
    with raises(TypeError, match="another context"):
        context.dispatch(graph, {"x": foreign}, {"y": ty})                        # step 5.1
    with raises(TypeError, match="more than once"):
        context.dispatch(graph, {"x": tx}, {"y": tx})                             # step 4
    spare = await context.createTensor(F32)
    with raises(TypeError, match="has 2 tensors"):
        context.dispatch(graph, {"x": tx, "z": spare}, {"y": ty})                 # step 6: sizes
    with raises(TypeError, match="outputs has 0"):
        context.dispatch(graph, {"x": tx}, {})                                    # step 7
    with raises(TypeError, match="no output named"):
        context.dispatch(graph, {"x": tx}, {"z": ty})
    wrong_type = await context.createTensor({"dataType": "float16", "shape": [2, 2]})
    with raises(TypeError, match="expects"):
        context.dispatch(graph, {"x": wrong_type}, {"y": ty})
    constant = await context.createConstantTensor(F32, np.zeros(4, np.float32))
    with raises(TypeError, match="constant"):
        context.dispatch(graph, {"x": constant}, {"y": ty})
    dead = await context.createTensor(F32)
    dead.destroy()
    with raises(TypeError, match="destroyed"):
        context.dispatch(graph, {"x": dead}, {"y": ty})                           # step 5.2
    graph.destroy()
    with raises(InvalidStateError):
        context.dispatch(graph, {"x": tx}, {"y": ty})                             # step 2


async def test_graph_can_be_dispatched_repeatedly_with_different_tensors():
    context, graph = await _context_graph()
    results = []
    for value in (1, 2, 3):
        tx = await context.createTensor({**F32, "writable": True})
        ty = await context.createTensor({**F32, "readable": True})
        context.writeTensor(tx, np.full(4, value, np.float32))
        context.dispatch(graph, {"x": tx}, {"y": ty})
        results.append(context.readTensor(ty))
    values = [np.frombuffer(r, np.float32)[0] for r in await asyncio.gather(*results)]
    assert values == [2, 4, 6]


# -- MLGraphBuilder (§8.9.1-8.9.4) ---------------------------------------------------------------

async def test_builder_input_and_constant_steps():
    context = await webnn_py.ml.createContext()
    builder = MLGraphBuilder(context)
    with raises(TypeError, match="shape"):
        builder.input("x", {"dataType": "float32"})
    with raises(TypeError, match="MLOperandDataType"):
        builder.input("x", {"dataType": "float64", "shape": [1]})
    scalar = builder.constant("int8", 300)            # cast with clamping (§9.2): 127
    assert (scalar.dataType, scalar.shape) == ("int8", [])
    y = builder.add(builder.input("x", {"dataType": "int8", "shape": []}), scalar)
    graph = await builder.build({"y": y})
    tx = await context.createTensor({"dataType": "int8", "shape": [], "writable": True})
    ty = await context.createTensor({"dataType": "int8", "shape": [], "readable": True})
    context.writeTensor(tx, np.array([-100], np.int8))
    context.dispatch(graph, {"x": tx}, {"y": ty})
    assert np.frombuffer(await context.readTensor(ty), np.int8).tolist() == [27]


async def test_build_steps():
    context = await webnn_py.ml.createContext()
    builder = MLGraphBuilder(context)
    x = builder.input("x", F32)
    c = builder.constant(F32, np.zeros(4, np.float32))
    await rejects(builder.build({}), TypeError, "no outputs")                        # step 3
    await rejects(builder.build({"": builder.add(x, c)}), TypeError, "empty")         # step 4.1
    await rejects(builder.build({"c": c}), TypeError, "identity")                     # step 4.3
    other = MLGraphBuilder(context)
    await rejects(other.build({"y": builder.add(x, c)}), TypeError, "another")      # step 4.2
    # Only the inputs reachable from the outputs become graph inputs (steps 9 and 14).
    builder.input("unused", F32)
    graph = await builder.build({"y": builder.add(x, c)})
    assert sorted(graph._input_descriptors) == ["x"]
    await rejects(builder.build({"y": x}), InvalidStateError)                         # step 2


async def test_operator_outputs_beyond_the_tensor_limits_are_refused():
    # An operator may turn valid operands into an output no tensor can hold:
    # the builder method throws then, naming the operator and its label.
    context = await webnn_py.ml.createContext()
    limits = context.opSupportLimits()
    max_bytes = limits["maxTensorByteLength"]
    builder = MLGraphBuilder(context)
    # One byte per element in, eight out: 1/4 of the limit in becomes twice the limit out.
    small = builder.input("x", {"dataType": "int8", "shape": [max_bytes // 4]})
    with raises(TypeError, match=r"^\[widen\] cast: .*byte length"):
        builder.cast(small, "int64", {"label": "widen"})
    assert builder.cast(small, "int32").shape == [max_bytes // 4]     # exactly the limit's size: fine
    x = builder.input("y", {"dataType": "float32", "shape": [2]})
    with raises(TypeError, match=r"^\[wide\] expand: .*byte length"):
        builder.expand(x, [1, max_bytes // 4, 2], {"label": "wide"})
    max_rank = limits["input"]["rankRange"]["max"]
    with raises(TypeError, match=r"^expand: .*rank"):
        builder.expand(x, [1] * max_rank + [2])
    assert builder.expand(x, [1] * (max_rank - 1) + [2]).shape == [1] * (max_rank - 1) + [2]
    # The builder is still usable afterwards.
    graph = await builder.build({"out": builder.add(x, x)})
    assert sorted(graph._input_descriptors) == ["y"]


async def test_lost_context_fails_everything_queued_and_later():
    context = await webnn_py.ml.createContext()
    builder = MLGraphBuilder(context)
    x = builder.input("x", F32)
    pending_build = builder.build({"y": builder.add(x, x)})
    pending_tensor = context.createTensor(F32)
    context.destroy()
    context.destroy()                                 # already lost: nothing happens
    await rejects(pending_build, InvalidStateError)
    await rejects(pending_tensor, InvalidStateError)
    info = await context.lost
    assert "destroy" in info["message"]
    await rejects(context.createConstantTensor(F32, np.zeros(4, np.float32)), InvalidStateError)
    with raises(InvalidStateError):
        MLGraphBuilder(context)
