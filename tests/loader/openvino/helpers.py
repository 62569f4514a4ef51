"""Shared by the IR importer tests: save an openvino.Model as IR, run it on
OpenVINO's CPU plugin (the reference, f32 precision) and through our
MLModelLoader, and compare."""
from __future__ import annotations

import asyncio
import random
import re
from pathlib import Path

import numpy as np

ov = __import__("pytest").importorskip("openvino")
__import__("pytest").importorskip("openvino.opset13")


def p(name: str, shape, dtype=np.float32):
    """A Parameter named `name`."""
    return ov.opset13.parameter(list(shape), dtype, name=name)


def c(value, dtype=None):
    """A Const holding `value`."""
    return ov.opset13.constant(np.asarray(value, dtype=dtype))


def model(outputs, params):
    """An ov.Model with a Result per output node."""
    return ov.Model([ov.opset13.result(o) for o in outputs], params, "m")


def save(model, directory: Path, name: str = "model") -> tuple[bytes, bytes]:
    path = directory / f"{name}.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    weights = path.with_suffix(".bin")
    return path.read_bytes(), weights.read_bytes() if weights.exists() else b""


def openvino_run(model, feeds: dict) -> dict[frozenset, np.ndarray]:
    """{the output's tensor names: value} from OpenVINO's CPU plugin."""
    core = ov.Core()
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled(feeds)
    return {frozenset(out.get_names()): np.asarray(result[out]) for out in compiled.outputs}


def ours(xml: bytes, weights: bytes, feeds: dict, **options) -> dict[str, np.ndarray]:
    """{output name: value} from webnn_py's MLModelLoader on the host."""
    import webnn_py
    from webnn_py.loader import MLModelLoader

    async def main():
        context = await webnn_py.ml.createContext({"modelFormat": "openvino"})
        model = await MLModelLoader(context).load(xml, {"weights": weights, **options})
        tensors = {name: {"data": np.ascontiguousarray(v).reshape(-1), "dimensions": list(np.shape(v))}
                   for name, v in feeds.items()}
        result = await model.compute(tensors)
        names = [o["name"] for o in model.outputs()]
        if len(names) == 1:
            result = {names[0]: result}
        return {name: np.asarray(t["data"]).reshape(t["dimensions"]) for name, t in result.items()}

    return asyncio.run(main())


def to_webnn(value: np.ndarray) -> np.ndarray:
    """What a value looks like in WebNN: booleans are uint8 0/1."""
    value = np.asarray(value)
    return value.astype(np.uint8) if value.dtype == np.bool_ else value


def compare(model, directory: Path, feeds: dict, name: str = "model", **options) -> dict[str, np.ndarray]:
    """Our outputs equal OpenVINO's: integers exactly, floats within 1e-5."""
    xml, weights = save(model, directory, name)
    reference = openvino_run(model, feeds)
    got = ours(xml, weights, {k: to_webnn(v) for k, v in feeds.items()}, **options)
    assert len(got) == len(reference)
    for names, expected in reference.items():
        matches = [n for n in got if n in names]
        assert matches, f"no output of ours is named one of {sorted(names)} (ours: {sorted(got)})"
        value, expected = got[matches[0]], to_webnn(expected)
        assert value.shape == expected.shape, (matches[0], value.shape, expected.shape)
        assert value.dtype == expected.dtype, (matches[0], value.dtype, expected.dtype)
        if expected.dtype.kind == "f":
            np.testing.assert_allclose(value, expected, rtol=0, atol=1e-5, err_msg=matches[0])
        else:
            np.testing.assert_array_equal(value, expected, err_msg=matches[0])
    return got


MUTATION_TOKENS = [b"-1", b"0", b"99999999999", b"-5", b"abc", b"", b"1,2", b"?", b"Loop", b"Parameter", b"Const",
                   b"f16", b"boolean", b"3", b"2,3,4", b"2147483648,2147483648,0"]


def mutated_outcomes(xml: bytes, weights: bytes, rnd: random.Random, count: int) -> list[str]:
    """Load and compute `count` copies of the IR with 1-3 attribute values or
    bytes changed at random; each outcome is "load" or "compute" (the step that
    failed with a DOMException, or compute()'s TypeError) or "ran". Any other
    exception propagates: the test fails."""
    from webnn_py.base.errors import DOMException

    async def attempt(data: bytes):
        import webnn_py
        from webnn_py.loader import MLModelLoader
        context = await webnn_py.ml.createContext()
        try:
            model = await MLModelLoader(context).load(data, {"weights": weights, "maxIterations": 50})
        except DOMException:
            return "load"
        feeds = {}
        for info in model.inputs():
            dims = [max(d, 1) for d in info["dimensions"]]
            dtype = {"float32": np.float32, "float16": np.float16, "int32": np.int32, "int64": np.int64,
                     "uint8": np.uint8}[info["type"]]
            feeds[info["name"]] = {"data": np.zeros(int(np.prod(dims)), dtype), "dimensions": dims}
        try:
            await model.compute(feeds)
        except (DOMException, TypeError):
            return "compute"
        return "ran"

    outcomes = []
    for _ in range(count):
        data = bytearray(xml)
        for _ in range(rnd.randint(1, 3)):
            if rnd.random() < 0.6:
                match = rnd.choice(list(re.finditer(rb'="([^"]*)"', data)))
                data[match.start(1):match.end(1)] = rnd.choice(MUTATION_TOKENS)
            else:
                data[rnd.randrange(len(data))] = rnd.randrange(256)
        outcomes.append(asyncio.run(attempt(bytes(data))))
    return outcomes
