"""MLModel behaviour of IR models: element types, inputs()/outputs() with
dynamic shapes, compute() into caller buffers, specialisations per run-time
iteration count, what cannot be expressed, and mutated files."""
from __future__ import annotations

import asyncio
import random
import re

import numpy as np
import pytest

from .helpers import compare, mutated_outcomes, ours, save
from .test_loop import build_loop, counter_body, sliced_model

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")
F32 = np.float32


def loaded(xml, weights, **options):
    import webnn_py
    from webnn_py.loader import MLModelLoader

    async def go():
        context = await webnn_py.ml.createContext()
        return await MLModelLoader(context).load(xml, {"weights": weights, **options})
    return go


@pytest.mark.parametrize("dtype", [np.float16, np.uint8, np.int64, np.int32])
def test_element_types_match_openvino(tmp_path, dtype):
    x, y = ops.parameter([2, 3], dtype, name="x"), ops.parameter([3], dtype, name="y")
    outs = [ops.add(x, y), ops.less(x, y), ops.concat([x, ops.unsqueeze(y, ops.constant(np.int64(0)))], 0),
            ops.convert(x, "f32")]
    m = ov.Model([ops.result(o) for o in outs], [x, y], "m")
    rng = np.random.default_rng(3)
    compare(m, tmp_path, {"x": rng.integers(0, 50, (2, 3)).astype(dtype), "y": rng.integers(0, 50, 3).astype(dtype)})


def test_inputs_outputs_and_compute_into_buffers(tmp_path):
    """inputs()/outputs() describe the IR (a dynamic dimension as 0 until
    compute() knows it); compute(inputs, outputs) fills the caller's arrays."""
    x = ops.parameter([-1, 3], F32, name="x")
    m = ov.Model([ops.result(ops.tanh(x))], [x], "m")
    xml, weights = save(m, tmp_path)

    async def go():
        model = await loaded(xml, weights)()
        info = model.inputs(), model.outputs()
        data = np.linspace(-2, 2, 6, dtype=F32)
        out = np.zeros(6, F32)
        returned = await model.compute({"data": data, "dimensions": [2, 3]}, {"data": out, "dimensions": [2, 3]})
        wrong = None
        try:
            await model.compute({"data": data, "dimensions": [3, 2]})
        except TypeError as exc:
            wrong = str(exc)
        return info, returned, out, wrong
    (inputs, outputs), returned, out, wrong = asyncio.run(go())
    assert inputs == [{"name": "x", "type": "float32", "dimensions": [0, 3]}]
    assert outputs[0]["dimensions"] == [0, 3] and outputs[0]["type"] == "float32"
    assert returned is None
    np.testing.assert_allclose(out, np.tanh(np.linspace(-2, 2, 6, dtype=F32)), rtol=0, atol=1e-6)
    assert wrong is not None and "[3, 2]" in wrong and "?" in wrong


def counting_while_loop():
    """A Loop-5 with no trip count that counts from `init` while below `lim`: its last
    count and the concatenation of the counts (as many as the data decide)."""
    body, acc, it, limit, r_acc, r_y, r_cond = counter_body()
    init = ops.parameter([1], np.int32, name="init")
    lim = ops.parameter([1], np.int32, name="lim")
    last, ys = build_loop(ops.constant(np.int64(-1)), ops.constant(True), body, merged=[(acc, init, r_acc)],
                          invariant=[(limit, lim)], last=[r_acc], concat=[(r_y, 0)], current=1,
                          condition_result=r_cond)
    return last, ys, init, lim


def test_while_loop_counts_differ_per_compute(tmp_path):
    """The concatenation's size follows the data: one model, several counts
    (each a cached specialisation), against OpenVINO every time."""
    last, ys, init, lim = counting_while_loop()
    m = ov.Model([ops.result(last), ops.result(ys)], [init, lim], "m")
    sizes = set()
    for limit_value in (3, 50, 1000, 50):
        got = compare(m, tmp_path, {"init": np.array([1], np.int32), "lim": np.array([limit_value], np.int32)})
        sizes.add(max(v.shape[0] for v in got.values()))
    assert len(sizes) == 3


def test_dynamic_concatenation_inside_a_body_is_not_supported(tmp_path):
    """An inner while loop's concatenation changes size per outer iteration:
    not expressible with static WebNN shapes -- NotSupportedError at load."""
    from webnn_py.base.errors import NotSupportedError
    body, acc, it, limit, r_acc, r_y, r_cond = counter_body()
    o_lim = ops.parameter([1], np.int32, name="o_lim")
    start = ops.constant(np.array([1], np.int32))
    last, ys = build_loop(ops.constant(np.int64(-1)), ops.constant(True), body, merged=[(acc, start, r_acc)],
                          invariant=[(limit, o_lim)], last=[r_acc], concat=[(r_y, 0)], current=1,
                          condition_result=r_cond)
    r_out, r_c = ops.result(ops.add(last, last)), ops.result(ops.constant(True))
    outer = ov.Model([r_out, r_c, ops.result(ys)], [o_lim], "outer")
    lim = ops.parameter([1], np.int32, name="lim")
    loop = ops.loop(ops.constant(np.int64(2)), ops.constant(True))
    loop.set_function(outer)
    loop.set_special_body_ports([-1, 1])
    loop.set_invariant_input(o_lim, lim.output(0))
    out = loop.get_concatenated_slices(outer.get_results()[2].output(0), 0, 1, 1, -1, 0)
    xml, weights = save(ov.Model([ops.result(out)], [lim], "m"), tmp_path)
    with pytest.raises(NotSupportedError, match="inside a Loop body"):
        ours(xml, weights, {"lim": np.array([100], np.int32)})


def test_mutated_files_fail_cleanly(tmp_path):
    """Attribute values and bytes of a Loop IR changed at random: load() and
    compute() either work or fail with a DOMException (TypeError only for
    compute()'s own argument checks); nothing else escapes, nothing hangs."""
    xml, weights = save(sliced_model(trip=6), tmp_path)
    outcomes = mutated_outcomes(xml, weights, random.Random(11), 250)
    assert outcomes.count("load") > 50 and outcomes.count("ran") > 10


def test_ops_after_a_run_time_sized_concatenation_match_openvino(tmp_path):
    """The rest of the graph is built for the shapes the loop produced."""
    last, ys, init, lim = counting_while_loop()
    scaled = ops.multiply(ops.convert(ys, "f32"), ops.constant(np.float32(0.01)))
    joined = ops.concat([scaled, ops.constant(np.array([0.5], F32))], 0)
    m = ov.Model([ops.result(ops.softmax(joined, 0)), ops.result(ops.add(ys, last))], [init, lim], "m")
    for limit_value in (10, 400):
        got = compare(m, tmp_path, {"init": np.array([1], np.int32), "lim": np.array([limit_value], np.int32)})
        assert len({v.shape for v in got.values()}) == 2


def test_ir_version_10_without_tensor_names(tmp_path):
    """IR v10 has no tensor names on ports nor output_names on Results: inputs
    and outputs are named by their layers."""
    from .helpers import openvino_run
    model = sliced_model(stride=1, trip=6)
    xml, weights = save(model, tmp_path)
    text = xml.decode().replace('<net name="m" version="11">', '<net name="m" version="10">')
    text = re.sub(r' (names|output_names)="[^"]*"', "", text)
    x = np.arange(18, dtype=F32).reshape(6, 3) / 3
    a = np.ones((1, 3), F32)
    got = ours(text.encode(), weights, {"X": x, "A": a})
    expected = sorted(openvino_run(model, {"X": x, "A": a}).values(), key=lambda v: v.size)
    assert all(name.startswith("Result_") for name in got)
    for value, reference in zip(sorted(got.values(), key=lambda v: v.size), expected):
        np.testing.assert_allclose(value, reference, rtol=0, atol=1e-5)


def test_shapes_a_model_cannot_take_fail_compute(tmp_path):
    """A dynamic dimension given a size the graph cannot use: compute() rejects
    with DataError naming the layer; other sizes still work."""
    from webnn_py.base.errors import DataError
    x = ops.parameter([-1, 3], F32, name="x")
    m = ov.Model([ops.result(ops.add(x, ops.constant(np.ones((4, 3), F32))))], [x], "m")
    xml, weights = save(m, tmp_path)
    with pytest.raises(DataError, match=r"^compute: layer \d+ .*\(Add\)"):
        ours(xml, weights, {"x": np.zeros((2, 3), F32)})
    compare(m, tmp_path, {"x": np.arange(12, dtype=F32).reshape(4, 3)}, name="ok")
