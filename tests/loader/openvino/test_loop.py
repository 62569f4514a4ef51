"""Loop-5 IR models (built with openvino's Python API) through MLModelLoader vs
OpenVINO's CPU plugin; the rows where OpenVINO departs from the Loop-5 text
(negative slicing / concatenation axis, zero iterations, slicing start) vs
hand-computed references."""
from __future__ import annotations

import numpy as np
import pytest

from .helpers import compare, ours, save

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")
F32 = np.float32


def build_loop(trip, condition, body, *, sliced=(), merged=(), invariant=(), last=(), concat=(),
               current=-1, condition_result=None):
    """A Loop node: sliced = [(param, value, start, stride, part, end, axis)],
    merged = [(param, initial, result)], invariant = [(param, value)],
    last = [result], concat = [(result, axis)]. Returns the Loop's outputs."""
    loop = ops.loop(trip, condition)
    loop.set_function(body)
    results = list(body.get_results())
    loop.set_special_body_ports([current, results.index(condition_result)])
    for param, value, start, stride, part, end, axis in sliced:
        loop.set_sliced_input(param, _out(value), start, stride, part, end, axis)
    for param, initial, result in merged:
        loop.set_merged_input(param, _out(initial), result.output(0))
    for param, value in invariant:
        loop.set_invariant_input(param, _out(value))
    outs = [loop.get_iter_value(r.output(0), -1) for r in last]
    outs += [loop.get_concatenated_slices(r.output(0), 0, 1, 1, -1, axis) for r, axis in concat]
    return outs


def _out(value):
    return value.output(0) if hasattr(value, "get_output_size") else value


def counter_body(it_shape=(), it_type=np.int64):
    """acc' = acc * 2 + i; cond' = acc' < limit; y = acc' (for concatenation);
    i is the current_iteration Parameter, of the given shape and type."""
    acc = ops.parameter([1], np.int32, name="acc")
    it = ops.parameter(list(it_shape), it_type, name="it")
    limit = ops.parameter([1], np.int32, name="limit")
    nxt = ops.add(ops.multiply(acc, ops.constant(np.int32(2))), ops.convert(ops.reshape(it, ops.constant(
        np.array([1], np.int64)), False), "i32"))
    cond = ops.less(ops.squeeze(nxt, ops.constant(np.int64(0))), ops.squeeze(limit, ops.constant(np.int64(0))))
    r_acc, r_y, r_cond = ops.result(nxt), ops.result(ops.multiply(nxt, ops.constant(np.int32(1)))), ops.result(cond)
    body = ov.Model([r_acc, r_y, r_cond], [acc, it, limit], "body")
    return body, acc, it, limit, r_acc, r_y, r_cond


TRIP_FORMS = {"scalar-i32": ([], np.int32), "scalar-i64": ([], np.int64), "1d-i32": ([1], np.int32),
              "1d-i64": ([1], np.int64)}


FORMS = ["while", "do-while", "for", "for-with-condition", "for-runtime-trip"]


def forms_model(form: str, trip_form: str, cond_form: str):
    """(model, feeds) of one of Loop-5's terminating forms (the infinite one is
    the runaway test), with the trip count a scalar or 1-element i32/i64 tensor
    and the condition a scalar or 1-element boolean; the current iteration is an
    i64 scalar, or a 1-element i32 tensor with the 1-D condition. Every loop
    also concatenates its states, so a while loop's output size is decided at
    run time."""
    it_shape, it_type = ((), np.int64) if cond_form == "scalar" else ((1,), np.int32)
    body, acc, it, limit, r_acc, r_y, r_cond = counter_body(it_shape, it_type)
    if form in ("for", "for-runtime-trip"):
        # The body's condition is always true: only the trip count ends the loop.
        body = ov.Model([r_acc, r_y, ops.result(ops.constant(True))], [acc, it, limit], "body")
        r_acc, r_y, r_cond = body.get_results()
    trip_shape, trip_type = TRIP_FORMS[trip_form]
    cond_shape = [] if cond_form == "scalar" else [1]
    init = ops.parameter([1], np.int32, name="init")
    lim = ops.parameter([1], np.int32, name="lim")
    params = [init, lim]
    feeds = {"init": np.array([1], np.int32), "lim": np.array([200], np.int32)}
    if form == "for-runtime-trip":
        trip = ops.parameter(trip_shape, trip_type, name="n")
        params.append(trip)
        feeds["n"] = np.full(trip_shape, 4, trip_type)
    else:
        trip = ops.constant(np.full(trip_shape, {"while": -1, "do-while": -1, "for": 6,
                                                 "for-with-condition": 5}[form], trip_type))
    if form == "while":
        # The first condition is computed from the data, like the body's.
        condition = ops.reshape(ops.less(init, lim), ops.constant(np.array(cond_shape, np.int64)), False)
    elif form == "for-with-condition":
        condition = ops.parameter(cond_shape, np.bool_, name="go")
        params.append(condition)
        feeds["go"] = np.ones(cond_shape, np.bool_)
    else:
        condition = ops.constant(np.ones(cond_shape, np.bool_))
    last, ys = build_loop(trip, condition, body, merged=[(acc, init, r_acc)], invariant=[(limit, lim)],
                          last=[r_acc], concat=[(r_y, 0)], current=1, condition_result=r_cond)
    return ov.Model([ops.result(last), ops.result(ys)], params, "m"), feeds


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("trip_form", sorted(TRIP_FORMS))
@pytest.mark.parametrize("cond_form", ["scalar", "1d"])
def test_loop_forms_match_openvino(tmp_path, form, trip_form, cond_form):
    model, feeds = forms_model(form, trip_form, cond_form)
    got = compare(model, tmp_path, feeds)
    assert max(v.shape[0] for v in got.values()) > 1


def test_while_that_never_starts_gives_initial_values_and_empty_concatenation(tmp_path):
    """Loop-5 with a false execution condition: zero iterations. OpenVINO's CPU
    plugin fails on an empty concatenation; the spec's answer is computed by hand:
    the back-edged output is its initial value, the concatenation is empty."""
    body, acc, it, limit, r_acc, r_y, r_cond = counter_body()
    cond_in = ops.parameter([], np.bool_, name="go")
    init = ops.parameter([1], np.int32, name="init")
    lim = ops.parameter([1], np.int32, name="lim")
    last, ys = build_loop(ops.constant(np.int64(-1)), cond_in, body, merged=[(acc, init, r_acc)],
                          invariant=[(limit, lim)], last=[r_acc], concat=[(r_y, 0)], current=1, condition_result=r_cond)
    model = ov.Model([ops.result(last), ops.result(ys)], [cond_in, init, lim], "m")
    xml, weights = save(model, tmp_path)
    got = ours(xml, weights, {"go": np.zeros((), np.uint8), "init": np.array([7], np.int32),
                              "lim": np.array([200], np.int32)})
    values = sorted(got.values(), key=lambda v: v.size)
    assert values[0].shape == (0,) and values[0].dtype == np.int32
    np.testing.assert_array_equal(values[1], [7])
    # The same model with the condition true runs as OpenVINO does: 7 -> 14 -> 29 -> 60 -> 123 -> 250.
    got = ours(xml, weights, {"go": np.ones((), np.uint8), "init": np.array([7], np.int32),
                              "lim": np.array([200], np.int32)})
    values = sorted(got.values(), key=lambda v: v.size)
    np.testing.assert_array_equal(values[0], [250])
    np.testing.assert_array_equal(values[1], [14, 29, 60, 123, 250])


def test_trip_count_zero_gives_empty_concatenation(tmp_path):
    body, acc, it, limit, r_acc, r_y, r_cond = counter_body()
    init = ops.parameter([1], np.int32, name="init")
    lim = ops.parameter([1], np.int32, name="lim")
    last, ys = build_loop(ops.constant(np.int32(0)), ops.constant(True), body, merged=[(acc, init, r_acc)],
                          invariant=[(limit, lim)], last=[r_acc], concat=[(r_y, 0)], current=1, condition_result=r_cond)
    model = ov.Model([ops.result(last), ops.result(ys)], [init, lim], "m")
    xml, weights = save(model, tmp_path)
    got = ours(xml, weights, {"init": np.array([3], np.int32), "lim": np.array([5], np.int32)})
    values = sorted(got.values(), key=lambda v: v.size)
    assert values[0].shape == (0,)
    np.testing.assert_array_equal(values[1], [3])


def sliced_model(start=0, stride=1, part=1, end=-1, axis=0, trip=4, concat_axis=0):
    xi = ops.parameter([part, 3] if axis in (0, -2) else [4, part], F32, name="xi")
    acc = ops.parameter([part, 3], F32, name="acc") if axis in (0, -2) else ops.parameter([4, part], F32, name="acc")
    it = ops.parameter([], np.int64, name="it")
    total = ops.add(acc, xi)
    scaled = ops.multiply(xi, ops.convert(it, "f32"))
    r_total, r_scaled, r_cond = ops.result(total), ops.result(scaled), ops.result(ops.constant(True))
    body = ov.Model([r_total, r_scaled, r_cond], [xi, acc, it], "body")
    x = ops.parameter([6, 3] if axis in (0, -2) else [4, 6], F32, name="X")
    a = ops.parameter(acc.get_partial_shape().to_shape(), F32, name="A")
    last, cat = build_loop(ops.constant(np.int64(trip)), ops.constant(True), body,
                           sliced=[(xi, x.output(0), start, stride, part, end, axis)], merged=[(acc, a, r_total)],
                           last=[r_total], concat=[(r_scaled, concat_axis)], current=2, condition_result=r_cond)
    return ov.Model([ops.result(last), ops.result(cat)], [x, a], "m")


@pytest.mark.parametrize("stride,trip", [(1, 6), (2, 3)])
def test_sliced_input_back_edge_current_iteration_concat_match_openvino(tmp_path, stride, trip):
    model = sliced_model(stride=stride, trip=trip)
    x = np.arange(18, dtype=F32).reshape(6, 3) / 7
    compare(model, tmp_path, {"X": x, "A": np.ones((1, 3), F32)})


def test_reverse_slicing_matches_openvino(tmp_path):
    model = sliced_model(start=-1, stride=-1, end=0, trip=6)
    x = np.arange(18, dtype=F32).reshape(6, 3)
    compare(model, tmp_path, {"X": x, "A": np.zeros((1, 3), F32)})


def test_slicing_along_axis_1_matches_openvino(tmp_path):
    model = sliced_model(axis=1, trip=6, concat_axis=1)
    x = np.arange(24, dtype=F32).reshape(4, 6) - 5
    compare(model, tmp_path, {"X": x, "A": np.ones((4, 1), F32)})


def _by_size(got):
    return sorted(got.values(), key=lambda v: v.size)


def test_slicing_start_and_part_size_follow_the_port_map_hand_computed(tmp_path):
    """start/end/part_size of a sliced input (TensorIterator's port_map
    attributes, which OpenVINO's CPU Loop ignores or rejects): iteration i takes
    part_size rows from start + i*stride. Hand-computed."""
    model = sliced_model(part=1, trip=3)
    xml, weights = save(model, tmp_path)
    text = xml.decode()
    assert 'start="0" end="-1" stride="1" part_size="1"' in text
    # Rows 1, 3 (start 1, stride 2, end 4 inclusive): two iterations.
    edited = _edit_sliced_input(text, 'start="1" end="4" stride="2" part_size="1"')
    x = np.arange(18, dtype=F32).reshape(6, 3)
    got = _by_size(ours(edited.encode(), weights, {"X": x, "A": np.zeros((1, 3), F32)}))
    np.testing.assert_array_equal(got[0], x[1:2] + x[3:4])                  # the accumulated rows
    np.testing.assert_array_equal(got[1], np.stack([x[1] * 0, x[3] * 1]))  # row * iteration


def test_part_size_two_hand_computed(tmp_path):
    """part_size 2, stride 2 (OpenVINO's CPU plugin rejects part sizes above 1):
    iterations take rows (0,1), (2,3), (4,5). Hand-computed."""
    model = sliced_model(part=2, stride=2, trip=3)
    xml, weights = save(model, tmp_path)
    assert 'stride="2" part_size="2"' in xml.decode()
    x = np.arange(18, dtype=F32).reshape(6, 3)
    a = np.full((2, 3), 0.5, F32)
    acc, parts = a, []
    for i in range(3):
        rows = x[2 * i:2 * i + 2]
        acc = acc + rows
        parts.append(rows * i)
    values = _by_size(ours(xml, weights, {"X": x, "A": a}))
    np.testing.assert_array_equal(values[0], acc)
    np.testing.assert_array_equal(values[1], np.concatenate(parts))


def _edit_sliced_input(text: str, attributes: str) -> str:
    """The port_map's sliced <input> with other slicing attributes."""
    import re
    new, n = re.subn(r'(<input axis="0"[^>]*?) start="0" end="-1" stride="1" part_size="1"', r"\1 " + attributes, text)
    assert n == 1
    return new


def _set_param_shape(text: str, name: str, shape: str) -> str:
    import re
    pattern = re.compile(r'(<layer id="\d+" name="%s" type="Parameter" version="opset1">\s*<data shape=")[^"]*"' % name)
    new, n = pattern.subn(lambda m: m.group(1) + shape + '"', text)
    assert n == 1
    return new


@pytest.mark.parametrize("which", ["slicing", "concatenation"])
def test_negative_axes_count_from_the_end_hand_computed(tmp_path, which):
    """OpenVINO refuses a negative slicing axis and fails on a negative
    concatenation axis; Loop-5 says negative axes count from the end."""
    model = sliced_model(axis=1, trip=6, concat_axis=1)
    xml, weights = save(model, tmp_path)
    text = xml.decode()
    if which == "slicing":
        new = text.replace('<input axis="1"', '<input axis="-1"', 1)
    else:
        new = text.replace('<output axis="1"', '<output axis="-1"', 1)
    assert new != text
    x = np.arange(24, dtype=F32).reshape(4, 6) - 5
    a = np.ones((4, 1), F32)
    got = _by_size(ours(new.encode(), weights, {"X": x, "A": a}))
    np.testing.assert_array_equal(got[0], a + x.sum(axis=1, keepdims=True))
    np.testing.assert_array_equal(got[1], x * np.arange(6, dtype=F32))


def test_runaway_loop_rejects_with_operation_error(tmp_path):
    """Loop-5's infinite form (-1, true, the body's condition always true)."""
    acc = ops.parameter([1], F32, name="acc")
    r_acc, r_cond = ops.result(ops.add(acc, ops.constant(np.array([1], F32)))), ops.result(ops.constant(True))
    body = ov.Model([r_acc, r_cond], [acc], "body")
    init = ops.parameter([1], F32, name="init")
    (last,) = build_loop(ops.constant(np.int64(-1)), ops.constant(True), body, merged=[(acc, init, r_acc)],
                         last=[r_acc], condition_result=r_cond)
    xml, weights = save(ov.Model([ops.result(last)], [init], "m"), tmp_path)
    from webnn_py.base.errors import OperationError
    with pytest.raises(OperationError, match="maxIterations \\(100\\)"):
        ours(xml, weights, {"init": np.zeros(1, F32)}, maxIterations=100)


def test_dynamic_input_shape_is_specialised(tmp_path):
    """A Parameter with a dynamic dimension: one graph per concrete shape."""
    body, acc, it, limit, r_acc, r_y, r_cond = counter_body()
    x = ops.parameter([-1, 3], F32, name="X")
    y = ops.relu(ops.subtract(x, ops.constant(np.array([[1, 2, 3]], F32))))
    model = ov.Model([ops.result(y)], [x], "m")
    for rows in (1, 4):
        compare(model, tmp_path, {"X": np.linspace(-3, 5, rows * 3, dtype=F32).reshape(rows, 3)}, name=f"d{rows}")


def test_nested_loops_match_openvino(tmp_path):
    # Inner: 3 iterations adding 1; outer: 4 iterations of the inner loop, then doubling.
    iacc = ops.parameter([1, 2], F32, name="iacc")
    ir_acc, ir_cond = ops.result(ops.add(iacc, ops.constant(np.ones((1, 2), F32)))), ops.result(ops.constant(True))
    inner = ov.Model([ir_acc, ir_cond], [iacc], "inner")
    oacc = ops.parameter([1, 2], F32, name="oacc")
    (inner_out,) = build_loop(ops.constant(np.int64(3)), ops.constant(True), inner, merged=[(iacc, oacc, ir_acc)],
                              last=[ir_acc], condition_result=ir_cond)
    doubled = ops.multiply(inner_out, ops.constant(np.float32(2)))
    or_acc, or_cond = ops.result(doubled), ops.result(ops.constant(True))
    outer = ov.Model([or_acc, or_cond], [oacc], "outer")
    init = ops.parameter([1, 2], F32, name="init")
    last, cat = build_loop(ops.constant(np.int64(4)), ops.constant(True), outer, merged=[(oacc, init, or_acc)],
                           last=[or_acc], concat=[(or_acc, 0)], condition_result=or_cond)
    compare(ov.Model([ops.result(last), ops.result(cat)], [init], "m"), tmp_path, {"init": np.array([[0, 1]], F32)})
