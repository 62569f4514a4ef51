"""Issue 7's check "the same loops written with builder.loop(...) match": each of
Loop-5's terminating forms, written once as an IR model (test_loop.forms_model)
and once by hand with MLGraphBuilder.loop, gives OpenVINO's CPU results.

The builder types its outputs statically, so the concatenated output is written
only where the iteration count is a build-time constant (the "for" form: a
constant trip count and a constant, always-true condition); elsewhere the
builder rejects it (tests/ops/test_loop.py) and only the last-iteration value
is compared."""
from __future__ import annotations

import numpy as np
import pytest

from ...ops.test_loop import run
from .test_loop import FORMS, TRIP_FORMS, forms_model

ov = pytest.importorskip("openvino")

STATIC_COUNT = {"for": 6}   # the one form whose iteration count is known at build time (constant trip, constant true condition)


def openvino_outputs(model, feeds) -> list[np.ndarray]:
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled(feeds)
    return [np.asarray(result[out]) for out in compiled.outputs]


def builder_loop(form: str, trip_form: str, cond_form: str, feeds: dict) -> list[np.ndarray]:
    trip_shape, trip_type = TRIP_FORMS[trip_form]
    trip_type = np.dtype(trip_type).name
    cond_shape = [] if cond_form == "scalar" else [1]
    it_desc = ({"dataType": "int64", "shape": []} if cond_form == "scalar"
               else {"dataType": "int32", "shape": [1]})
    i32 = {"dataType": "int32", "shape": [1]}

    def body(b):
        # acc' = acc * 2 + i; y = acc'; cond' = acc' < limit ("for" forms: always true)
        acc, it = b.input("acc", i32), b.input("it", it_desc)
        nxt = b.add(b.mul(acc, b.constant("int32", 2)), b.cast(b.reshape(it, [1]), "int32"))
        if form in ("for", "for-runtime-trip"):
            cond = b.identity(b.constant({"dataType": "uint8", "shape": cond_shape},
                                         np.ones(cond_shape, np.uint8)))
        else:
            cond = b.reshape(b.cast(b.lesser(nxt, b.input("limit", i32)), "uint8"), cond_shape)
        return {"acc_out": nxt, "y": b.identity(nxt), "cond": cond}

    def outer(b, o, graph):
        if form == "for-runtime-trip":
            trip = o["n"]
        else:
            count = {"while": -1, "do-while": -1, "for": 6, "for-with-condition": 5}[form]
            trip = b.constant({"dataType": trip_type, "shape": list(trip_shape)},
                              np.full(trip_shape, count, trip_type))
        if form == "while":
            condition = b.reshape(b.cast(b.lesser(o["init"], o["lim"]), "uint8"), cond_shape)
        elif form == "for-with-condition":
            condition = o["go"]
        else:
            condition = b.constant({"dataType": "uint8", "shape": cond_shape}, np.ones(cond_shape, np.uint8))
        outputs = [{"bodyOutput": "acc_out"}]
        if form in STATIC_COUNT:
            outputs.append({"bodyOutput": "y", "axis": 0})
        bindings = [{"bodyInput": "acc", "value": o["init"]}]
        if form not in ("for", "for-runtime-trip"):   # only a body that reads limit has it as an input
            bindings.append({"bodyInput": "limit", "value": o["lim"]})
        return b.loop(trip, condition, graph, "cond", bindings, outputs, {"currentIteration": "it", "backEdges": [{"from": "acc_out", "to": "acc"}]})

    inputs = {name: value.astype(np.uint8) if value.dtype == np.bool_ else value for name, value in feeds.items()
              if not (name == "lim" and form in ("for", "for-runtime-trip"))}   # a graph has no unused inputs
    return run(body, outer, inputs)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("trip_form", sorted(TRIP_FORMS))
@pytest.mark.parametrize("cond_form", ["scalar", "1d"])
def test_builder_loop_matches_openvino(form, trip_form, cond_form):
    model, feeds = forms_model(form, trip_form, cond_form)
    expected = openvino_outputs(model, feeds)     # [last acc, concatenated ys]
    got = builder_loop(form, trip_form, cond_form, feeds)
    np.testing.assert_array_equal(got[0], expected[0])
    assert got[0].dtype == expected[0].dtype
    if form in STATIC_COUNT:
        assert expected[1].shape[0] == STATIC_COUNT[form]
        np.testing.assert_array_equal(got[1], expected[1])
