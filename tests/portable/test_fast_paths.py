"""The per-run calls' fast conversions (webnn_py/api/idl.py `fast=`, api/context.py
_plain_*_arguments, bindings.host_buffer_source): dispatch(), writeTensor() and readTensor()
skip the generic WebIDL conversion when their arguments are exactly plain Python types.

Every scenario runs twice, with the fast paths on and off (`idl.fast_paths`), from the same
starting state, and must give the same outcome: the same values read back, or the same
exception type and message. The fast functions must recognise the plain arguments (so the
fast path is what ran) and decline everything else -- subclasses, dict subclasses, other
types, keys a USVString conversion would change --, which then gets the generic
conversion and its errors. Portable: also runs in Pyodide.
"""
import array
import asyncio
import collections

import numpy as np

import webnn_py
from webnn_py.api import context as context_module
from webnn_py.api import idl
from webnn_py.api.tensor import MLTensor
from webnn_py.bindings import convert, convert_arguments, host_buffer_source, parse_type

F32 = {"dataType": "float32", "shape": [2, 2]}
X = np.array([[1, 2], [3, 4]], np.float32)


async def _setup(names=("x",)):
    context = await webnn_py.ml.createContext()
    builder = webnn_py.MLGraphBuilder(context)
    total = None
    for name in names:
        operand = builder.input(name, F32)
        total = operand if total is None else builder.add(total, operand)
    graph = await builder.build({"y": builder.mul(total, builder.constant("float32", 10))})
    inputs = {name: await context.createTensor({**F32, "writable": True}) for name in names}
    output = await context.createTensor({**F32, "readable": True, "writable": True})
    return context, graph, inputs, output


async def _outcome(scenario):
    """What an async scenario gives: ("value", ...) or ("raised", type, message)."""
    try:
        return ("value", await scenario())
    except Exception as exc:  # noqa: BLE001
        return ("raised", type(exc), str(exc))


async def _both_ways(scenario):
    """The scenario's outcome with the fast paths on, then off (each from a fresh _setup
    inside the scenario); asserts they are the same and returns it."""
    outcomes = []
    for fast in (True, False):
        idl.fast_paths = fast
        try:
            outcomes.append(await _outcome(scenario))
        finally:
            idl.fast_paths = True
    assert outcomes[0] == outcomes[1], outcomes
    return outcomes[0]


async def _check_cases(make_scenario, cases, values):
    """Each case (make_args(state), before(state) or None, the error expected or None)
    run both ways: the same outcome, that error's type, or one of `values` read back."""
    for make_args, before, error in cases:
        outcome = await _both_ways(make_scenario(make_args, before))
        if error is None:
            assert outcome[0] == "value" and outcome[1] in values, outcome
        else:
            assert outcome[:2] == ("raised", error), outcome


def _read(values) -> list:
    return np.frombuffer(values, np.float32).tolist()


class TensorSubclass(MLTensor):
    pass


def _as_subclass(tensor):
    """The tensor made an instance of a subclass of MLTensor (WebIDL takes it: it
    implements MLTensor), which the fast paths must leave to the generic conversion."""
    tensor.__class__ = TensorSubclass
    return tensor


class DictSubclass(dict):
    pass


class StrSubclass(str):
    pass


class ArraySubclass(np.ndarray):
    pass


# -- the fast functions recognise exactly the plain types ------------------------------------------

async def test_dispatch_fast_conversion_matches_the_generic_one_or_declines():
    context, graph, inputs, output = await _setup()
    tx = inputs["x"]
    plain = (graph, {"x": tx}, {"y": output})
    fast = context_module._plain_dispatch_arguments(plain)
    assert fast is not None
    overload, converted = convert_arguments("MLContext", "dispatch", plain)
    assert (fast[0], list(fast[1])) == (overload, converted)
    declined = [
        (graph, DictSubclass(x=tx), {"y": output}),
        (graph, collections.OrderedDict(x=tx), {"y": output}),
        (graph, {"x": tx}, {"y": _as_subclass(await context.createTensor({**F32, "readable": True}))}),
        (graph, {StrSubclass("x"): tx}, {"y": output}),
        (graph, {"x\ud800": tx}, {"y": output}),            # a lone surrogate: USVString changes it
        (graph, {"é": tx}, {"y": output}),                  # not ASCII: left to the generic path
        (graph, {1: tx}, {"y": output}),
        (graph, {"x": X}, {"y": output}),
        (graph, [("x", tx)], {"y": output}),
        (object(), {"x": tx}, {"y": output}),
        (graph, {"x": tx}),
        (graph, {"x": tx}, {"y": output}, None),
    ]
    for args in declined:
        assert context_module._plain_dispatch_arguments(args) is None, args
    context.destroy()


async def test_write_and_read_fast_conversions_match_the_generic_ones_or_decline():
    context, graph, inputs, output = await _setup()
    tx = inputs["x"]
    buffer_type = parse_type("AllowSharedBufferSource")
    plain_buffers = [X, X.reshape(-1), np.zeros(0, np.float32), bytes(16), bytearray(16), memoryview(bytearray(16)),
                     memoryview(X), np.frombuffer(bytes(16), np.float32), np.zeros(2, np.float64),
                     np.zeros(4, np.bool_), np.zeros(2, ">f8")]
    for data in plain_buffers:
        fast = host_buffer_source(data)
        generic = convert(data, buffer_type)
        assert fast is not None, data
        assert (fast.source is data, fast.byte_length, fast.is_view, fast.element_type, fast.is_shared,
                fast.to_bytes()) == (True, generic.byte_length, generic.is_view, generic.element_type,
                                     generic.is_shared, generic.to_bytes()), data
        assert context_module._plain_write_arguments((tx, data))[0] == 0
        assert context_module._plain_read_arguments((output, data))[0] == 1
    assert context_module._plain_read_arguments((output,)) == (0, (output,))

    released = memoryview(bytearray(16))
    released.release()
    declined_buffers = [X.T, X[:, :1], np.zeros(2, "M8[D]"), released, X.view(ArraySubclass), array.array("f", [1, 2, 3, 4]),
                        [1.0, 2.0, 3.0, 4.0], None, 16, "data", type("Bytes", (bytes,), {})(16)]
    for data in declined_buffers:
        assert host_buffer_source(data) is None, data
        assert context_module._plain_write_arguments((tx, data)) is None
        assert context_module._plain_read_arguments((output, data)) is None
    for args in [(_as_subclass(tx), X), (X, tx), (tx,), (tx, X, X), ()]:
        assert context_module._plain_write_arguments(args) is None, args
    for args in [(_as_subclass(output),), (X,), (output, X, X), ()]:
        assert context_module._plain_read_arguments(args) is None, args
    context.destroy()


# -- the same outcomes either way ------------------------------------------------------------------

async def test_a_run_gives_the_same_values_either_way():
    async def scenario():
        context, graph, inputs, output = await _setup(("a", "b"))
        context.writeTensor(inputs["a"], X)
        context.writeTensor(inputs["b"], bytearray(np.ones(4, np.float32).tobytes()))
        context.dispatch(graph, inputs, {"y": output})
        whole = _read(await context.readTensor(output))
        into = np.zeros(4, np.float32)
        assert await context.readTensor(output, into) is None
        into_bytes = bytearray(16)
        await context.readTensor(output, into_bytes)
        context.destroy()
        return whole, into.tolist(), _read(into_bytes)

    outcome = await _both_ways(scenario)
    expected = [20.0, 30.0, 40.0, 50.0]
    assert outcome == ("value", (expected, expected, expected))


async def test_dispatch_errors_are_the_same_either_way():
    def dispatching(make_args, before=None):
        async def scenario():
            context, graph, inputs, output = await _setup()
            other, other_graph, other_inputs, _ = await _setup()
            state = {"context": context, "graph": graph, "x": inputs["x"], "y": output,
                     "other_graph": other_graph, "other_x": other_inputs["x"]}
            if before is not None:
                before(state)
            context.dispatch(*make_args(state))
            return _read(await context.readTensor(output))
        return scenario

    cases = [
        # Plain arguments: the steps' own errors (§8.3.1).
        (lambda s: (s["other_graph"], {"x": s["x"]}, {"y": s["y"]}), None, TypeError),       # step 1
        (lambda s: (s["graph"], {"x": s["other_x"]}, {"y": s["y"]}), None, TypeError),       # step 5.1
        (lambda s: (s["graph"], {"x": s["x"]}, {"y": s["x"]}), None, TypeError),             # step 4
        (lambda s: (s["graph"], {"x": s["x"]}, {}), None, TypeError),                         # step 7
        (lambda s: (s["graph"], {"z": s["x"]}, {"y": s["y"]}), None, TypeError),
        (lambda s: (s["graph"], {"x": s["x"]}, {"y": s["y"]}), lambda s: s["x"].destroy(), TypeError),
        (lambda s: (s["graph"], {"x": s["x"]}, {"y": s["y"]}), lambda s: s["graph"].destroy(),
         webnn_py.InvalidStateError),                                                         # step 2
        # Arguments the fast path declines: the generic conversion's errors, or its results.
        (lambda s: (s["graph"], {"x": s["x"]}), None, TypeError),                             # too few
        (lambda s: (s["graph"], {"x": X}, {"y": s["y"]}), None, TypeError),
        (lambda s: (s["graph"], {"x\ud800": s["x"]}, {"y": s["y"]}), None, TypeError),        # becomes U+FFFD
        (lambda s: (s["graph"], {1: s["x"]}, {"y": s["y"]}), None, TypeError),
        (lambda s: (s["x"], {"x": s["x"]}, {"y": s["y"]}), None, TypeError),
        (lambda s: (s["graph"], [("x", s["x"])], {"y": s["y"]}), None, TypeError),
        (lambda s: (s["graph"], DictSubclass(x=s["x"]), {"y": s["y"]}), None, None),
        (lambda s: (s["graph"], {StrSubclass("x"): s["x"]}, {"y": _as_subclass(s["y"])}), None, None),
        (lambda s: (s["graph"], {"x": s["x"]}, {"y": s["y"]}, "extra"), None, None),
    ]
    await _check_cases(dispatching, cases, [[0.0] * 4])


async def test_write_errors_are_the_same_either_way():
    def writing(make_args, before=None):
        async def scenario():
            context, graph, inputs, output = await _setup()
            read_only = await context.createTensor({**F32, "readable": True})
            state = {"context": context, "x": inputs["x"], "y": output, "read_only": read_only}
            if before is not None:
                before(state)
            context.writeTensor(*make_args(state))
            context.dispatch(graph, inputs, {"y": output})
            return _read(await context.readTensor(output))
        return scenario

    released = memoryview(bytearray(16))
    released.release()
    cases = [
        (lambda s: (s["x"], np.zeros(2, np.float64)), None, TypeError),      # the wrong view type (§8.3.6 step 4)
        (lambda s: (s["x"], np.zeros(3, np.float32)), None, TypeError),      # the wrong size
        (lambda s: (s["read_only"], X), None, TypeError),                     # not writable
        (lambda s: (s["x"], X), lambda s: s["x"].destroy(), TypeError),       # destroyed
        (lambda s: (s["x"], X), lambda s: s["context"].destroy(), TypeError),  # lost context: tensors destroyed
        (lambda s: (s["x"], X.T), None, TypeError),                           # not C-contiguous
        (lambda s: (s["x"], [1.0, 2.0, 3.0, 4.0]), None, TypeError),
        (lambda s: (s["x"], released), None, ValueError),                     # as memoryview() says
        (lambda s: (s["x"],), None, TypeError),
        (lambda s: (X, s["x"]), None, TypeError),
        (lambda s: (s["x"], X.view(ArraySubclass)), None, None),               # declined, then taken
        (lambda s: (_as_subclass(s["x"]), X), None, None),
        (lambda s: (s["x"], X, "extra"), None, None),
    ]
    await _check_cases(writing, cases, [[10.0, 20.0, 30.0, 40.0]])


async def test_read_errors_are_the_same_either_way():
    def reading(make_args, before=None):
        async def scenario():
            context, graph, inputs, output = await _setup()
            context.writeTensor(output, X)
            state = {"context": context, "x": inputs["x"], "y": output}
            if before is not None:
                before(state)
            args = make_args(state)
            result = await context.readTensor(*args)
            return _read(result) if result is not None else [_read(a) for a in args[1:2]]
        return scenario

    cases = [
        (lambda s: (s["x"],), None, TypeError),                                   # not readable
        (lambda s: (s["y"], bytearray(8)), None, TypeError),                      # the wrong size
        (lambda s: (s["y"], np.zeros(2, np.float64)), None, TypeError),           # the wrong view type
        (lambda s: (s["y"],), lambda s: s["y"].destroy(), TypeError),             # destroyed
        (lambda s: (s["y"],), lambda s: s["context"].destroy(), TypeError),       # lost context
        (lambda s: (s["y"], None), None, TypeError),
        (lambda s: (s["y"], np.zeros((2, 2), np.float32).T), None, TypeError),
        (lambda s: (X,), None, TypeError),
        (lambda s: (), None, TypeError),
        (lambda s: (_as_subclass(s["y"]),), None, None),
        (lambda s: (s["y"], np.zeros(4, np.float32), "extra"), None, None),
    ]
    await _check_cases(reading, cases, [[1.0, 2.0, 3.0, 4.0], [[1.0, 2.0, 3.0, 4.0]]])


async def test_a_read_destroyed_before_its_await_rejects_either_way():
    async def scenario():
        context, graph, inputs, output = await _setup()
        pending = context.readTensor(output)
        output.destroy()                  # §8.8.2: its pending promise is rejected
        return await pending

    outcome = await _both_ways(scenario)
    assert outcome[:2] == ("raised", webnn_py.InvalidStateError), outcome


async def test_gathered_reads_and_writes_keep_timeline_order_either_way():
    async def scenario():
        context = await webnn_py.ml.createContext()
        t = await context.createTensor({"dataType": "uint8", "shape": [2], "readable": True, "writable": True})
        reads = []
        for value in range(4):
            context.writeTensor(t, bytes([value, value + 1]))
            reads.append(context.readTensor(t))
        return [bytes(r) for r in await asyncio.gather(*reads)]

    outcome = await _both_ways(scenario)
    assert outcome == ("value", [bytes([v, v + 1]) for v in range(4)])
