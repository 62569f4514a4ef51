"""dispatch()'s outputs are written into the output tensors' own [[data]], one copy per output
after the plan's last step (ExecutionPlan.execute_iter(into=)): whatever the plan's result is --
a view of an input (reshape), a constant, a fresh array --, the tensor gets its values and
never shares memory with an input tensor, a constant or the plan (a later writeTensor of the
input, or a later dispatch, leaves a read of the output unchanged until the output is
dispatched again). Values by hand. Portable: also runs in Pyodide.
"""
import numpy as np

import webnn_py

F32_4 = {"dataType": "float32", "shape": [4]}
F32_22 = {"dataType": "float32", "shape": [2, 2]}
X = np.array([1, -2, 3, -4], np.float32)
C = np.array([[0.5, 0.25], [2, 8]], np.float32)


async def _read(context, tensor):
    return np.frombuffer(await context.readTensor(tensor), np.float32).tolist()


async def test_outputs_that_are_views_inputs_constants_or_fresh_arrays_are_copied_into_their_tensors():
    context = await webnn_py.ml.createContext()
    builder = webnn_py.MLGraphBuilder(context)
    x = builder.input("x", F32_4)
    graph = await builder.build({
        "view": builder.reshape(x, [2, 2]),                 # a view of the input's array
        "constant": builder.identity(builder.constant(F32_22, C)),   # folded: the plan's own constant
        "fresh": builder.abs(x),                            # a kernel's new array
    })
    t_x = await context.createTensor({**F32_4, "writable": True})
    outputs = {name: await context.createTensor({**(F32_4 if name == "fresh" else F32_22), "readable": True})
               for name in ("view", "constant", "fresh")}
    arrays = {name: tensor._data for name, tensor in outputs.items()}
    context.writeTensor(t_x, X)
    context.dispatch(graph, {"x": t_x}, outputs)
    assert await _read(context, outputs["view"]) == [1, -2, 3, -4]
    assert await _read(context, outputs["constant"]) == [0.5, 0.25, 2, 8]
    assert await _read(context, outputs["fresh"]) == [1, 2, 3, 4]
    # Written in place: each output tensor keeps its array, which holds nothing of the plan's.
    for name, tensor in outputs.items():
        assert tensor._data is arrays[name]
        assert not np.shares_memory(tensor._data, t_x._data)
        for constant in graph._implementation.constants.values():
            assert not np.shares_memory(tensor._data, constant)
    # A new input leaves the outputs as they are until the next dispatch.
    context.writeTensor(t_x, -X)
    assert await _read(context, outputs["view"]) == [1, -2, 3, -4]
    outputs["constant"]._data[0, 0] = 99       # (test only) the plan's constant is not this array
    context.dispatch(graph, {"x": t_x}, outputs)
    assert await _read(context, outputs["view"]) == [-1, 2, -3, 4]
    assert await _read(context, outputs["constant"]) == [0.5, 0.25, 2, 8]
    assert await _read(context, outputs["fresh"]) == [1, 2, 3, 4]

