"""The translators of opsets 1-15 beyond the Loop basics (registry.TRANSLATORS),
one IR model per case built with openvino's Python API, against OpenVINO's CPU
plugin (f32 inference precision): activations, math, reductions,
normalizations, pooling, Interpolate, convolutions, data movement, indexed
reads/writes, Einsum; and the cases each translator refuses, by name."""
from __future__ import annotations

import numpy as np
import pytest

from .helpers import c, compare, model, ours, p, save

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset15")
ops1 = pytest.importorskip("openvino.opset1")
ops2 = pytest.importorskip("openvino.opset2")
ops8 = pytest.importorskip("openvino.opset8")
ops10 = pytest.importorskip("openvino.opset10")
F32, I32, I64 = np.float32, np.int32, np.int64
rng = np.random.default_rng(11)


def normal(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(F32)


X4 = normal(2, 6, 5, 4)
X3 = normal(2, 3, 4, scale=2)


def unary(build, x=X3):
    def make():
        node = p("x", x.shape)
        outs = build(node)
        return model(outs if isinstance(outs, list) else [outs], [node]), {"x": x}
    return make


SPECIAL = np.array([[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4999, -0.4999, 3.7, -3.2, 0.0, 7.5]], F32)


def _recurrent(kind: str, direction: str, **options):
    """An LSTMSequence / GRUSequence over run-time input and initial states."""
    dirs, batch, steps, size, hidden = (2 if direction == "bidirectional" else 1), 2, 5, 3, 4
    gates = {"lstm": 4, "gru": 3, "rnn": 1}[kind]
    x, h0 = p("x", (batch, steps, size)), p("h0", (batch, dirs, hidden))
    lengths = c(np.full(batch, steps, I32))
    w, r = c(normal(dirs, gates * hidden, size)), c(normal(dirs, gates * hidden, hidden))
    feeds = {"x": normal(batch, steps, size), "h0": normal(batch, dirs, hidden)}
    if kind == "lstm":
        c0 = p("c0", (batch, dirs, hidden))
        node = ops.lstm_sequence(x, h0, c0, lengths, w, r, c(normal(dirs, 4 * hidden)), hidden, direction)
        return model(node.outputs(), [x, h0, c0]), {**feeds, "c0": normal(batch, dirs, hidden)}
    if kind == "rnn":
        node = ops.rnn_sequence(x, h0, lengths, w, r, c(normal(dirs, hidden)), hidden, direction, **options)
        return model(node.outputs(), [x, h0]), feeds
    bias = c(normal(dirs, (4 if options.get("linear_before_reset") else 3) * hidden))
    node = ops.gru_sequence(x, h0, lengths, w, r, bias, hidden, direction, **options)
    return model(node.outputs(), [x, h0]), feeds


def _cells():
    x, h0, c0 = p("x", (2, 3)), p("h0", (2, 4)), p("c0", (2, 4))
    lstm = ops.lstm_cell(x, h0, c0, c(normal(16, 3)), c(normal(16, 4)), c(normal(16)), 4,
                         activations=["sigmoid", "relu", "tanh"])
    gru = ops.gru_cell(x, h0, c(normal(12, 3)), c(normal(12, 4)), c(normal(16)), 4, linear_before_reset=True)
    gru_plain = ops.gru_cell(x, h0, c(normal(12, 3)), c(normal(12, 4)), c(normal(12)), 4)
    rnn = ops.rnn_cell(x, h0, c(normal(4, 3)), c(normal(4, 4)), c(normal(4)), 4, ["tanh"], [], [])
    return (model([*lstm.outputs(), gru, gru_plain, rnn], [x, h0, c0]),
            {"x": normal(2, 3), "h0": normal(2, 4), "c0": normal(2, 4)})


def _color(dtype):
    """NV12 and I420 to RGB and BGR, one plane and separate planes (a 4 x 6 image, batch 2)."""
    values = lambda *shape: rng.integers(0, 256, shape).astype(dtype)
    single, y = p("single", (2, 6, 6, 1), dtype), p("y", (2, 4, 6, 1), dtype)
    uv, u, v = p("uv", (2, 2, 3, 2), dtype), p("u", (2, 2, 3, 1), dtype), p("v", (2, 2, 3, 1), dtype)
    outs = [ops.nv12_to_rgb(single), ops.nv12_to_bgr(y, uv), ops.i420_to_rgb(single), ops.i420_to_bgr(y, u, v)]
    return model(outs, [single, y, uv, u, v]), {"single": values(2, 6, 6, 1), "y": values(2, 4, 6, 1),
                                                 "uv": values(2, 2, 3, 2), "u": values(2, 2, 3, 1),
                                                 "v": values(2, 2, 3, 1)}


def _ctc_scores(steps: int, batch: int) -> np.ndarray:
    """[T, N, 5] scores whose argmax walks a path with repeats and blanks (class 4)."""
    path = np.array([[1, 1, 4, 1, 2, 2, 0], [4, 3, 3, 4, 0, 0, 2]]).T[:steps, :batch]
    scores = rng.random((steps, batch, 5)).astype(F32)
    np.put_along_axis(scores, path[..., None], 2.0, axis=2)
    return scores


CASES = {
    # -- activations and math --
    "math": unary(lambda x: [ops.abs(x), ops.ceiling(x), ops.floor(x), ops.cos(x), ops.sin(x), ops.tan(x),
                             ops.erf(x), ops.exp(x), ops.negative(x), ops.sign(x), ops.sinh(x), ops.cosh(x),
                             ops.log(ops.add(ops.abs(x), c(0.5, F32))), ops.sqrt(ops.abs(x))]),
    "round": unary(lambda x: [ops.round(x, "half_to_even"), ops.round(x, "half_away_from_zero")], SPECIAL),
    "gelu": unary(lambda x: [ops.gelu(x, "erf"), ops.gelu(x, "tanh"), ops1.gelu(x) if hasattr(ops1, "gelu") else
                             pytest.importorskip("openvino.opset2").gelu(x)]),
    "activations": unary(lambda x: [ops.hswish(x), ops.hsigmoid(x), ops.swish(x), ops.swish(x, c(1.7, F32)),
                                    ops.mish(x), ops.elu(x, 0.7), ops.clamp(x, -0.6, 1.2), ops.softplus(x),
                                    ops.softsign(x), ops.hard_sigmoid(x, c(0.3, F32), c(0.4, F32)),
                                    ops.selu(x, c(1.6, F32), c(1.05, F32)), ops.log_softmax(x, 1),
                                    ops.log_softmax(x, -1)]),
    "prelu-channel": unary(lambda x: ops.prelu(x, c([0.1, -0.2, 0.3, 0.5, 0.7, 2.0], F32)), X4),
    "prelu-broadcast": unary(lambda x: ops.prelu(x, c(normal(3, 4)))),
    "clamp-int": lambda: (lambda x: (model([ops.clamp(x, -3.5, 7.2)], [x]),
                                     {"x": rng.integers(-10, 10, (3, 4)).astype(I32)}))(p("x", (3, 4), I32)),
    "is-inf-nan": unary(lambda x: [ops.is_inf(x), ops.is_inf(x, {"detect_negative": False}),
                                   ops.is_inf(x, {"detect_positive": False}), ops.is_nan(x), ops.is_finite(x)],
                        np.array([[np.inf, -np.inf, np.nan, 1.0, -2.0, 0.0]], F32)),
    "binary-math": lambda: (lambda a, b: (model([ops.power(ops.abs(a), b), ops.squared_difference(a, b),
                                                 ops.floor_mod(a, b), ops.mod(a, b), ops.maximum(a, b),
                                                 ops.minimum(a, b)], [a, b]),
                                          {"a": normal(3, 4, scale=3), "b": np.abs(normal(4)) + 0.5}))(
        p("a", (3, 4)), p("b", (4,))),
    "int-mod": lambda: (lambda a, b: (model([ops.floor_mod(a, b), ops.mod(a, b)], [a, b]),
                                      {"a": rng.integers(-20, 20, (3, 4)).astype(I32),
                                       "b": np.array([3, -4, 5, -7], I32)}))(p("a", (3, 4), I32), p("b", (4,), I32)),
    "convert-like": lambda: (lambda a, b: (model([ops.convert_like(a, b)], [a, b]),
                                           {"a": normal(3, 4, scale=5), "b": np.zeros(2, I32)}))(
        p("a", (3, 4)), p("b", (2,), I32)),
    # -- reductions and normalizations --
    "reductions": unary(lambda x: [ops.reduce_max(x, c([1], I64), False), ops.reduce_min(x, c([-1, 0], I64), True),
                                   ops.reduce_sum(x, c([0, 2], I64), False), ops.reduce_mean(x, c([2], I64), True),
                                   ops.reduce_prod(x, c([1], I64), False), ops.reduce_l1(x, c([1, 2], I64), False),
                                   ops.reduce_l2(x, c([0], I64), True)]),
    "reduce-logical": lambda: (lambda b: (model([ops.reduce_logical_and(b, c([1], I64), False),
                                                 ops.reduce_logical_or(b, c([0, 1], I64), True)], [b]),
                                          {"b": rng.random((3, 4)) > 0.3}))(p("b", (3, 4), np.bool_)),
    "mvn-6": unary(lambda x: [ops.mvn(x, c([2, 3], I64), True, 1e-3, "inside_sqrt"),
                              ops.mvn(x, c([1, 2, 3], I64), True, 1e-3, "outside_sqrt"),
                              ops.mvn(x, c([-1], I64), False, 1e-3, "inside_sqrt")], X4),
    "mvn-1": unary(lambda x: [ops2.mvn(x, across_channels=True, normalize_variance=True, eps=1e-3),
                              ops2.mvn(x, across_channels=False, normalize_variance=False, eps=1e-3)], X4),
    "batch-norm": unary(lambda x: [ops.batch_norm_inference(x, c(normal(6)), c(normal(6)), c(normal(6)),
                                                            c(np.abs(normal(6)) + 0.1), 1e-3),
                                   ops1.batch_norm_inference(x, c(normal(6)), c(normal(6)), c(normal(6)),
                                                             c(np.abs(normal(6)) + 0.1), 1e-3)], X4),
    "normalize-l2": unary(lambda x: [ops.normalize_l2(x, c([1], I64), 1e-4, "add"),
                                     ops.normalize_l2(x, c([2, 3], I64), 10.0, "max")], X4),
    "lrn": unary(lambda x: [ops.lrn(x, c([1], I64), 0.3, 0.5, 2.0, 5), ops.lrn(x, c([1], I64), 0.3, 0.5, 2.0, 4),
                            ops.lrn(x, c([2, 3], I64), 1e-1, 0.75, 1.0, 3)], X4),
    "cumsum": unary(lambda x: [ops.cumsum(x, c(1, I64)), ops.cumsum(x, c(-1, I64), exclusive=True),
                               ops.cumsum(x, c(0, I32), reverse=True, exclusive=True)]),
    "topk-1": unary(lambda x: [*ops.topk(x, c(1, I64), 1, "max", "value").outputs(),
                               *ops.topk(x, c(1, I64), -1, "min", "none", "i64").outputs()]),
    "topk": unary(lambda x: [*ops.topk(x, c(3, I64), -1, "max", "value").outputs(),
                             *ops.topk(x, c(2, I64), 1, "min", "value", "i64").outputs(),
                             *ops.topk(x, c(3, I64), 2, "max", "index").outputs(),
                             *ops.topk(x, c(4, I32), 2, "min", "index", "i64").outputs(),
                             *ops.topk(x, c(2, I64), 0, "max", "none").outputs()]),
    "topk-ties": lambda: (lambda x: (model([*ops.topk(x, c(3, I64), 1, "max", "value", stable=True).outputs(),
                                            *ops.topk(x, c(4, I64), 1, "min", "index", stable=True).outputs()],
                                           [x]),
                                     {"x": np.array([[1, 3, 3, 0, 1, 3], [2, 2, 2, 2, 1, 0]], F32)}))(p("x", (2, 6))),
    "topk-int": lambda: (lambda x: (model([*ops.topk(x, c(3, I64), 1, "max", "value").outputs()], [x]),
                                    {"x": rng.integers(-50, 50, (3, 7)).astype(I32)}))(p("x", (3, 7), I32)),
    # -- pooling --
    "max-pool-1": unary(lambda x: [ops1.max_pool(x, [2, 2], [0, 0], [0, 0], [2, 2], "floor"),
                                   ops1.max_pool(x, [2, 1], [1, 0], [1, 1], [3, 2], "ceil"),
                                   ops1.max_pool(x, [2, 2], [0, 0], [0, 0], [3, 3], "floor", "same_upper")], X4),
    "max-pool-8": unary(lambda x: [ops8.max_pool(x, [1, 2], [2, 1], [1, 0], [0, 1], [2, 2]).output(0),
                                   ops.max_pool(x, [2, 2], [1, 1], [1, 1], [1, 1], [3, 3],
                                                "ceil_torch").output(0)], X4),
    "avg-pool": unary(lambda x: [ops1.avg_pool(x, [2, 2], [1, 1], [1, 1], [3, 3], True),
                                 ops1.avg_pool(x, [2, 2], [1, 1], [1, 1], [3, 3], False),
                                 ops1.avg_pool(x, [2, 2], [0, 0], [0, 0], [3, 3], True, "ceil"),
                                 ops.avg_pool(x, [2, 2], [1, 1], [1, 1], [3, 3], False, "ceil_torch"),
                                 ops1.avg_pool(x, [1, 1], [0, 0], [0, 0], [2, 2], False, "floor", "same_lower")], X4),
    "pool-1d": unary(lambda x: [ops1.max_pool(x, [2], [1], [0], [3]), ops1.avg_pool(x, [1], [1], [1], [3], True)]),
    "adaptive-pool": unary(lambda x: [ops.adaptive_avg_pool(x, c([3, 2], I64)),
                                      ops.adaptive_avg_pool(x, c([1, 1], I64)),
                                      ops.adaptive_avg_pool(x, c([4, 3], I64)),
                                      ops.adaptive_max_pool(x, c([5, 2], I64), "i32").output(0)], X4),
    # -- Interpolate --
    "interpolate-11-resample2d": unary(lambda x: [
        ops.interpolate(x, c([10, 8], I64), "nearest", "sizes", axes=c([2, 3], I64)),
        ops.interpolate(x, c([10, 8], I64), "linear_onnx", "sizes", axes=c([2, 3], I64)),
        ops.interpolate(x, c([2.0, 2.0], F32), "linear_onnx", "scales", axes=c([2, 3], I64)),
        ops.interpolate(x, c([3, 7], I64), "linear_onnx", "sizes", axes=c([2, 3], I64)),
    ], X4),
    "interpolate-11-gathers": unary(lambda x: [
        ops.interpolate(x, c([10, 8], I64), "nearest", "sizes", coordinate_transformation_mode="asymmetric",
                        nearest_mode="floor", axes=c([2, 3], I64)),
        ops.interpolate(x, c([3, 3], I64), "nearest", "sizes", coordinate_transformation_mode="asymmetric",
                        nearest_mode="ceil", axes=c([2, 3], I64)),
        ops.interpolate(x, c([9, 7], I64), "linear_onnx", "sizes", coordinate_transformation_mode="align_corners",
                        axes=c([2, 3], I64)),
        ops.interpolate(x, c([7, 9], I64), "linear_onnx", "sizes", coordinate_transformation_mode="asymmetric",
                        axes=c([2, 3], I64)),
        ops.interpolate(x, c([8, 6], I64), "cubic", "sizes", axes=c([2, 3], I64)),
        ops.interpolate(x, c([12], I64), "nearest", "sizes", coordinate_transformation_mode="tf_half_pixel_for_nn",
                        nearest_mode="round_prefer_ceil", axes=c([1], I64)),
        ops.interpolate(x, c([3, 10, 8], I64), "nearest", "sizes", nearest_mode="simple", axes=c([1, 2, 3], I64)),
        ops.interpolate(x, c([7], I64), "linear_onnx", "sizes", coordinate_transformation_mode="pytorch_half_pixel",
                        axes=c([3], I64)),
    ], X4),
    "interpolate-1": unary(lambda x: [
        ops1.interpolate(x, c(size, I64), {"axes": [2, 3], "mode": mode, "align_corners": align, "antialias": False})
        for mode in ("nearest", "linear", "cubic") for align in (False, True) for size in ([12, 10], [4, 3], [9, 7])],
        X4),
    "interpolate-4": unary(lambda x: [
        ops10.interpolate(x, c([10, 8], I64), c([2.0, 2.0], F32), "nearest", "sizes", axes=c([2, 3], I64)),
        ops10.interpolate(x, c([1, 1, 1, 1], I64), c([1.0, 1.0, 2.0, 1.5], F32), "linear_onnx", "scales"),
        ops10.interpolate(x, c([10, 8], I64), c([2.0, 2.0], F32), "linear", "sizes", axes=c([2, 3], I64)),
        ops10.interpolate(x, c([3, 9], I64), c([2.0, 2.0], F32), "cubic", "sizes", pads_begin=[0, 0, 1, 0],
                          pads_end=[0, 0, 0, 2], coordinate_transformation_mode="asymmetric", axes=c([2, 3], I64)),
    ], X4),
    # -- convolutions --
    "group-conv": unary(lambda x: [ops.group_convolution(x, c(normal(3, 2, 2, 3, 3)), [1, 2], [1, 0], [1, 1], [1, 1]),
                                   ops.group_convolution(x, c(normal(6, 1, 1, 3, 3)), [1, 1], [0, 0], [0, 0], [2, 1],
                                                         "same_upper")], X4),
    "deconv": unary(lambda x: [
        ops.convolution_backprop_data(x, c(normal(6, 3, 3, 3)), [2, 2], pads_begin=[1, 0], pads_end=[0, 1],
                                      dilations=[1, 1], output_padding=[1, 0]),
        ops.convolution_backprop_data(x, c(normal(6, 2, 2, 3)), [1, 2], pads_begin=[0, 0], pads_end=[0, 0],
                                      dilations=[2, 1]),
        ops.convolution_backprop_data(x, c(normal(6, 2, 3, 3)), [2, 2], output_shape=c([9, 8], I64),
                                      auto_pad="same_upper"),
        ops.convolution_backprop_data(x, c(normal(6, 2, 3, 3)), [2, 2], output_shape=c([10, 8], I64),
                                      auto_pad="same_lower"),
        ops.group_convolution_backprop_data(x, c(normal(2, 3, 2, 3, 3)), [2, 1], pads_begin=[1, 1],
                                            pads_end=[1, 1], dilations=[1, 1]),
    ], X4),
    # -- data movement --
    "slice-8": unary(lambda x: [ops.slice(x, c([1, -1], I64), c([3, -5], I64), c([1, -2], I64), c([1, 2], I64)),
                                ops.slice(x, c([0], I64), c([100], I64), c([2], I64))]),
    "pad": unary(lambda x: [ops.pad(x, c([0, 1, 2], I64), c([1, 0, 1], I64), "constant", c(1.5, F32)),
                            ops.pad(x, c([0, 1, 2], I64), c([1, 0, 1], I64), "edge"),
                            ops.pad(x, c([1, 1, 2], I64), c([1, 2, 1], I64), "reflect"),
                            ops.pad(x, c([0, -1, 2], I64), c([-1, 1, -2], I64), "constant")]),
    "broadcast": unary(lambda x: [ops.broadcast(x, c([4, 2, 3, 4], I64)),
                                  ops.broadcast(x, c([2, 1, 1], I64), broadcast_spec="BIDIRECTIONAL"),
                                  ops.broadcast(ops.reduce_sum(x, c([0, 2], I64), False), c([2, 3, 5], I64),
                                                c([1], I64), "EXPLICIT")]),
    "tile": unary(lambda x: [ops.tile(x, c([2, 1, 3], I64)), ops.tile(x, c([2, 1, 1, 2], I64)),
                             ops.tile(x, c([3], I64))]),
    "split": unary(lambda x: [*ops.split(x, c(2, I64), 2).outputs(),
                              *ops.variadic_split(x, c(-2, I64), c([1, -1], I64)).outputs(),
                              *ops.split(x, c(0, I64), 1).outputs()]),
    "shape-of-range": unary(lambda x: [
        ops.reshape(x, ops.concat([ops.gather(ops.shape_of(x), c([0], I64), c(0, I64)), c([-1], I64)], 0), False),
        ops.add(ops.reduce_sum(x, c([0, 1], I64), False), ops.range(c(0, F32), c(2, F32), c(0.5, F32), "f32")),
        ops.shape_of(x, "i32"),
        ops.multiply(x, ops.convert(ops.range(c(1, I32), c(5, I32), c(1, I32), "i32"), "f32")),
        ops.gather(x, ops1.range(c(2, I64), c(-1, I64), c(-1, I64)), c(2, I64)),
    ]),
    "depth-space": unary(lambda x: [ops.depth_to_space(x, "blocks_first", 2), ops.depth_to_space(x, "depth_first", 2),
                                    ops.space_to_depth(ops.depth_to_space(x, "depth_first", 2), "blocks_first", 2),
                                    ops.space_to_depth(x[:, :, :4, :] if False else
                                                       ops.slice(x, c([0], I64), c([4], I64), c([1], I64),
                                                                 c([2], I64)), "depth_first", 2)],
                         normal(2, 8, 5, 4)),
    # -- indexed reads and writes --
    "gather-nd": unary(lambda x: [ops.gather_nd(x, c([[1, 0], [0, -1]], I64)),
                                  ops.gather_nd(x, c([[[2], [0]], [[1], [1]]], I32), 1),
                                  ops8.gather_nd(x, c([[[2, 1], [0, 3]], [[1, -1], [1, 0]]], I32), 1),
                                  pytest.importorskip("openvino.opset5").gather_nd(
                                      x, c([[[2, 1], [0, 3]], [[1, -1], [1, 0]]], I32), 1)]),
    "gather-elements": unary(lambda x: [ops.gather_elements(x, c(rng.integers(-3, 3, (2, 2, 4)), I64), 1),
                                        ops.gather_elements(x, c(rng.integers(0, 4, (2, 3, 5)), I32), 2)]),
    "run-time-indices-and-filters": lambda: (lambda x, ge, sn, se, w, lw: (model([
        ops.gather_elements(x, ge, 1), ops.scatter_nd_update(x, sn, c(normal(2, 4))),
        ops.scatter_elements_update(x, se, c(normal(2, 1, 4)), c(1, I64)),
        ops.group_convolution(ops.reshape(x, c([1, 6, 2, 2], I64), False), w, [1, 1], [0, 0], [0, 0], [1, 1]),
        *ops.lstm_sequence(ops.reshape(x, c([2, 3, 4], I64), False), c(np.zeros((2, 1, 2), F32)),
                           c(np.zeros((2, 1, 2), F32)), c([3, 3], I32), lw, c(normal(1, 8, 2)), c(normal(1, 8)), 2,
                           "forward").outputs()], [x, ge, sn, se, w, lw]),
        {"x": X3, "ge": np.array([[[0, -1, 2, 1]], [[-3, 1, 1, 0]]], I32), "sn": np.array([[1, -1], [0, 0]], I64),
         "se": np.array([[[2, 0, -1, 1]], [[0, 1, 2, -3]]], I64), "w": normal(3, 2, 2, 2, 2),
         "lw": normal(1, 8, 4)}))(
        p("x", X3.shape), p("ge", (2, 1, 4), I32), p("sn", (2, 2), I64), p("se", (2, 1, 4), I64),
        p("w", (3, 2, 2, 2, 2)), p("lw", (1, 8, 4))),
    "dynamic-gather-nd": lambda: (lambda x, i: (model([ops.gather_nd(x, i)], [x, i]),
                                                {"x": X3, "i": np.array([[1, -1], [0, 2], [-2, 0]], I32)}))(
        p("x", X3.shape), p("i", (3, 2), I32)),
    "scatter": unary(lambda x: [
        ops.scatter_update(x, c([2, 0], I64), c(normal(2, 2, 4)), c(1, I64)),
        ops.scatter_update(x, c([[1], [3]], I32), c(normal(2, 3, 2, 1)), c(-1, I64)),
        ops.scatter_nd_update(x, c([[1, 2], [0, -1]], I64), c(normal(2, 4))),
        ops.scatter_nd_update(x, c([[0, 1, 3]], I32), c([9.0], F32)),
        ops.scatter_elements_update(x, c([[[0, 1, 2, 0]], [[2, 2, 1, 0]]], I64), c(normal(2, 1, 4)), c(1, I64)),
    ]),
    "attention": lambda: (lambda q, k, v, bm, fm: (model([
        ops.scaled_dot_product_attention(q, k, v, causal=False),
        ops.scaled_dot_product_attention(q, k, v, causal=True),
        ops.scaled_dot_product_attention(q, k, v, bm, causal=False),
        ops.scaled_dot_product_attention(q, k, v, fm, c(0.3, F32), causal=False)], [q, k, v, bm, fm]),
        {"q": normal(2, 3, 5, 8), "k": normal(2, 3, 6, 8), "v": normal(2, 3, 6, 4),
         "bm": np.tril(np.ones((5, 6), bool), 1), "fm": normal(1, 1, 5, 6)}))(
        p("q", (2, 3, 5, 8)), p("k", (2, 3, 6, 8)), p("v", (2, 3, 6, 4)), p("bm", (5, 6), np.bool_),
        p("fm", (1, 1, 5, 6))),
    "fake-quantize": unary(lambda x: [ops.fake_quantize(x, c(-1.0, F32), c(1.5, F32), c(-2.0, F32), c(2.0, F32), 11),
                                      ops.fake_quantize(x, c(normal(1, 3, 1) - 1), c(np.abs(normal(1, 3, 1)) + 0.5),
                                                        c(0.0, F32), c(255.0, F32), 256)]),
    "group-norm": unary(lambda x: [ops.group_normalization(x, c(normal(6)), c(normal(6)), 3, 1e-4),
                                   ops.group_normalization(x, c(normal(6)), c(normal(6)), 6, 1e-2),
                                   ops.grn(x, 0.5)], X4),
    "shuffle-roll": unary(lambda x: [ops.shuffle_channels(x, 1, 3), ops.shuffle_channels(x, -1, 2),
                                     ops.roll(x, c([2, -1], I64), c([3, 2], I64)),
                                     ops.roll(x, c([5, 5], I32), c([1, 1], I32))], X4),
    "eye": unary(lambda x: [ops.add(x, ops.eye(c(3, I32), c(4, I32), c(1, I32), "f32")),
                            ops.multiply(x, ops.eye(c(3, I64), c(4, I64), c(-1, I64), "f32", c([2], I64)))]),
    "one-hot-bucketize": lambda: (lambda i, x: (model([
        ops.one_hot(i, c(5, I64), c(2.5, F32), c(-1.0, F32), -1), ops.one_hot(i, c(4, I32), c(7, I32), c(0, I32), 0),
        ops.bucketize(x, c([-1.0, 0.0, 0.5, 2.0], F32)), ops.bucketize(x, c([-1.0, 0.0, 0.5], F32), "i32", False)],
        [i, x]), {"i": np.array([[0, 3, -1], [4, 7, 1]], I64),
                  "x": np.array([[-2.0, -1.0, 0.0, 0.25, 0.5, 3.0]], F32)}))(p("i", (2, 3), I64), p("x", (1, 6))),
    "lstm-sequence": lambda: _recurrent("lstm", "forward"),
    "lstm-sequence-bidirectional": lambda: _recurrent("lstm", "bidirectional"),
    "gru-sequence-reverse": lambda: _recurrent("gru", "reverse"),
    "gru-sequence-linear-before-reset": lambda: _recurrent("gru", "bidirectional", linear_before_reset=True),
    "cells": lambda: _cells(),
    "rnn-sequence": lambda: _recurrent("rnn", "forward"),
    "rnn-sequence-bidirectional": lambda: _recurrent("rnn", "bidirectional", activations=["relu"]),
    "space-batch": unary(lambda x: [
        ops.space_to_batch(x, c([1, 2, 3, 2], I64), c([0, 0, 1, 0], I64), c([0, 0, 0, 0], I64)),
        ops.batch_to_space(ops.space_to_batch(x, c([1, 3, 1, 2], I64), c([0, 0, 0, 1], I64), c([0, 0, 0, 1], I64)),
                           c([1, 3, 1, 2], I64), c([0, 0, 0, 1], I64), c([0, 0, 0, 1], I64)),
        ops.batch_to_space(x, c([1, 1, 2, 1], I64), c([0, 1, 0, 0], I64), c([0, 2, 3, 1], I64))], X4),
    "reverse-sequence": unary(lambda x: [ops.reverse_sequence(x, c([3, 1], I32), 0, 1),
                                         ops.reverse_sequence(x, c([4, 0, 2], I64), 1, 2),
                                         ops.reverse_sequence(x, c([2, 1, 1, 2], I32), 2, 0)]),
    "search-sorted": lambda: (lambda s, v: (model([
        ops.search_sorted(s, v), ops.search_sorted(s, v, True),
        ops.search_sorted(c([-1.0, 0.0, 0.0, 2.0], F32), v, True)], [s, v]),
        {"s": np.sort(normal(2, 5), -1), "v": np.array([[-3.0, 0.0, 0.5, 5.0], [0.25, -0.5, 0.0, 1.0]], F32)}))(
        p("s", (2, 5)), p("v", (2, 4))),
    "embedding-bag": lambda: (lambda i, w: (model([
        ops.embedding_bag_packed_sum(c(normal(7, 3)), i), ops.embedding_bag_packed_sum(c(normal(7, 3)), i, w),
        ops.embedding_bag_packed(c(normal(7, 2, 2)), i, reduction="mean")], [i, w]),
        {"i": np.array([[0, 6, 2], [3, 3, 1]], I32), "w": normal(2, 3)}))(p("i", (2, 3), I32), p("w", (2, 3))),
    "embedding-offsets-segments": lambda: (lambda i, o, sid, w: (model([
        ops.embedding_bag_offsets_sum(c(normal(7, 3)), i, o), ops.embedding_bag_offsets_sum(c(normal(7, 3)), i, o,
                                                                                          c(2, I32), w),
        ops.embedding_bag_offsets(c(normal(7, 2, 2)), i, o, c(5, I32), reduction="mean"),
        ops.embedding_segments_sum(c(normal(7, 3)), i, sid, c(4, I32)),
        ops.embedding_segments_sum(c(normal(7, 3)), i, sid, c(4, I32), c(6, I32), w)], [i, o, sid, w]),
        {"i": np.array([0, 6, 2, 3, 3, 1], I32), "o": np.array([0, 2, 2, 5], I32),
         "sid": np.array([0, 0, 1, 1, 3, 3], I32), "w": normal(6)}))(
        p("i", (6,), I32), p("o", (4,), I32), p("sid", (6,), I32), p("w", (6,))),
    "slice-scatter": unary(lambda x: [
        ops.slice_scatter(x, c(normal(2, 2, 2)), c([0, 1], I64), c([2, 4], I64), c([1, 2], I64), c([1, 2], I64)),
        ops.slice_scatter(x, c(normal(1, 3, 4)), c([-1], I64), c([-3], I64), c([-2], I64))]),
    "region-yolo": unary(lambda x: [ops.region_yolo(x, 4, 3, 3, False, [0, 2, 4], 1, 3),
                                    ops.region_yolo(x, 4, 3, 3, True, [0], 1, 3),
                                    ops.region_yolo(x, 4, 3, 3, True, [0], 2, 3)],
                         normal(2, 24, 3, 4, scale=3)),
    "reorg-yolo": unary(lambda x: [ops.reorg_yolo(x, [2]), ops.reorg_yolo(ops.tile(x, c([1, 9, 3, 3], I64)), [3])],
                        normal(2, 8, 6, 4)),
    "extract-image-patches": unary(lambda x: [ops.extract_image_patches(x, [2, 3], [1, 2], [1, 1], "valid"),
                                              ops.extract_image_patches(x, [3, 2], [2, 1], [2, 1], "same_upper"),
                                              ops.extract_image_patches(x, [2, 2], [2, 2], [1, 1], "same_lower")],
                                   X4),
    "color-f32": lambda: _color(F32),
    "color-u8": lambda: _color(np.uint8),
    "convert-promote-types": lambda: (lambda f, h, i, l, u, b, s: (model([
        *ops.convert_promote_types(f, i, True).outputs(), *ops.convert_promote_types(h, f).outputs(),
        *ops.convert_promote_types(u, i).outputs(), *ops.convert_promote_types(l, h, True).outputs(),
        *ops.convert_promote_types(u, h).outputs(),
        *ops.convert_promote_types(b, u).outputs(), *ops.convert_promote_types(i, l).outputs(),
        *ops.convert_promote_types(s, h, True, pytorch_scalar_promotion=True).outputs(),
        *ops.convert_promote_types(i, s, True, pytorch_scalar_promotion=True).outputs(),
        *ops.convert_promote_types(u, s, pytorch_scalar_promotion=True).outputs()], [f, h, i, l, u, b, s]),
        {"f": normal(2, 3), "h": normal(2, 3).astype(np.float16), "i": rng.integers(-9, 9, (2, 3)).astype(I32),
         "l": rng.integers(-9, 9, (2, 3)).astype(I64), "u": rng.integers(0, 9, (2, 3)).astype(np.uint8),
         "b": rng.random((2, 3)) > 0.5, "s": np.array(2.5, F32)}))(
        p("f", (2, 3)), p("h", (2, 3), np.float16), p("i", (2, 3), I32), p("l", (2, 3), I64),
        p("u", (2, 3), np.uint8), p("b", (2, 3), np.bool_), p("s", ())),
    "col2im": lambda: (lambda a, b: (model([
        ops.col2im(a, c([5, 4], I64), c([2, 3], I64)),
        ops.col2im(b, c([6, 5], I64), c([2, 2], I64), [2, 1], [1, 2], [1, 0], [0, 1])], [a, b]),
        {"a": normal(2, 12, 8), "b": normal(8, 12)}))(p("a", (2, 12, 8)), p("b", (8, 12))),
    "ctc-greedy": lambda: (lambda d, m, b, n: (model([
        ops.ctc_greedy_decoder(d, m), ops.ctc_greedy_decoder(d, m, False),
        *ops.ctc_greedy_decoder_seq_len(b, n).outputs(),
        *ops.ctc_greedy_decoder_seq_len(b, n, c(0, I32), False, "i64", "i64").outputs()], [d, m, b, n]),
        {"d": _ctc_scores(7, 2), "m": np.array([[1, 1], [1, 1], [1, 1], [1, 1], [1, 0], [1, 0], [0, 0]], F32),
         "b": np.transpose(_ctc_scores(7, 2), (1, 0, 2)).copy(),
         "n": np.array([6, 4], I32)}))(p("d", (7, 2, 5)), p("m", (7, 2)), p("b", (2, 7, 5)), p("n", (2,), I32)),
    "fourier": lambda: (lambda z, r: (model([
        ops.dft(z, c([1], I64)), ops.dft(z, c([0, 2], I64)), ops.dft(z, c([-1], I64), c([6], I64)),
        ops.idft(z, c([1, 2], I64)), ops.idft(z, c([2], I64), c([3], I64)),
        ops.rdft(r, c([1], I64)), ops.rdft(r, c([0, 1], I64)), ops.rdft(r, c([1], I64), c([5], I64))], [z, r]),
        {"z": normal(3, 5, 4, 2), "r": normal(4, 6)}))(p("z", (3, 5, 4, 2)), p("r", (4, 6))),
    "bitwise-boolean": lambda: (lambda a, b: (model([ops.bitwise_and(a, b), ops.bitwise_or(a, b),
                                                     ops.bitwise_xor(a, b), ops.bitwise_not(a)], [a, b]),
                                              {"a": rng.random((2, 3)) > 0.5, "b": np.array([True, False, True])}))(
        p("a", (2, 3), np.bool_), p("b", (3,), np.bool_)),
    "einsum": lambda: (lambda a, b, d: (model([
        ops.einsum([a, b], "bij,bjk->bik"), ops.einsum([a], "bij->jb"), ops.einsum([a, d], "bij,kj->bki"),
        ops.einsum([a, b], "bij,bjk->ik"), ops.einsum([a, d], "bij,kl->bik"), ops.einsum([a], "bij->ji"),
        ops.einsum([b, b], "bjk,bjk->bk")], [a, b, d]),
        {"a": normal(2, 3, 4), "b": normal(2, 4, 5), "d": normal(6, 4)}))(
        p("a", (2, 3, 4)), p("b", (2, 4, 5)), p("d", (6, 4))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_translator_matches_openvino(tmp_path, name):
    m, feeds = CASES[name]()
    compare(m, tmp_path, feeds)


# -- what the translators refuse ---------------------------------------------------------------------

REFUSED = {
    "topk-k-70": (lambda x: ops.topk(ops.tile(x, c([1, 1, 20], I64)), c(70, I64), 2, "max", "value").output(0),
                  "k = 70 needs sorting"),
    "symmetric-pad": (lambda x: ops.pad(x, c([0, 1, 0], I64), c([0, 1, 0], I64), "symmetric"),
                      "WebNN has no symmetric padding"),
    "max-pool-indices": (lambda x: ops.convert(ops8.max_pool(ops.unsqueeze(x, c(0, I64)), [1, 1], [1, 1], [0, 0],
                                                             [0, 0], [2, 2]).output(1), "f32"),
                         "the indices"),
    "adaptive-max-uneven": (lambda x: ops.adaptive_max_pool(x, c([3], I64), "i32").output(0),
                            "only sizes that divide"),
    "einsum-diagonal": (lambda x: ops.einsum([ops.matmul(x, x, False, True)], "bii->bi"), "diagonal"),
    "scatter-reduction": (lambda x: ops.scatter_nd_update(x, c([[0]], I64), c(normal(1, 3, 4)), "sum"),
                          "reduction 'sum'"),
    "interpolate-1-area": (lambda x: ops1.interpolate(x, c([4, 8], I64), {"axes": [1, 2], "mode": "area"}),
                           "mode 'area' is not supported"),
    "bitwise-integers": (lambda x: ops.convert(ops.bitwise_and(ops.convert(x, "i32"), c(3, I32)), "f32"),
                         "BitwiseAnd of integers is not supported"),
    "interpolate-antialias": (lambda x: ops.interpolate(x, c([2, 2], I64), "linear", "sizes", antialias=True,
                                                        axes=c([1, 2], I64)), "antialias"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_cases_are_not_supported_errors_naming_the_layer(tmp_path, name):
    from webnn_py.base.errors import NotSupportedError
    build, problem = REFUSED[name]
    x = p("x", X3.shape)
    xml, weights = save(model([build(x)], [x]), tmp_path)
    with pytest.raises(NotSupportedError, match=r"layer \d+ .*: .*" + problem):
        ours(xml, weights, {"x": X3})


def reduce_condition_loop(scale: float = 5.0):
    """(model, feeds) of the issue's example: a while loop whose condition is
    computed with ReduceMax and ReduceSum (halve x while its largest magnitude
    or its sum of squares is above a threshold), the states concatenated."""
    from .test_loop import build_loop
    state = p("state", (2, 3))
    halved = ops.multiply(state, c(0.5, F32))
    big = ops.greater(ops.reduce_max(ops.abs(halved), c([0, 1], I64), False), c(0.3, F32))
    heavy = ops.greater(ops.reduce_sum(ops.multiply(halved, halved), c([0, 1], I64), False), c(0.2, F32))
    r_state, r_cond = ops.result(halved), ops.result(ops.logical_or(big, heavy))
    r_each = ops.result(ops.unsqueeze(halved, c(0, I64)))
    body = ov.Model([r_state, r_each, r_cond], [state], "body")
    x = p("x", (2, 3))
    first = ops.greater(ops.reduce_max(ops.abs(x), c([0, 1], I64), False), c(0.3, F32))
    last, all_states = build_loop(c(-1, I64), first, body, merged=[(state, x, r_state)], last=[r_state],
                                  concat=[(r_each, 0)], condition_result=r_cond)
    return model([last, all_states], [x]), {"x": normal(2, 3, scale=scale)}


def test_loop_condition_from_reduce_max_and_reduce_sum_matches_openvino(tmp_path):
    for scale in (5.0, 40.0):
        m, feeds = reduce_condition_loop(scale)
        got = compare(m, tmp_path, feeds)
    assert max(v.shape[0] for v in got.values()) > 4          # the data decided many iterations


def test_round_half_away_from_zero_follows_the_text_hand_computed(tmp_path):
    """Round-5 half_away_from_zero: the nearest integer, halves away from zero.
    0.49999997 is below one half, so it rounds to 0 (OpenVINO's CPU plugin gives
    1 there, as floor(x + 0.5) does); the reference is decimal's ROUND_HALF_UP
    on the exact binary values."""
    from decimal import ROUND_HALF_UP, Decimal
    x = p("x", (1, 8))
    xml, weights = save(model([ops.round(x, "half_away_from_zero")], [x]), tmp_path)
    values = np.array([[0.49999997, -0.49999997, 2.5, -2.5, 1.4999999, 8388607.5, -0.5, 0.0]], F32)
    (got,) = ours(xml, weights, {"x": values}).values()
    expected = [float(Decimal(float(v)).quantize(Decimal(1), rounding=ROUND_HALF_UP)) for v in values[0]]
    np.testing.assert_array_equal(got[0], np.array(expected, F32))


def test_scatter_update_with_a_scalar_index_hand_computed(tmp_path):
    """ScatterUpdate-3 with a 0-d index (OpenVINO's CPU plugin refuses it):
    data[:, i, :] = updates along axis 1, i = -1 counting from the end."""
    x = p("x", X3.shape)
    updates = normal(2, 4)
    xml, weights = save(model([ops.scatter_update(x, c(-1, I64), c(updates), c(1, I64))], [x]), tmp_path)
    (got,) = ours(xml, weights, {"x": X3}).values()
    expected = X3.copy()
    expected[:, 2, :] = updates
    np.testing.assert_array_equal(got, expected)


def test_lrn_follows_the_text_hand_computed(tmp_path):
    """LRN-1 across channels: x / (bias + alpha / size * sum of x^2 over the
    channels c - 2 .. c + 2)^beta. (OpenVINO's CPU plugin leaves bias 1.5 out
    with these attributes, though it applies bias 2 with others.)"""
    x = p("x", X4.shape)
    xml, weights = save(model([ops.lrn(x, c([1], I64), 1e-2, 0.75, 1.5, 5)], [x]), tmp_path)
    (got,) = ours(xml, weights, {"x": X4}).values()
    wide = X4.astype(np.float64)
    sums = np.stack([(wide[:, max(0, k - 2):k + 3] ** 2).sum(1) for k in range(6)], 1)
    np.testing.assert_allclose(got, wide / (1.5 + 1e-2 / 5 * sums) ** 0.75, rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", ["activations", "reductions", "mvn-6", "avg-pool", "max-pool-8", "adaptive-pool",
                                  "interpolate-11-gathers", "deconv", "pad", "split", "scatter", "einsum", "attention",
                                  "lstm-sequence-bidirectional", "space-batch", "slice-scatter", "gather-nd",
                                  "topk", "color-u8", "embedding-offsets-segments", "col2im", "convert-promote-types",
                                  "region-yolo", "extract-image-patches", "rnn-sequence-bidirectional"])
def test_mutated_files_fail_cleanly(tmp_path, name):
    """Attribute values and bytes of each model changed at random: load() and
    compute() work or fail with a DOMException, never anything else."""
    import random
    from .helpers import mutated_outcomes
    xml, weights = save(CASES[name]()[0], tmp_path)
    outcomes = mutated_outcomes(xml, weights, random.Random(name), 150)
    assert outcomes.count("load") > 5


@pytest.mark.parametrize("build", [
    lambda x: ops.interpolate(x, c([2**40, 4], I64), "nearest", "sizes", axes=c([1, 2], I64)),
    lambda x: ops.adaptive_avg_pool(x, c([2**33], I64)),
    lambda x: ops.one_hot(ops.convert(x, "i32"), c(2**40, I64), c(1.0, F32), c(0.0, F32), -1),
], ids=["interpolate", "adaptive-pool", "one-hot"])
def test_sizes_no_tensor_can_have_are_a_data_error(tmp_path, build):
    """Sizes from the model's constants are checked before any table of that
    size is built (they used to reach numpy: MemoryError)."""
    from webnn_py.base.errors import DataError
    x = p("x", X3.shape)
    xml, weights = save(model([build(x)], [x]), tmp_path)
    with pytest.raises(DataError, match=r"layer \d+ .*the output shape \[.*\] has"):
        ours(xml, weights, {"x": X3})


def test_unsafe_promotion_without_promote_unsafe_is_a_data_error(tmp_path):
    """ConvertPromoteTypes-14 refuses i32 with f32 unless promote_unsafe (as
    OpenVINO's own validation does, which is why the file is edited here)."""
    from webnn_py.base.errors import DataError
    f, i = p("f", (2, 3)), p("i", (2, 3), I32)
    xml, weights = save(model(ops.convert_promote_types(f, i, True).outputs(), [f, i]), tmp_path)
    text = xml.decode()
    assert 'promote_unsafe="true"' in text
    with pytest.raises(DataError, match=r"\(ConvertPromoteTypes\): int32 cannot be promoted to float32 exactly"):
        ours(text.replace('promote_unsafe="true"', 'promote_unsafe="false"').encode(), weights,
             {"f": normal(2, 3), "i": np.zeros((2, 3), I32)})
