"""kernels.c's NHWC pooling (maxpool_nhwc, global_avgpool_nhwc) and per-channel scaling
(scale_channels_f32) as the compiler's specialised kernels for channels-last stacks: bit
for bit what the operators' numpy kernels compute, over windows, strides, dilations,
paddings, ceil rounding and special values, and against torch."""
import importlib

import numpy as np
import pytest
import torch

from webnn_py.ops import operator_kind

F = torch.nn.functional
RNG = np.random.default_rng(21)

CASES = [  # (h, w, c, window, strides, dilations, padding [t, b, l, r], ceil)
    (9, 9, 20, (3, 3), (2, 2), (1, 1), (0, 0, 0, 0), True),
    (10, 7, 3, (3, 2), (1, 2), (1, 1), (1, 1, 0, 1), False),
    (12, 12, 17, (2, 2), (2, 2), (2, 2), (1, 0, 1, 0), False),
    (111, 111, 64, (3, 3), (2, 2), (1, 1), (0, 0, 0, 0), True),   # SqueezeNet's first pool
    (5, 5, 8, (5, 5), (1, 1), (1, 1), (2, 2, 2, 2), False),
    (6, 7, 86, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False),      # blocks of 4 FW channels, then FW, 4, 1
]


@pytest.fixture
def specialised(native, monkeypatch):
    """The compiler's pooling specialisations with the natively built C kernels."""
    import webnn_py.kernels
    monkeypatch.setattr(webnn_py.kernels, "simd", lambda: native)
    return importlib.import_module("webnn_py.runtime.compiler.specialise")


def node_for(kind, x_shape, attributes, out_shape):
    from webnn_py.base.descriptor import OperandDescriptor
    from webnn_py.runtime.ir import Node, Value

    node = Node(kind, [Value(OperandDescriptor("float32", x_shape))], attributes, "pool")
    node.outputs = [Value(OperandDescriptor("float32", out_shape), producer=node)]
    return node


def output_size(size, window, stride, dilation, begin, end, ceil):
    span = size + begin + end - (window - 1) * dilation - 1
    return (-(-span // stride) if ceil else span // stride) + 1


@pytest.mark.parametrize("case", CASES, ids=str)
def test_max_pool_nhwc_bit_for_bit(specialised, case):
    h, w, c, window, strides, dilations, padding, ceil = case
    x = RNG.standard_normal((1, h, w, c)).astype(np.float32)
    x.flat[::37] = np.nan
    x.flat[5::41] = -np.inf
    x.flat[7::43] = -0.0
    out_hw = [output_size(h, window[0], strides[0], dilations[0], padding[0], padding[1], ceil),
              output_size(w, window[1], strides[1], dilations[1], padding[2], padding[3], ceil)]
    attributes = {"windowDimensions": list(window), "padding": list(padding), "strides": list(strides),
                  "dilations": list(dilations), "layout": "nhwc", "outputSizes": out_hw}
    node = node_for("maxPool2d", x.shape, attributes, (1, *out_hw, c))
    kernel = specialised.specialise(node, lambda v: None)
    assert kernel is not operator_kind("maxPool2d").kernel
    got = kernel([x], attributes, None)[0]
    want = operator_kind("maxPool2d").kernel([x], attributes, None)[0]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    if padding == (0, 0, 0, 0) or not ceil:
        clean = np.nan_to_num(x, nan=0.0)
        ref = F.max_pool2d(torch.from_numpy(clean).permute(0, 3, 1, 2), window, strides,
                           (padding[0], padding[2]) if padding[0] == padding[1] and padding[2] == padding[3] else 0,
                           dilations, ceil_mode=ceil).permute(0, 2, 3, 1).numpy()
        if padding[0] == padding[1] and padding[2] == padding[3]:
            got_clean = kernel([clean], attributes, None)[0]
            np.testing.assert_array_equal(got_clean, ref)


@pytest.mark.parametrize("shape", [(1, 7, 7, 1280), (1, 112, 112, 32), (2, 3, 5, 19), (1, 1, 1, 5)])
def test_global_average_pool_nhwc_bit_for_bit(specialised, shape):
    x = RNG.standard_normal(shape).astype(np.float32) * 3
    attributes = {"windowDimensions": list(shape[1:3]), "padding": [0, 0, 0, 0], "strides": [1, 1],
                  "dilations": [1, 1], "layout": "nhwc", "outputSizes": [1, 1]}
    node = node_for("averagePool2d", shape, attributes, (shape[0], 1, 1, shape[3]))
    kernel = specialised.specialise(node, lambda v: None)
    assert kernel is not operator_kind("averagePool2d").kernel
    got = kernel([x], attributes, None)[0]
    want = operator_kind("averagePool2d").kernel([x], attributes, None)[0]
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    ref = torch.from_numpy(x.astype(np.float64)).mean((1, 2), keepdim=True).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6 * np.sqrt(shape[1] * shape[2]))


def test_windowed_average_pool_keeps_the_numpy_kernel(specialised):
    attributes = {"windowDimensions": [3, 3], "padding": [1, 1, 1, 1], "strides": [1, 1], "dilations": [1, 1],
                  "layout": "nhwc", "outputSizes": [5, 5]}
    node = node_for("averagePool2d", (1, 5, 5, 4), attributes, (1, 5, 5, 4))
    assert specialised.specialise(node, lambda v: None) is operator_kind("averagePool2d").kernel


@pytest.mark.parametrize("shape", [(1, 14, 14, 576), (2, 5, 3, 7), (1, 112, 112, 32)])
@pytest.mark.parametrize("scale_first", [False, True])
def test_channel_scale_bit_for_bit(specialised, shape, scale_first):
    """A squeeze-excitation block's mul([n, h, w, c], [n, 1, 1, c]) in one C pass, either
    operand order, with special values: numpy's broadcast products exactly."""
    n, _, _, c = shape
    x = RNG.standard_normal(shape).astype(np.float32)
    s = RNG.uniform(0, 1, (n, 1, 1, c)).astype(np.float32)
    x.flat[::53] = np.nan
    x.flat[3::59] = np.inf
    s.flat[0] = 0.0                  # inf * 0 = NaN, as numpy
    from webnn_py.base.descriptor import OperandDescriptor
    from webnn_py.runtime.ir import Node, Value

    operands = [Value(OperandDescriptor("float32", s.shape)), Value(OperandDescriptor("float32", shape))]
    if not scale_first:
        operands.reverse()
    node = Node("mul", operands, {}, "scale")
    node.outputs = [Value(OperandDescriptor("float32", shape), producer=node)]
    kernel = specialised.specialise(node, lambda v: None)
    assert kernel is not operator_kind("mul").kernel
    arrays = [s, x] if scale_first else [x, s]
    got = kernel(arrays, {}, None)[0]
    with np.errstate(invalid="ignore"):
        want = operator_kind("mul").kernel(arrays, {}, None)[0]
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
