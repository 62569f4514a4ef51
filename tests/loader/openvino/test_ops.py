"""One IR model per translator (built with openvino's Python API) vs OpenVINO's
CPU plugin, a Loop body using most of them, the run_model CLI, and the errors
(unknown ops, truncated weights, bad offsets, malformed or hostile XML)."""
from __future__ import annotations

import numpy as np
import pytest

from .helpers import c, compare, model, ours, p, save

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")
F32, I32, I64 = np.float32, np.int32, np.int64
rng = np.random.default_rng(7)


X = rng.standard_normal((2, 3, 4)).astype(F32)
Y = rng.standard_normal((3, 4)).astype(F32) + 3
A_INT = rng.integers(-20, 20, (2, 3, 4)).astype(I32)
B_INT = rng.integers(1, 7, (3, 4)).astype(I32) * rng.choice([-1, 1], (3, 4)).astype(I32)


def case_binary(op):
    def make():
        x, y = p("x", X.shape), p("y", Y.shape)
        return model([op(x, y)], [x, y]), {"x": X, "y": Y}
    return make


def case_int_binary(op):
    def make():
        x, y = p("x", A_INT.shape, I32), p("y", B_INT.shape, I32)
        return model([op(x, y)], [x, y]), {"x": A_INT, "y": B_INT}
    return make


def case_unary(op):
    def make():
        x = p("x", X.shape)
        return model([op(x)], [x]), {"x": X}
    return make


def case_logical():
    a, b = p("a", (2, 3), np.bool_), p("b", (3,), np.bool_)
    outs = [ops.logical_and(a, b), ops.logical_or(a, b), ops.logical_not(a)]
    return model(outs, [a, b]), {"a": rng.random((2, 3)) > 0.5, "b": np.array([True, False, True])}


def case_compare_select():
    x, y = p("x", X.shape), p("y", Y.shape)
    outs = [ops.less(x, y), ops.greater(x, y), ops.equal(x, ops.constant(np.float32(0))),
            ops.select(ops.greater(x, c(0.0, F32)), x, y)]
    return model(outs, [x, y]), {"x": X.round(), "y": Y}


def case_convert():
    x = p("x", X.shape)
    outs = [ops.convert(ops.multiply(x, c(5.0, F32)), "i32"), ops.convert(x, "f16"), ops.convert(x, "boolean"),
            ops.convert(ops.convert(x, "boolean"), "f32"), ops.convert(ops.convert(x, "i32"), "i64")]
    return model(outs, [x]), {"x": X}


def case_softmax(version):
    def make():
        x = p("x", X.shape)
        out = (ops.softmax(x, -1) if version == 8 else __import__("openvino.opset1", fromlist=["softmax"]).softmax(x, 1))
        return model([out], [x]), {"x": X}
    return make


def case_matmul(ta, tb, a_shape, b_shape):
    def make():
        a, b = p("a", a_shape), p("b", b_shape)
        return (model([ops.matmul(a, b, ta, tb)], [a, b]),
                {"a": rng.standard_normal(a_shape).astype(F32), "b": rng.standard_normal(b_shape).astype(F32)})
    return make


def case_shape_ops():
    x = p("x", X.shape)
    outs = [
        ops.concat([x, ops.multiply(x, c(2.0, F32))], -1),
        ops.reshape(x, c([0, -1], I64), special_zero=True),
        ops.reshape(x, c([4, 6], I64), special_zero=False),
        ops.squeeze(ops.unsqueeze(x, c([0, 3], I64)), c([0], I64)),
        ops.transpose(x, c([2, 0, 1], I64)),
        ops.gather(x, c([[2, 0], [1, 1]], I32), c(1, I64)),
        ops.gather(x, c([-1, 0], I64), c(-1, I64)),
        ops.gather(x, c([[2, 0, 1], [1, 1, 0]], I32), c(2, I64), batch_dims=1),
        ops.strided_slice(x, c([0, 1, 0], I64), c([2, 3, 4], I64), c([1, 1, 2], I64), [0, 0, 0], [0, 0, 0]),
        ops.strided_slice(x, c([1, -1, 0], I64), c([0, 0, 0], I64), c([1, -1, 1], I64), [0, 0, 1], [1, 0, 1],
                          shrink_axis_mask=[1, 0, 0]),
        ops.strided_slice(x, c([0, 0], I64), c([1, 2], I64), c([1, 1], I64), [1, 0], [1, 0], new_axis_mask=[0, 1]),
        ops.strided_slice(x, c([1, 0, 0], I64), c([2, 0, 3], I64), c([1, 1, 1], I64), [0, 0, 0], [0, 0, 0],
                          ellipsis_mask=[0, 1, 0]),
        ops.strided_slice(x, c([0, 0, -1], I64), c([0, 0, -5], I64), c([1, 1, -2], I64), [1, 1, 0], [1, 1, 0]),
        pytest.importorskip("openvino.opset15").squeeze(ops.reshape(x, c([1, 2, 1, 12], I64), False)),
        ops.unsqueeze(x, c([-1, 1], I64)),
        ops.transpose(x, c(np.zeros(0, I64))),
        ops.concat([x, x], 0),
    ]
    return model(outs, [x]), {"x": X}


def case_dynamic_gather():
    x, i = p("x", (5, 3)), p("i", (2, 2), I32)
    j = p("j", (3,), I64)
    outs = [ops.gather(x, i, c(0, I64)), ops.gather(x, j, c(1, I64))]
    return model(outs, [x, i, j]), {"x": rng.standard_normal((5, 3)).astype(F32),
                                    "i": np.array([[4, -1], [0, 2]], I32), "j": np.array([2, -3, 1], I64)}


def test_gather_with_run_time_indices_and_batch_dims_hand_computed(tmp_path):
    """Gather-8 with batch_dims 1 and indices computed at run time (OpenVINO's
    CPU plugin crashed on this model here): out[b, i, :] = x[b, idx[b, i], :],
    negative indices counting from the end."""
    x, i = p("x", (2, 5, 3)), p("i", (2, 4), I32)
    xml, weights = save(model([ops.gather(x, i, c(1, I64), batch_dims=1)], [x, i]), tmp_path)
    xs = rng.standard_normal((2, 5, 3)).astype(F32)
    idx = np.array([[4, -1, 0, 2], [-5, 3, 3, 1]], I32)
    (got,) = ours(xml, weights, {"x": xs, "i": idx}).values()
    expected = np.stack([np.stack([xs[b, idx[b, k] % 5] for k in range(4)]) for b in range(2)])
    np.testing.assert_array_equal(got, expected)


def case_convolution(auto_pad, strides, dilations, pads):
    def make():
        x = p("x", (1, 2, 7, 6))
        w = c(rng.standard_normal((3, 2, 3, 2)).astype(F32))
        out = ops.convolution(x, w, strides, pads[0], pads[1], dilations, auto_pad=auto_pad)
        return model([ops.relu(out)], [x]), {"x": rng.standard_normal((1, 2, 7, 6)).astype(F32)}
    return make


CASES = {
    "add": case_binary(ops.add), "subtract": case_binary(ops.subtract), "multiply": case_binary(ops.multiply),
    "divide": case_binary(ops.divide),
    "int-add": case_int_binary(ops.add), "int-subtract": case_int_binary(ops.subtract),
    "relu": case_unary(ops.relu), "sigmoid": case_unary(ops.sigmoid), "tanh": case_unary(ops.tanh),
    "logical": case_logical, "compare-select": case_compare_select, "convert": case_convert,
    "softmax-1": case_softmax(1), "softmax-8": case_softmax(8),
    "matmul": case_matmul(False, False, (2, 3, 4), (4, 5)),
    "matmul-ta-tb": case_matmul(True, True, (2, 4, 3), (5, 4)),
    "matmul-vector": case_matmul(False, False, (4,), (2, 4, 3)),
    "shape-ops": case_shape_ops, "dynamic-gather": case_dynamic_gather,
    "conv-explicit": case_convolution("explicit", [1, 1], [1, 1], ([1, 0], [0, 1])),
    "conv-same-upper": case_convolution("same_upper", [2, 2], [1, 1], ([0, 0], [0, 0])),
    "conv-same-lower": case_convolution("same_lower", [2, 1], [1, 2], ([0, 0], [0, 0])),
    "conv-valid": case_convolution("valid", [1, 2], [2, 1], ([0, 0], [0, 0])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_translator_matches_openvino(tmp_path, name):
    m, feeds = CASES[name]()
    compare(m, tmp_path, feeds)


def test_integer_divide_floors_as_divide_1_says_hand_computed(tmp_path):
    """Divide-1 with m_pythondiv="true" (its default) is floor division for
    integers; OpenVINO's CPU plugin truncates instead (-3 / 7 gives 0 there).
    We follow the operation's text: numpy's floor_divide is the reference."""
    x, y = p("x", A_INT.shape, I32), p("y", B_INT.shape, I32)
    xml, weights = save(model([ops.divide(x, y)], [x, y]), tmp_path)
    assert 'm_pythondiv="true"' in xml.decode()
    (got,) = ours(xml, weights, {"x": A_INT, "y": B_INT}).values()
    np.testing.assert_array_equal(got, np.floor_divide(A_INT, B_INT))
    assert (np.floor_divide(A_INT, B_INT) != np.trunc(A_INT / B_INT)).any()     # the case is exercised


def most_ops_model():
    """(model, feeds): an RNN-like cell over a sliced sequence, with shape ops,
    comparisons and logic in the body, and a condition that ends the loop after
    4 of its 6 possible iterations."""
    x_t = p("x_t", (1, 2, 4))              # one time step of [T, 2, 4]
    h = p("h", (2, 5))
    it = p("it", (), I64)
    w = c(rng.standard_normal((5, 4)).astype(F32) * 0.5)
    u = c(rng.standard_normal((5, 5)).astype(F32) * 0.5)
    x2 = ops.squeeze(x_t, c([0], I64))                                   # [2, 4]
    pre = ops.add(ops.matmul(x2, w, False, True), ops.matmul(h, u, False, False))
    gate = ops.sigmoid(pre)
    cand = ops.tanh(ops.subtract(pre, c(0.1, F32)))
    h_new = ops.add(ops.multiply(gate, cand), ops.multiply(ops.subtract(c(1.0, F32), gate), h))
    h_out = ops.divide(h_new, c(1.5, F32))
    probs = ops.softmax(ops.relu(h_out), -1)
    first = ops.strided_slice(probs, c([0, 0], I64), c([1, 5], I64), c([1, 1], I64), [0, 0], [0, 0],
                              shrink_axis_mask=[1, 0])            # [5]
    picked = ops.gather(first, c([0, 2], I32), c(0, I64))
    joined = ops.concat([ops.unsqueeze(picked, c([0], I64)), ops.reshape(first, c([1, -1], I64), False)], 1)
    flipped = ops.transpose(joined, c([1, 0], I64))
    step = ops.convert(it, "f32")
    go_on = ops.logical_and(ops.less(step, c(3.0, F32)),
                            ops.logical_or(ops.greater(step, c(-1.0, F32)),
                                           ops.logical_not(ops.equal(step, c(0.0, F32)))))
    r_h, r_y, r_cond = ops.result(h_out), ops.result(ops.unsqueeze(flipped, c([0], I64))), ops.result(go_on)
    body = ov.Model([r_h, r_y, r_cond], [x_t, h, it], "body")
    xs, h0 = p("xs", (6, 2, 4)), p("h0", (2, 5))
    loop = ops.loop(c(6, I64), c(True))
    loop.set_function(body)
    loop.set_special_body_ports([2, 2])
    loop.set_sliced_input(x_t, xs.output(0), 0, 1, 1, -1, 0)
    loop.set_merged_input(h, h0.output(0), r_h.output(0))
    last = loop.get_iter_value(r_h.output(0), -1)
    ys = loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 0)
    m = ov.Model([ops.result(last), ops.result(ys)], [xs, h0], "m")
    return m, {"xs": rng.standard_normal((6, 2, 4)).astype(F32), "h0": rng.standard_normal((2, 5)).astype(F32)}


def test_loop_body_with_most_ops_matches_openvino(tmp_path):
    m, feeds = most_ops_model()
    got = compare(m, tmp_path, feeds)
    assert sorted(v.shape for v in got.values()) == [(2, 5), (4, 7, 1)]      # 4 iterations ran


def test_run_model_cli_matches_openvino(tmp_path):
    from webnn_py.run_model import main
    from .helpers import openvino_run
    x, y = p("x", X.shape), p("y", Y.shape)
    m = model([ops.tanh(ops.add(x, y))], [x, y])
    save(m, tmp_path)
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", Y)
    out = tmp_path / "out.npz"
    assert main([str(tmp_path / "model.xml"), "--format", "openvino", "--weights", str(tmp_path / "model.bin"),
                 "--input", f"x={tmp_path / 'x.npy'}", "--input", f"y={tmp_path / 'y.npy'}",
                 "--output", str(out)]) == 0
    (expected,) = openvino_run(m, {"x": X, "y": Y}).values()
    (got,) = np.load(out).values()
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)


# -- errors ----------------------------------------------------------------------------------------

def _load(xml: bytes, weights: bytes):
    return ours(xml, weights, {})


def _simple(tmp_path):
    x = p("x", (2, 3))
    m = model([ops.add(x, c(np.arange(6, dtype=F32).reshape(2, 3)))], [x])
    return save(m, tmp_path)


def test_unknown_ops_are_all_named(tmp_path):
    from webnn_py.base.errors import NotSupportedError
    x = p("x", (2, 3))
    m = model([ops.atan(ops.asin(x))], [x])
    xml, weights = save(m, tmp_path)
    with pytest.raises(NotSupportedError, match=r"Asin \(.*\), Atan \("):
        _load(xml, weights)


def test_truncated_weights(tmp_path):
    from webnn_py.base.errors import DataError
    xml, weights = _simple(tmp_path)
    with pytest.raises(DataError, match=r"layer \d+ .*\(Const\).*outside the weights"):
        _load(xml, weights[:-1])
    with pytest.raises(DataError, match="outside the weights"):
        _load(xml, b"")


@pytest.mark.parametrize("edit,problem", [
    (('offset="0"', 'offset="4"'), "outside the weights"),
    (('offset="0"', 'offset="-8"'), "negative offset"),
    (('size="24"', 'size="20"'), "does not match shape"),
    (('offset="0"', 'offset="zero"'), "not an integer"),
])
def test_bad_offsets_and_sizes(tmp_path, edit, problem):
    from webnn_py.base.errors import DataError
    xml, weights = _simple(tmp_path)
    text = xml.decode()
    assert edit[0] in text
    with pytest.raises(DataError, match=problem):
        _load(text.replace(edit[0], edit[1]).encode(), weights)


@pytest.mark.parametrize("xml,problem", [
    (b"<net version='11'><layers><layer", "not well-formed"),
    (b"<?xml version='1.0'?><!DOCTYPE net [<!ENTITY a 'aaaa'>]><net version='11'>&a;</net>", "DOCTYPE"),
    (b"<net version='7'><layers/><edges/></net>", "version"),
    (b"<model/>", "root element"),
    (b"<net version='11'><layers><layer id='0' type='Result' name='r'><input><port id='0'/></input></layer>"
     b"</layers><edges/></net>", "not connected"),
    (b"<net version='11'><layers><layer id='0' type='Parameter' name='a'><data shape='1' element_type='f32'/>"
     b"<output><port id='0'/></output></layer></layers><edges><edge from-layer='0' from-port='0' to-layer='5' "
     b"to-port='0'/></edges></net>", "missing layer"),
])
def test_malformed_xml(xml, problem):
    from webnn_py.base.errors import DataError
    with pytest.raises(DataError, match=problem):
        _load(xml, b"")


def test_inconsistent_shapes_name_the_layer(tmp_path):
    from webnn_py.base.errors import DataError
    x, y = p("x", (2, 3)), p("y", (2, 3))
    xml, weights = save(model([ops.add(x, y)], [x, y]), tmp_path)
    text = xml.decode().replace('<data shape="2,3" element_type="f32" />', '<data shape="2,4" element_type="f32" />', 1)
    with pytest.raises(DataError, match=r"layer \d+ .*\(Add\)"):
        _load(text.encode(), weights)


def test_unknown_ops_inside_loop_bodies_are_named_too(tmp_path):
    from webnn_py.base.errors import NotSupportedError
    from .test_loop import build_loop
    acc = p("acc", (1,))
    r_acc, r_cond = ops.result(ops.asin(acc)), ops.result(ops.constant(True))
    body = ov.Model([r_acc, r_cond], [acc], "body")
    init = p("init", (1,))
    (last,) = build_loop(c(3, I64), c(True), body, merged=[(acc, init, r_acc)], last=[r_acc],
                         condition_result=r_cond)
    xml, weights = save(model([ops.atan(last)], [init]), tmp_path)
    with pytest.raises(NotSupportedError, match=r"Asin \(.*\), Atan \("):
        _load(xml, weights)


@pytest.mark.parametrize("edit,error,problem", [
    (('auto_broadcast="numpy"', 'auto_broadcast="none"'), "DataError", 'auto_broadcast "none" needs equal shapes'),
    (('auto_broadcast="numpy"', 'auto_broadcast="pdpd"'), "NotSupportedError", "auto_broadcast 'pdpd'"),
    (('element_type="f32"', 'element_type="bf16"'), "NotSupportedError", "element type 'bf16'"),
])
def test_attribute_errors_name_the_layer(tmp_path, edit, error, problem):
    from webnn_py.base import errors
    x, y = p("x", (2, 3)), p("y", (3,))
    xml, weights = save(model([ops.add(x, y)], [x, y]), tmp_path)
    text = xml.decode()
    assert edit[0] in text
    with pytest.raises(getattr(errors, error), match=problem):
        _load(text.replace(edit[0], edit[1], 1).encode(), weights)
