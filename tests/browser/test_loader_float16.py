"""MLModel.compute() with float16 outputs in every engine (issue 19's leftover of item 14):
the results' `data` is a Float16Array (a Uint16Array of the bits where the engine has no
Float16Array, §12.1's note), in a one-output result, in a record of results, from the
TFLite importer and from an OpenVINO IR model (built per input shape), and through
compute(inputs, outputs) into the caller's Float16Arrays. Expected values: numpy's float16
arithmetic on the host, compared bit for bit."""
from __future__ import annotations

import base64

import numpy as np
import pytest

from . import PAGES

F16 = np.float16
X = np.array([1.5, -0.0, 0.1, 65504, -3.25, 2 ** -24], F16)      # 0.1 rounds; 65504 is the largest finite
C = np.array([2.0, -0.0, 0.2, 32, 0.5, 2 ** -24], F16)            # 65504 + 32 overflows to Infinity


def bits(array: np.ndarray) -> list[int]:
    return np.ascontiguousarray(array, F16).view(np.uint16).tolist()


def tflite_add_mul(two_outputs: bool) -> bytes:
    """y = x + c (float16), and z = x * c when `two_outputs`."""
    from tests.loader.tflite_writer import ModelWriter

    w = ModelWriter()
    g = w.subgraph("main")
    x = g.tensor([2, 3], F16, name="x")
    c = g.const(C.reshape(2, 3))
    y = g.tensor([2, 3], F16, name="y")
    g.op("ADD", [x, c], [y])
    outputs = [y]
    if two_outputs:
        z = g.tensor([2, 3], F16, name="z")
        g.op("MUL", [x, c], [z])
        outputs.append(z)
    g.io([x], outputs)
    return w.finish()


def openvino_add(directory) -> tuple[bytes, bytes]:
    """y = x + c, float16 throughout, as OpenVINO IR (made by OpenVINO itself)."""
    ov = pytest.importorskip("openvino")
    from openvino import opset13 as ops

    x = ops.parameter([2, 3], ov.Type.f16, name="x")
    model = ov.Model([ops.add(x, ops.constant(C.reshape(2, 3)))], [x], "add")
    ov.save_model(model, directory / "add.xml", compress_to_fp16=False)
    return (directory / "add.xml").read_bytes(), (directory / "add.bin").read_bytes()


def encoded(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@pytest.fixture(scope="module")
def outcome(browser, tmp_path_factory):
    from webnn_py.serve import PolyfillServer

    xml, weights = openvino_add(tmp_path_factory.mktemp("ir"))
    x = {"x": {"bits": bits(X), "dimensions": [2, 3]}}
    cases = [
        {"name": "one", "model": encoded(tflite_add_mul(False)), "inputs": x},
        {"name": "record", "model": encoded(tflite_add_mul(True)), "inputs": x},
        {"name": "openvino", "model": encoded(xml), "weights": encoded(weights), "inputs": x},
        {"name": "into", "model": encoded(tflite_add_mul(True)), "inputs": x,
         "into": {"y": {"length": 6, "dimensions": [2, 3]}, "z": {"length": 6, "dimensions": [2, 3]}}},
    ]
    with PolyfillServer(root=PAGES) as server, browser.new_page() as page:
        page.goto(f"{server.url}/loader_float16.html")
        facts = page.evaluate(f"float16Run({cases!r})")
        assert page.errors == []
    return facts, browser


def expected_kind(facts) -> str:
    """Float16Array; Uint16Array bits where the engine has none (§12.1's note)."""
    return "Float16Array" if facts["float16Array"] == "function" else "Uint16Array"


def sum_bits() -> list[int]:
    with np.errstate(over="ignore"):
        total = X + C
    assert np.isposinf(total[3]) and np.signbit(total[1])       # the cases the values are for
    return bits(total)


def product_bits() -> list[int]:
    with np.errstate(over="ignore"):
        return bits(X * C)


def test_one_float16_output(outcome):
    facts, _ = outcome
    assert facts["one"] == {"outputs": {"": {"kind": expected_kind(facts), "bits": sum_bits(),
                                              "dimensions": [2, 3]}}}, facts["one"]


def test_float16_outputs_in_a_record(outcome):
    facts, _ = outcome
    kind = expected_kind(facts)
    assert facts["record"] == {"outputs": {
        "y": {"kind": kind, "bits": sum_bits(), "dimensions": [2, 3]},
        "z": {"kind": kind, "bits": product_bits(), "dimensions": [2, 3]}}}, facts["record"]


def test_float16_output_of_an_openvino_model(outcome):
    facts, _ = outcome
    outputs = facts["openvino"].get("outputs")
    assert outputs is not None, facts["openvino"]
    assert list(outputs.values()) == [{"kind": expected_kind(facts), "bits": sum_bits(),
                                       "dimensions": [2, 3]}], facts["openvino"]


def test_float16_outputs_into_the_callers_arrays(outcome):
    facts, _ = outcome
    kind = expected_kind(facts)
    assert facts["into"] == {"resolved": "undefined", "outputs": {
        "y": {"kind": kind, "bits": sum_bits(), "dimensions": [2, 3]},
        "z": {"kind": kind, "bits": product_bits(), "dimensions": [2, 3]}}}, facts["into"]

