"""State kept between compute() calls (webnn_py/loader/tflite/state.py): resource
variables with CALL_ONCE initialisation, as streaming models use them, against ten
consecutive invocations of one LiteRT interpreter; resetState(); every signature
of a multi-signature model."""
from __future__ import annotations

import asyncio

import numpy as np
import pytest

from webnn_py import ml
from webnn_py.base.errors import NotSupportedError
from webnn_py.loader import MLModelLoader

from .helpers import compute_arrays
from .tflite_writer import ModelWriter, options

RNG = np.random.default_rng(1818)
F32, I32, I8 = np.float32, np.int32, np.int8
FRAMES = 10


def litert_stream(model: bytes, frames: list[dict], signature: str | None = None) -> list[dict]:
    """One LiteRT interpreter invoked once per frame (its variables persist)."""
    from ai_edge_litert.interpreter import Interpreter
    interpreter = Interpreter(model_content=model)
    if signature is not None:
        runner = interpreter.get_signature_runner(signature)
        return [{k: v.copy() for k, v in runner(**frame).items()} for frame in frames]
    interpreter.allocate_tensors()
    results = []
    for frame in frames:
        for detail in interpreter.get_input_details():
            interpreter.set_tensor(detail["index"], frame[detail["name"]])
        interpreter.invoke()
        results.append({d["name"]: interpreter.get_tensor(d["index"]).copy()
                        for d in interpreter.get_output_details()})
    return results


async def _stream(loaded, frames):
    return [await compute_arrays(loaded, frame) for frame in frames]


def webnn_stream(model: bytes, frames: list[dict], signature: str | None = None, reset_after: int | None = None):
    """Our MLModel computed once per frame; with reset_after=n, resetState() after frame n."""
    async def go():
        context = await ml.createContext()
        loaded = await MLModelLoader(context).load(model, {"signature": signature} if signature else None)
        if reset_after is None:
            return await _stream(loaded, frames)
        first = await _stream(loaded, frames[:reset_after])
        loaded.resetState()
        return first + await _stream(loaded, frames[reset_after:])
    return asyncio.run(go())


def streaming_model(quantized: bool = False) -> bytes:
    """A streaming model in the shape of a keyword spotter's: a ring buffer of the
    last three frames and a running sum, both resource variables that a CALL_ONCE
    subgraph initialises. Per frame x [1, 4]:
        window = concat(buffer[:, 1:], x)        (buffer [1, 3, 4], split by SPLIT_V)
        total  = total + x
        y      = mean(window, axis 1) * total
    With quantized=True the variables and the arithmetic are int8 (x is QUANTIZE'd,
    y DEQUANTIZE'd), as an int8 keyword spotter keeps its state."""
    w = ModelWriter()
    main, init = w.subgraph("main"), w.subgraph("init")
    dtype = I8 if quantized else F32
    q = {"scale": 1 / 16, "zero_point": 0} if quantized else {}
    qsum = {"scale": 1 / 8, "zero_point": 0} if quantized else {}

    def handle(g, name):
        h = g.tensor([], I32)                    # type RESOURCE: set below
        g.graph.tensors[h].type = 13
        g.op("VAR_HANDLE", [], [h], options("VarHandleOptions", container="", sharedName=name))
        return h

    initial_buffer = np.full((1, 3, 4), 0.25, F32)
    initial_total = np.arange(4, dtype=F32).reshape(1, 4) / 4
    if quantized:
        initial_buffer = np.round(initial_buffer * 16).astype(I8)
        initial_total = np.round(initial_total * 8).astype(I8)
    init.op("ASSIGN_VARIABLE", [handle(init, "buffer"), init.const(initial_buffer, **q)], [])
    init.op("ASSIGN_VARIABLE", [handle(init, "total"), init.const(initial_total, **qsum)], [])
    init.io([], [])

    g = main
    g.op("CALL_ONCE", [], [], options("CallOnceOptions", initSubgraphIndex=init.index))
    x = g.tensor([1, 4], F32, name="x")
    xq = x
    if quantized:
        xq = g.tensor([1, 4], I8, **q)
        g.op("QUANTIZE", [x], [xq])
    hb, ht = handle(g, "buffer"), handle(g, "total")
    buffer, total = g.tensor([1, 3, 4], dtype, **q), g.tensor([1, 4], dtype, **qsum)
    g.op("READ_VARIABLE", [hb], [buffer])
    g.op("READ_VARIABLE", [ht], [total])
    oldest, recent = g.tensor([1, 1, 4], dtype, **q), g.tensor([1, 2, 4], dtype, **q)
    g.op("SPLIT_V", [buffer, g.const(np.array([1, -1], I32)), g.const(np.array(1, I32))], [oldest, recent],
         options("SplitVOptions", numSplits=2))
    frame = g.tensor([1, 1, 4], dtype, **q)
    g.op("RESHAPE", [xq, g.const(np.array([1, 1, 4], I32))], [frame])
    window = g.tensor([1, 3, 4], dtype, **q)
    g.op("CONCATENATION", [recent, frame], [window], options("ConcatenationOptions", axis=1))
    g.op("ASSIGN_VARIABLE", [hb, window], [])
    new_total = g.tensor([1, 4], dtype, **qsum)
    g.op("ADD", [total, xq], [new_total], options("AddOptions"))
    g.op("ASSIGN_VARIABLE", [ht, new_total], [])
    mean = g.tensor([1, 4], dtype, **q)
    g.op("MEAN", [window, g.const(np.array([1], I32))], [mean], options("ReducerOptions", keepDims=False))
    y = g.tensor([1, 4], dtype, name="y" if not quantized else "yq", **qsum)
    g.op("MUL", [mean, new_total], [y], options("MulOptions"))
    outputs = [y]
    if quantized:
        yf = g.tensor([1, 4], F32, name="y")
        g.op("DEQUANTIZE", [y], [yf])
        outputs = [yf]
    g.io([x], outputs)
    w.signature("serving_default", main.index, {"x": x}, {"y": outputs[0]})
    return w.finish()


def frames(count=FRAMES, shape=(1, 4), low=-1.0, high=1.0):
    return [{"x": RNG.uniform(low, high, shape).astype(F32)} for _ in range(count)]


def test_ten_frames_of_a_streaming_model_match_litert():
    model = streaming_model()
    inputs = frames()
    reference = litert_stream(model, inputs)
    ours = webnn_stream(model, inputs)
    for step, (a, b) in enumerate(zip(ours, reference)):
        np.testing.assert_allclose(a["y"], b["y"], rtol=1e-5, atol=1e-6, err_msg=f"frame {step}")
    # The state matters: the same frame later gives another result.
    assert not np.allclose(ours[0]["y"], webnn_stream(model, [inputs[3]])[0]["y"])


def test_ten_frames_of_an_int8_streaming_model_match_litert():
    """int8 state: LiteRT's integer kernels round each step, ours round onto the same
    grids; results one quantum (1/8) apart at most."""
    model = streaming_model(quantized=True)
    inputs = frames(low=-0.5, high=0.5)
    reference = litert_stream(model, inputs)
    ours = webnn_stream(model, inputs)
    for step, (a, b) in enumerate(zip(ours, reference)):
        assert np.abs(a["y"] - b["y"]).max() <= 1 / 8 + 1e-6, f"frame {step}: {a['y']} vs {b['y']}"
    equal = np.mean([np.mean(np.abs(a["y"] - b["y"]) < 1e-6) for a, b in zip(ours, reference)])
    assert equal >= 0.8


def test_reset_state_starts_the_stream_again():
    model = streaming_model()
    inputs = frames(8)
    reference = litert_stream(model, inputs[:4]) + litert_stream(model, inputs[4:])   # a fresh interpreter
    ours = webnn_stream(model, inputs, reset_after=4)
    for step, (a, b) in enumerate(zip(ours, reference)):
        np.testing.assert_allclose(a["y"], b["y"], rtol=1e-5, atol=1e-6, err_msg=f"frame {step}")


def test_every_signature_of_a_multi_signature_model():
    """A second signature next to the streaming one: each loads by its key
    ({signature: key}) and matches LiteRT's signature runner, frame after frame."""
    w_model = streaming_model()
    from ai_edge_litert import schema_py_generated as schema
    model = schema.ModelT.InitFromPackedBuf(w_model, 0)
    writer = ModelWriter()
    writer.model = model
    g = writer.subgraph("scale")
    x = g.tensor([2, 3], F32, name="x")
    y = g.tensor([2, 3], F32, name="y")
    g.op("MUL", [x, g.const(np.array(3.0, F32))], [y], options("MulOptions"))
    g.io([x], [y])
    writer.signature("scale", g.index, {"value": x}, {"scaled": y})
    data = writer.finish()
    stream = frames()
    for key, inputs in (("serving_default", stream), ("scale", [{"value": f["x"].repeat(6)[:6].reshape(2, 3)}
                                                                 for f in stream])):
        reference = litert_stream(data, inputs, signature=key)
        ours = webnn_stream(data, inputs, signature=key)
        for step, (a, b) in enumerate(zip(ours, reference)):
            assert set(a) == set(b)
            for name in b:
                np.testing.assert_allclose(a[name], b[name], rtol=1e-5, atol=1e-6, err_msg=f"{key} {step}")


def test_state_inside_a_while_body_is_refused():
    w = ModelWriter()
    main, cond, body = w.subgraph(), w.subgraph(), w.subgraph()
    x = main.tensor([1], F32, name="x")
    y = main.tensor([1], F32, name="y")
    main.op("WHILE", [x], [y], options("WhileOptions", condSubgraphIndex=cond.index, bodySubgraphIndex=body.index))
    main.io([x], [y])
    cx, flag = cond.tensor([1], F32), cond.tensor([1], np.bool_)
    cond.op("LESS", [cx, cond.const(np.array([5.0], F32))], [flag])
    cond.io([cx], [flag])
    bx, h, v, out = body.tensor([1], F32), body.tensor([], I32), body.tensor([1], F32), body.tensor([1], F32)
    body.graph.tensors[h].type = 13
    body.op("VAR_HANDLE", [], [h], options("VarHandleOptions", sharedName="v"))
    body.op("READ_VARIABLE", [h], [v])
    body.op("ADD", [bx, v], [out], options("AddOptions"))
    body.io([bx], [out])

    async def go():
        await MLModelLoader(await ml.createContext()).load(w.finish())
    with pytest.raises(NotSupportedError, match="READ_VARIABLE.*inside a WHILE or IF subgraph"):
        asyncio.run(go())


def test_two_variables_assigned_one_value_and_the_output_itself():
    """ASSIGN_VARIABLE of the same operand to two variables, which is also the
    model's output: three graph outputs of one value (build() needs each its own)."""
    w = ModelWriter()
    g, init = w.subgraph(), w.subgraph()

    def handle(graph, name):
        h = graph.tensor([], I32)
        graph.graph.tensors[h].type = 13            # RESOURCE
        graph.op("VAR_HANDLE", [], [h], options("VarHandleOptions", sharedName=name))
        return h

    init.op("ASSIGN_VARIABLE", [handle(init, "a"), init.const(np.array([0.5, -0.5], F32))], [])
    init.io([], [])
    g.op("CALL_ONCE", [], [], options("CallOnceOptions", initSubgraphIndex=init.index))
    x = g.tensor([2], F32, name="x")
    handles = [handle(g, name) for name in ("a", "b")]
    previous = g.tensor([2], F32)
    g.op("READ_VARIABLE", [handles[0]], [previous])
    y = g.tensor([2], F32, name="y")
    g.op("ADD", [x, previous], [y], options("AddOptions"))
    for h in handles:
        g.op("ASSIGN_VARIABLE", [h, y], [])
    g.io([x], [y])
    model = w.finish()
    inputs = frames(4, shape=(2,))
    for a, b in zip(webnn_stream(model, inputs), litert_stream(model, inputs)):
        np.testing.assert_allclose(a["y"], b["y"], rtol=1e-6)


def test_reset_state_of_a_model_without_state_changes_nothing():
    w = ModelWriter()
    g = w.subgraph()
    x, y = g.tensor([3], F32, name="x"), g.tensor([3], F32, name="y")
    g.op("TANH", [x], [y])
    g.io([x], [y])
    value = np.array([-1.0, 0.0, 2.0], F32)

    async def go():
        loaded = await MLModelLoader(await ml.createContext()).load(w.finish())
        assert loaded.resetState() is None
        return await compute_arrays(loaded, {"x": value})
    np.testing.assert_allclose(asyncio.run(go())["y"], np.tanh(value), rtol=1e-6)
