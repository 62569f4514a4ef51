"""dispatch()'s remembered binding (api/context.py, _DispatchBinding): after a dispatch passed
§8.3.1 steps 1-7, a dispatch of the same graph with the same tensors under the same names
checks only what can change (whether the graph or a tensor was destroyed). Every check
must still fail as the full steps do -- same exception type, same message -- whether the
binding was remembered or not, through the host's dispatch() and the browser bridge's
records (MLContext._dispatch_records), and results must be right (x * 10 + z, by hand).
Portable: also runs in Pyodide.
"""
import numpy as np

import webnn_py
from webnn_py.api.tensor import MLTensor

F32 = {"dataType": "float32", "shape": [2, 2]}
F32_3 = {"dataType": "float32", "shape": [3]}
X = np.array([[1, 2], [3, 4]], np.float32)
Z = np.array([[0.5, 0.25], [-1, 2]], np.float32)


async def _setup(context=None):
    context = context or await webnn_py.ml.createContext()
    builder = webnn_py.MLGraphBuilder(context)
    y = builder.add(builder.mul(builder.input("x", F32), builder.constant("float32", 10)), builder.input("z", F32))
    graph = await builder.build({"y": y})
    s = {"context": context, "graph": graph}
    for name in ("x", "z", "x2"):
        s[name] = await context.createTensor({**F32, "writable": True, "readable": True})
    for name in ("y", "y2"):
        s[name] = await context.createTensor({**F32, "readable": True})
    s["wrong"] = await context.createTensor({**F32_3, "writable": True})
    s["constant"] = await context.createConstantTensor(F32, X)
    context.writeTensor(s["x"], X)
    context.writeTensor(s["x2"], 2 * X)
    context.writeTensor(s["z"], Z)
    return s


def _dispatch_plain(s, inputs, outputs):
    s["context"].dispatch(s["graph"], inputs, outputs)


def _dispatch_records(s, inputs, outputs):
    """As the bridge does: the records flattened, names then tensors."""
    pairs = tuple(item for record in (inputs, outputs) for pair in record.items() for item in pair)
    s["context"]._dispatch_records(s["graph"], len(inputs), pairs)


async def _read_tensor(s, tensor):
    return np.frombuffer(await s["context"].readTensor(tensor), np.float32).reshape(2, 2)


async def _read(s, name):
    return await _read_tensor(s, s[name])


def _failure(call):
    try:
        call()
    except Exception as exc:  # noqa: BLE001
        return type(exc), str(exc)
    return None


DISPATCHES = (_dispatch_plain, _dispatch_records)

# (what to do to the state after a first good dispatch, the next dispatch's records, the error type)
CASES = [
    ("destroy x", lambda s: s["x"].destroy(), lambda s: ({"x": s["x"], "z": s["z"]}, {"y": s["y"]}), TypeError),
    ("destroy y", lambda s: s["y"].destroy(), lambda s: ({"x": s["x"], "z": s["z"]}, {"y": s["y"]}), TypeError),
    ("destroy graph", lambda s: s["graph"].destroy(), lambda s: ({"x": s["x"], "z": s["z"]}, {"y": s["y"]}),
     webnn_py.InvalidStateError),
    ("same tensor twice", None, lambda s: ({"x": s["x"], "z": s["x"]}, {"y": s["y"]}), TypeError),
    ("input as output", None, lambda s: ({"x": s["x"], "z": s["z"]}, {"y": s["x"]}), TypeError),
    ("wrong descriptor", None, lambda s: ({"x": s["wrong"], "z": s["z"]}, {"y": s["y"]}), TypeError),
    ("constant tensor", None, lambda s: ({"x": s["constant"], "z": s["z"]}, {"y": s["y"]}), TypeError),
    ("unknown name", None, lambda s: ({"w": s["x"], "z": s["z"]}, {"y": s["y"]}), TypeError),
    ("missing input", None, lambda s: ({"x": s["x"]}, {"y": s["y"]}), TypeError),
    ("another context's tensor", None, lambda s: ({"x": s["other"]["x"], "z": s["z"]}, {"y": s["y"]}), TypeError),
]


async def test_a_remembered_binding_fails_every_check_as_the_full_steps_do():
    for dispatch, (name, change, records, error) in [(d, case) for d in DISPATCHES for case in CASES]:
        outcomes = []
        for remembered in (True, False):
            s = await _setup()
            s["other"] = await _setup()
            if remembered:
                dispatch(s, {"x": s["x"], "z": s["z"]}, {"y": s["y"]})
                assert s["graph"]._dispatch_bindings, name
                assert np.array_equal(await _read(s, "y"), X * 10 + Z), name
            if change is not None:
                change(s)
            outcomes.append(_failure(lambda: dispatch(s, *records(s))))
        assert outcomes[0] is not None and outcomes[0][0] is error, (name, outcomes)
        assert outcomes[0] == outcomes[1], (name, outcomes)


async def test_a_graph_of_another_context_is_rejected_after_its_own_dispatch():
    s = await _setup()
    other = await _setup()
    _dispatch_plain(s, {"x": s["x"], "z": s["z"]}, {"y": s["y"]})
    # The same graph and tensors, dispatched on another context: step 1 fails first.
    failure = _failure(lambda: other["context"].dispatch(s["graph"], {"x": s["x"], "z": s["z"]}, {"y": s["y"]}))
    assert failure == (TypeError, "dispatch: the graph belongs to another context")
    failure = _failure(lambda: other["context"]._dispatch_records(s["graph"], 2, ("x", s["x"], "z", s["z"], "y", s["y"])))
    assert failure == (TypeError, "dispatch: the graph belongs to another context")


async def test_alternating_bindings_give_each_its_own_results():
    for dispatch, round_ in [(d, r) for d in DISPATCHES for r in range(3)]:
        s = await _setup() if round_ == 0 else s
        dispatch(s, {"x": s["x"], "z": s["z"]}, {"y": s["y"]})
        dispatch(s, {"x": s["x2"], "z": s["z"]}, {"y": s["y2"]})
        assert np.array_equal(await _read(s, "y"), X * 10 + Z), round_
        assert np.array_equal(await _read(s, "y2"), X * 20 + Z), round_
        s["context"].writeTensor(s["z"], Z + round_ + 1)
        dispatch(s, {"x": s["x"], "z": s["z"]}, {"y": s["y"]})
        assert np.array_equal(await _read(s, "y"), X * 10 + Z + round_ + 1), round_
        s["context"].writeTensor(s["z"], Z)


async def test_records_with_a_repeated_name_bind_the_later_tensor():
    """A converted record keeps the later of two equal keys; the flat records do the same."""
    s = await _setup()
    for _ in range(2):
        s["context"]._dispatch_records(s["graph"], 3, ("x", s["x2"], "z", s["z"], "x", s["x"], "y", s["y"]))
        assert np.array_equal(await _read(s, "y"), X * 10 + Z)


async def test_a_destroyed_graph_drops_its_binding():
    s = await _setup()
    _dispatch_plain(s, {"x": s["x"], "z": s["z"]}, {"y": s["y"]})
    assert {type(t) for t in s["graph"]._dispatch_bindings[0].tensors} == {MLTensor}
    s["graph"].destroy()
    assert s["graph"]._dispatch_bindings == ()


async def test_tensors_bound_in_turn_are_each_validated_once():
    """ORT-web's WebNN EP hands dispatch() a model's same-shaped tensors in turn (the output of
    one run is an input of the next): each of the rotating bindings takes §8.3.1's full steps
    once, and every dispatch computes from its own tensors. A fifth binding forgets the
    oldest, which then takes the full steps again."""
    for dispatch in DISPATCHES:
        s = await _setup()
        s["w"] = await s["context"].createTensor({**F32, "writable": True, "readable": True})
        bound = []
        # Each validation counted (patched by hand: this module also runs in Pyodide, without pytest).
        s["context"]._bind = lambda *a: bound.append(a[1]) or type(s["context"])._bind(s["context"], *a)
        rotation = [({"x": s["x"], "z": s["z"]}, {"y": s["w"]}), ({"x": s["w"], "z": s["x"]}, {"y": s["z"]}),
                    ({"x": s["z"], "z": s["w"]}, {"y": s["x"]})]
        for _ in range(3):
            for inputs, outputs in rotation:
                x, z = [await _read_tensor(s, inputs[k]) for k in ("x", "z")]
                dispatch(s, inputs, outputs)
                y = await _read_tensor(s, outputs["y"])
                assert np.array_equal(y, x * 10 + z), dispatch.__name__
        assert len(bound) == 3, (dispatch.__name__, bound)
        for name in ("x2", "y2"):
            s[name] = await s["context"].createTensor({**F32, "writable": True, "readable": True})
        dispatch(s, {"x": s["x2"], "z": s["y2"]}, {"y": s["w"]})
        dispatch(s, {"x": s["y2"], "z": s["x2"]}, {"y": s["w"]})
        assert len(s["graph"]._dispatch_bindings) == 4
        dispatch(s, *rotation[0])
        assert len(bound) == 6, (dispatch.__name__, bound)
