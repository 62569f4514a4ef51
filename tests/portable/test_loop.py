"""loop (our extension, OpenVINO Loop-5 semantics): a few end-to-end cases.

Portable: runs on host CPython and inside Pyodide. Expected values are plain
Python loops following Loop-5's pseudo-code; tests/ops/test_loop.py has the rest.
"""
import numpy as np

import webnn_py

from .expect import raises

VEC = {"dataType": "float32", "shape": [2]}


async def _dispatch(context, graph, inputs: dict, outputs: dict):
    tensors_in = {}
    for name, array in inputs.items():
        tensors_in[name] = await context.createTensor({"dataType": "float32", "shape": list(array.shape),
                                                       "writable": True})
        context.writeTensor(tensors_in[name], array)
    tensors_out = {name: await context.createTensor({"dataType": "float32", "shape": shape, "readable": True})
                   for name, shape in outputs.items()}
    context.dispatch(graph, tensors_in, tensors_out)
    return {name: np.frombuffer(await context.readTensor(t), np.float32).reshape(outputs[name])
            for name, t in tensors_out.items()}


async def test_for_loop_with_back_edge_slices_and_concatenation():
    context = await webnn_py.ml.createContext()
    bb = webnn_py.MLGraphBuilder(context)
    acc = bb.input("acc", VEC)
    part = bb.input("part", {"dataType": "float32", "shape": [1, 2]})
    i = bb.input("i", {"dataType": "int32", "shape": []})
    new = bb.add(bb.add(acc, bb.reshape(part, [2])), bb.cast(i, "float32"))
    body = await bb.build({"acc_out": new, "step": bb.reshape(new, [1, 2]),
                           "cond": bb.identity(bb.constant("uint8", 1))})

    builder = webnn_py.MLGraphBuilder(context)
    x = builder.input("x", {"dataType": "float32", "shape": [4, 2]})
    a = builder.input("a", VEC)
    last, steps = builder.loop(builder.constant("int64", 3), builder.constant("uint8", 1), body, "cond",
                               [{"bodyInput": "acc", "value": a}, {"bodyInput": "part", "value": x, "axis": -2}],
                               [{"bodyOutput": "acc_out"}, {"bodyOutput": "step", "axis": 0}],
                               {"currentIteration": "i", "backEdges": [{"from": "acc_out", "to": "acc"}]})
    assert steps.shape == [3, 2]
    graph = await builder.build({"last": last, "steps": steps})
    xs = np.arange(8, dtype=np.float32).reshape(4, 2)
    out = await _dispatch(context, graph, {"x": xs, "a": np.array([10, 20], np.float32)},
                          {"last": [2], "steps": [3, 2]})
    state, rows = [10.0, 20.0], []
    for it in range(3):
        state = [state[0] + float(xs[it, 0]) + it, state[1] + float(xs[it, 1]) + it]
        rows.append(state)
    assert out["steps"].tolist() == rows
    assert out["last"].tolist() == rows[-1]
    context.destroy()


async def test_while_loop_ends_on_the_body_condition_and_concatenation_needs_a_static_count():
    context = await webnn_py.ml.createContext()
    bb = webnn_py.MLGraphBuilder(context)
    acc = bb.input("acc", VEC)
    new = bb.mul(acc, bb.constant("float32", 2))
    body = await bb.build({"acc_out": new,
                           "cond": bb.cast(bb.lesser(bb.reduceMax(new), bb.constant("float32", 50)), "uint8")})
    builder = webnn_py.MLGraphBuilder(context)
    a = builder.input("a", VEC)
    args = (builder.constant("int32", -1), builder.constant("uint8", 1), body, "cond", [{"bodyInput": "acc", "value": a}])
    with raises(TypeError, match="loop: .*not known at build time"):
        builder.loop(*args, [{"bodyOutput": "acc_out", "axis": 0}], {"backEdges": [{"from": "acc_out", "to": "acc"}]})
    last = builder.loop(*args, [{"bodyOutput": "acc_out"}], {"backEdges": [{"from": "acc_out", "to": "acc"}]})[0]
    graph = await builder.build({"last": last})
    out = await _dispatch(context, graph, {"a": np.array([1, 3], np.float32)}, {"last": [2]})
    state = [1.0, 3.0]
    while True:                      # do-while: the condition is checked after each iteration
        state = [v * 2 for v in state]
        if not max(state) < 50:
            break
    assert out["last"].tolist() == state == [32.0, 96.0]
    context.destroy()
