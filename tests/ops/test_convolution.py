"""conv2d (§8.9.10) and convTranspose2d (§8.9.11) against torch.nn.functional
(computed in float64 and rounded to the tested type), for both data types,
every layout and every option; plus every TypeError of both build steps."""
import asyncio
import re

import numpy as np
import pytest

import webnn_py
from tests.portable.expect import assert_close

from .conftest import FLOAT_TYPES, run, torch

F = torch.nn.functional

# Transpose axes from the canonical filter layout (OIHW for conv2d, IOHW for
# convTranspose2d) to each layout, written out independently of the kernel.
CONV_FROM_OIHW = {"oihw": (0, 1, 2, 3), "hwio": (2, 3, 1, 0), "ohwi": (0, 2, 3, 1), "ihwo": (1, 2, 3, 0)}
TRANSPOSE_FROM_IOHW = {"iohw": (0, 1, 2, 3), "hwoi": (2, 3, 1, 0), "ohwi": (1, 2, 3, 0)}


def name(dtype):
    return np.dtype(dtype).name


def accumulation_atol(dtype, terms: int, bound: float) -> float:
    """WPT-style budget for a sum of `terms` products: a few units of the type's
    epsilon per term, relative to the largest |x|·|w| sum, plus the final rounding."""
    eps = float(np.finfo(dtype).eps)
    return (terms + 2) * eps * max(bound, 1.0)


def conv2d_ref(x_nchw, w_oihw, bias, padding, strides, dilations, groups):
    """float64 torch conv2d with explicit asymmetric padding."""
    t = torch.from_numpy(x_nchw.astype(np.float64))
    pt, pb, pl, pr = padding
    t = F.pad(t, (pl, pr, pt, pb))
    b = None if bias is None else torch.from_numpy(bias.astype(np.float64))
    return F.conv2d(t, torch.from_numpy(w_oihw.astype(np.float64)), b, stride=strides, dilation=dilations,
                    groups=groups).numpy()


CONV_CASES = {
    "defaults": dict(x=(1, 2, 5, 5), w=(3, 2, 3, 3), options={}),
    "padding": dict(x=(2, 3, 4, 5), w=(2, 3, 2, 3), options={"padding": [1, 2, 0, 3]}),
    "strides": dict(x=(1, 2, 7, 8), w=(4, 2, 3, 2), options={"strides": [2, 3]}),
    "dilations": dict(x=(1, 2, 7, 7), w=(2, 2, 3, 2), options={"dilations": [2, 3], "padding": [1, 1, 2, 2]}),
    "groups": dict(x=(2, 6, 5, 4), w=(4, 3, 2, 2), options={"groups": 2, "strides": [1, 2]}),
    "depthwise": dict(x=(1, 4, 6, 6), w=(4, 1, 3, 3), options={"groups": 4, "padding": [1, 1, 1, 1]}),
    "depthwise-multiplier": dict(x=(1, 3, 5, 5), w=(6, 1, 2, 2), options={"groups": 3, "strides": [2, 2]}),
    "bias": dict(x=(1, 3, 4, 4), w=(5, 3, 3, 3), options={"padding": [1, 1, 1, 1]}, bias=True),
    "all": dict(x=(2, 4, 9, 8), w=(6, 2, 3, 2), bias=True,
                options={"padding": [2, 1, 0, 1], "strides": [2, 1], "dilations": [1, 2], "groups": 2}),
    "1x1": dict(x=(1, 8, 3, 3), w=(5, 8, 1, 1), options={}),
}


@pytest.mark.parametrize("case", list(CONV_CASES))
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=name)
def test_conv2d_options(case, dtype, rng):
    spec = CONV_CASES[case]
    x = rng.uniform(-1, 1, spec["x"]).astype(dtype)
    w = rng.uniform(-1, 1, spec["w"]).astype(dtype)
    options = dict(spec["options"])
    inputs = {"x": x, "w": w}
    bias = None
    if spec.get("bias"):
        bias = rng.uniform(-1, 1, spec["w"][0]).astype(dtype)
        inputs["b"] = bias

    def build(builder, o):
        opts = dict(options, **({"bias": o["b"]} if "b" in o else {}))
        return builder.conv2d(o["x"], o["w"], opts)

    got = run(build, inputs)
    args = (options.get("padding", [0] * 4), options.get("strides", [1, 1]), options.get("dilations", [1, 1]),
            options.get("groups", 1))
    expected = conv2d_ref(x, w, bias, *args)
    bound = conv2d_ref(np.abs(x), np.abs(w), None if bias is None else np.abs(bias), *args).max()
    terms = w.shape[1] * w.shape[2] * w.shape[3]
    assert_close(got, expected, atol=accumulation_atol(dtype, terms, bound), what=f"conv2d {case} {name(dtype)}")
    assert got.dtype == dtype


@pytest.mark.parametrize("filter_layout", list(CONV_FROM_OIHW))
@pytest.mark.parametrize("input_layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=name)
def test_conv2d_layouts(input_layout, filter_layout, dtype, rng):
    x = rng.uniform(-1, 1, (2, 4, 6, 5)).astype(dtype)           # NCHW
    w = rng.uniform(-1, 1, (6, 2, 3, 2)).astype(dtype)           # OIHW, groups 2
    bias = rng.uniform(-1, 1, 6).astype(dtype)
    options = {"padding": [1, 0, 1, 1], "strides": [2, 1], "dilations": [1, 2], "groups": 2,
               "inputLayout": input_layout, "filterLayout": filter_layout}
    x_in = x if input_layout == "nchw" else x.transpose(0, 2, 3, 1)
    w_in = w.transpose(CONV_FROM_OIHW[filter_layout])
    got = run(lambda b, o: b.conv2d(o["x"], o["w"], dict(options, bias=o["b"])),
              {"x": np.ascontiguousarray(x_in)}, {"w": np.ascontiguousarray(w_in), "b": bias})
    expected = conv2d_ref(x, w, bias, options["padding"], options["strides"], options["dilations"], 2)
    if input_layout == "nhwc":
        expected = expected.transpose(0, 2, 3, 1)
    assert_close(got, expected, atol=accumulation_atol(dtype, 12, 12.0), what=f"conv2d {input_layout}/{filter_layout}")


def test_conv2d_hand_computed():
    # 3x3 input, 2x2 all-ones filter: each output is the sum of a 2x2 block, plus the bias.
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    w = np.ones((1, 1, 2, 2), np.float32)
    got = run(lambda b, o: b.conv2d(o["x"], o["w"], {"bias": o["b"]}), {"x": x},
              {"w": w, "b": np.array([0.5], np.float32)})
    assert got.tolist() == [[[[8.5, 12.5], [20.5, 24.5]]]]


def test_conv2d_output_shape_and_label():
    async def shape():
        context = await webnn_py.ml.createContext()
        builder = webnn_py.MLGraphBuilder(context)
        x = builder.input("x", {"dataType": "float32", "shape": [1, 7, 7, 3]})
        w = builder.input("w", {"dataType": "float32", "shape": [3, 3, 3, 8]})
        return builder.conv2d(x, w, {"inputLayout": "nhwc", "filterLayout": "hwio", "strides": [2, 2],
                                     "padding": [1, 1, 1, 1], "label": "c"}).shape
    assert asyncio.run(shape()) == [1, 4, 4, 8]


# -- convTranspose2d ------------------------------------------------------------------------------

def conv_transpose2d_ref(x_nchw, w_iohw, bias, padding, strides, dilations, groups, out_size):
    """float64 torch conv_transpose2d without padding, then the spec's cropping:
    output[y] = full[y + beginningPadding], zero past the full result's end."""
    t = torch.from_numpy(x_nchw.astype(np.float64))
    full = F.conv_transpose2d(t, torch.from_numpy(w_iohw.astype(np.float64)), stride=strides,
                              dilation=dilations, groups=groups).numpy()
    pt, _, pl, _ = padding
    oh, ow = out_size
    out = np.zeros(full.shape[:2] + (oh, ow))
    crop = full[:, :, pt:pt + oh, pl:pl + ow]
    out[:, :, :crop.shape[2], :crop.shape[3]] = crop
    if bias is not None:
        out += bias.astype(np.float64).reshape(1, -1, 1, 1)
    return out


def transpose_size(i, k, pb, pe, s, d):
    return (i - 1) * s + (k - 1) * d + 1 - pb - pe


TRANSPOSE_CASES = {
    "defaults": dict(x=(1, 2, 3, 3), w=(2, 3, 3, 3), options={}),
    "padding": dict(x=(2, 2, 4, 3), w=(2, 2, 3, 3), options={"padding": [1, 0, 2, 1]}),
    "strides": dict(x=(1, 3, 3, 4), w=(3, 2, 2, 3), options={"strides": [2, 3]}),
    "dilations": dict(x=(1, 2, 3, 3), w=(2, 2, 2, 3), options={"dilations": [2, 1], "strides": [1, 2]}),
    "outputPadding": dict(x=(1, 2, 3, 3), w=(2, 2, 3, 3), options={"strides": [3, 2], "outputPadding": [2, 1]}),
    "outputPadding-past-end": dict(x=(1, 1, 2, 2), w=(1, 1, 2, 2),
                                   options={"strides": [3, 3], "outputPadding": [2, 1], "padding": [0, 0, 1, 0]}),
    "outputSizes": dict(x=(1, 2, 3, 3), w=(2, 2, 3, 3), options={"strides": [2, 2], "outputSizes": [8, 7],
                                                                 "outputPadding": [1, 1]}),
    "groups": dict(x=(2, 4, 3, 3), w=(4, 3, 2, 2), options={"groups": 2, "strides": [2, 1]}),
    "depthwise": dict(x=(1, 3, 4, 4), w=(3, 1, 3, 3), options={"groups": 3, "padding": [1, 1, 1, 1]}),
    "bias": dict(x=(1, 2, 3, 3), w=(2, 4, 2, 2), options={"strides": [2, 2]}, bias=True),
    "all": dict(x=(2, 4, 3, 4), w=(4, 2, 3, 2), bias=True,
                options={"padding": [1, 2, 0, 1], "strides": [2, 3], "dilations": [2, 1], "groups": 2,
                         "outputPadding": [1, 2]}),
}


@pytest.mark.parametrize("case", list(TRANSPOSE_CASES))
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=name)
def test_conv_transpose2d_options(case, dtype, rng):
    spec = TRANSPOSE_CASES[case]
    x = rng.uniform(-1, 1, spec["x"]).astype(dtype)
    w = rng.uniform(-1, 1, spec["w"]).astype(dtype)
    options = dict(spec["options"])
    groups = options.get("groups", 1)
    inputs = {"x": x, "w": w}
    bias = None
    if spec.get("bias"):
        bias = rng.uniform(-1, 1, spec["w"][1] * groups).astype(dtype)
        inputs["b"] = bias

    def build(builder, o):
        return builder.convTranspose2d(o["x"], o["w"], dict(options, **({"bias": o["b"]} if "b" in o else {})))

    got = run(build, inputs)
    padding, strides = options.get("padding", [0] * 4), options.get("strides", [1, 1])
    dilations, output_padding = options.get("dilations", [1, 1]), options.get("outputPadding", [0, 0])
    out_size = options.get("outputSizes") or [
        transpose_size(x.shape[2], w.shape[2], padding[0], padding[1], strides[0], dilations[0]) + output_padding[0],
        transpose_size(x.shape[3], w.shape[3], padding[2], padding[3], strides[1], dilations[1]) + output_padding[1]]
    args = (padding, strides, dilations, groups, out_size)
    expected = conv_transpose2d_ref(x, w, bias, *args)
    bound = conv_transpose2d_ref(np.abs(x), np.abs(w), None if bias is None else np.abs(bias), *args).max()
    terms = x.shape[1] // groups * w.shape[2] * w.shape[3]
    assert_close(got, expected, atol=accumulation_atol(dtype, terms, bound),
                 what=f"convTranspose2d {case} {name(dtype)}")
    assert got.dtype == dtype


@pytest.mark.parametrize("filter_layout", list(TRANSPOSE_FROM_IOHW))
@pytest.mark.parametrize("input_layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=name)
def test_conv_transpose2d_layouts(input_layout, filter_layout, dtype, rng):
    x = rng.uniform(-1, 1, (2, 4, 3, 4)).astype(dtype)           # NCHW
    w = rng.uniform(-1, 1, (4, 3, 2, 3)).astype(dtype)           # IOHW, groups 2 -> 6 output channels
    bias = rng.uniform(-1, 1, 6).astype(dtype)
    options = {"padding": [1, 0, 0, 2], "strides": [2, 2], "dilations": [1, 2], "groups": 2,
               "outputPadding": [1, 0], "inputLayout": input_layout, "filterLayout": filter_layout}
    x_in = x if input_layout == "nchw" else x.transpose(0, 2, 3, 1)
    w_in = w.transpose(TRANSPOSE_FROM_IOHW[filter_layout])
    got = run(lambda b, o: b.convTranspose2d(o["x"], o["w"], dict(options, bias=o["b"])),
              {"x": np.ascontiguousarray(x_in)}, {"w": np.ascontiguousarray(w_in), "b": bias})
    out_size = [transpose_size(3, 2, 1, 0, 2, 1) + 1, transpose_size(4, 3, 0, 2, 2, 2)]
    expected = conv_transpose2d_ref(x, w, bias, options["padding"], [2, 2], [1, 2], 2, out_size)
    if input_layout == "nhwc":
        expected = expected.transpose(0, 2, 3, 1)
    assert_close(got, expected, atol=accumulation_atol(dtype, 12, 12.0),
                 what=f"convTranspose2d {input_layout}/{filter_layout}")


def test_conv_transpose2d_hand_computed():
    # 2x2 input, 2x2 ones filter, stride 2: every input value is copied into its own 2x2 block.
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 2, 2)
    got = run(lambda b, o: b.convTranspose2d(o["x"], o["w"], {"strides": [2, 2]}), {"x": x},
              {"w": np.ones((1, 1, 2, 2), np.float32)})
    assert got.tolist() == [[[[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]]]]


# -- validation -----------------------------------------------------------------------------------

def build_error(method, shapes, options=None, types=None, label=""):
    """Call builder.<method>(*operands, options) and return the TypeError it raises."""

    async def attempt():
        context = await webnn_py.ml.createContext()
        builder = webnn_py.MLGraphBuilder(context)
        operands = [builder.input(f"in{i}", {"dataType": (types or {}).get(i, "float32"), "shape": list(s)})
                    for i, s in enumerate(shapes)]
        opts = dict(options or {})
        if "bias" in opts:
            shape, dtype = opts["bias"]
            opts["bias"] = builder.input("bias", {"dataType": dtype, "shape": list(shape)})
        if label:
            opts["label"] = label
        with pytest.raises(TypeError) as info:
            getattr(builder, method)(*operands, opts)
        return str(info.value)
    return asyncio.run(attempt())


X, W = (1, 4, 5, 5), (6, 4, 3, 3)
CONV2D_ERRORS = [
    ("input type", [X, W], {}, {0: "int32", 1: "int32"}, "input has data type int32"),
    ("input rank", [(4, 5, 5), W], {}, None, "input has rank 3"),
    ("filter rank", [X, (6, 4, 3)], {}, None, "filter has rank 3"),
    ("filter type", [X, W], {}, {1: "float16"}, "filter's data type float16 differs"),
    ("padding size", [X, W], {"padding": [1, 1, 1]}, None, "padding must have 4 items"),
    ("strides size", [X, W], {"strides": [1]}, None, "strides must have 2 items"),
    ("strides zero", [X, W], {"strides": [1, 0]}, None, "strides must not contain 0"),
    ("dilations size", [X, W], {"dilations": [1, 1, 1]}, None, "dilations must have 2 items"),
    ("dilations zero", [X, W], {"dilations": [0, 1]}, None, "dilations must not contain 0"),
    ("groups zero", [X, W], {"groups": 0}, None, "groups must not be 0"),
    ("groups divide input", [X, (6, 1, 3, 3)], {"groups": 3}, None, "input channels 4 are not divisible by groups 3"),
    ("filter input channels", [X, (6, 3, 3, 3)], {}, None, r"input channels / groups \(4 / 1\) differs"),
    ("groups divide output", [X, (5, 2, 3, 3)], {"groups": 2}, None, "output channels 5 are not divisible"),
    ("bias shape", [X, W], {"bias": ((5,), "float32")}, None, r"bias shape \[5\] is not \[6\]"),
    ("bias type", [X, W], {"bias": ((6,), "float16")}, None, "bias's data type float16 differs"),
    ("output size", [(1, 4, 2, 2), W], {}, None, "output size 0 x 0 is not valid"),
    ("output size with dilation", [X, W], {"dilations": [3, 1]}, None, "output size -1 x 3 is not valid"),
]


@pytest.mark.parametrize("case", CONV2D_ERRORS, ids=[c[0] for c in CONV2D_ERRORS])
def test_conv2d_type_errors(case):
    _, shapes, options, types, message = case
    text = build_error("conv2d", shapes, options, types, label="lbl")
    assert text.startswith("[lbl] conv2d: "), text
    assert re.search(message, text), text


def test_conv2d_layout_aware_validation():
    # ohwi: [6, 3, 3, 4] declares 4 input channels; oihw would read 3.
    text = build_error("conv2d", [X, (6, 3, 3, 4)], {"filterLayout": "oihw"})
    assert "differs from the filter's input channels 3" in text

    async def ok():
        context = await webnn_py.ml.createContext()
        builder = webnn_py.MLGraphBuilder(context)
        x = builder.input("x", {"dataType": "float32", "shape": [1, 5, 5, 4]})
        w = builder.input("w", {"dataType": "float32", "shape": [6, 3, 3, 4]})
        return builder.conv2d(x, w, {"inputLayout": "nhwc", "filterLayout": "ohwi"}).shape
    assert asyncio.run(ok()) == [1, 3, 3, 6]


def test_conv2d_operand_from_another_builder():

    async def attempt():
        context = await webnn_py.ml.createContext()
        b1, b2 = webnn_py.MLGraphBuilder(context), webnn_py.MLGraphBuilder(context)
        x = b1.input("x", {"dataType": "float32", "shape": list(X)})
        w = b2.input("w", {"dataType": "float32", "shape": list(W)})
        with pytest.raises(TypeError, match="conv2d: an operand was created by another MLGraphBuilder"):
            b1.conv2d(x, w)
        bias = b2.input("b", {"dataType": "float32", "shape": [6]})
        w1 = b1.input("w", {"dataType": "float32", "shape": list(W)})
        with pytest.raises(TypeError, match="another MLGraphBuilder"):
            b1.conv2d(x, w1, {"bias": bias})
    asyncio.run(attempt())


XT, WT = (1, 4, 3, 3), (4, 2, 3, 3)
TRANSPOSE_ERRORS = [
    ("input rank", [(4, 3, 3), WT], {}, None, "input has rank 3"),
    ("input type", [XT, WT], {}, {0: "int8", 1: "int8"}, "input has data type int8"),
    ("filter rank", [XT, (4, 2, 3, 3, 1)], {}, None, "filter has rank 5"),
    ("filter type", [XT, WT], {}, {1: "float16"}, "filter's data type float16 differs"),
    ("padding size", [XT, WT], {"padding": [0, 0]}, None, "padding must have 4 items"),
    ("strides size", [XT, WT], {"strides": [1, 1, 1]}, None, "strides must have 2 items"),
    ("strides zero", [XT, WT], {"strides": [0, 1]}, None, "strides must not contain 0"),
    ("dilations size", [XT, WT], {"dilations": [2]}, None, "dilations must have 2 items"),
    ("dilations zero", [XT, WT], {"dilations": [1, 0]}, None, "dilations must not contain 0"),
    ("outputPadding size", [XT, WT], {"outputPadding": [0]}, None, "outputPadding must have 2 items"),
    ("outputSizes size", [XT, WT], {"outputSizes": [5, 5, 5]}, None, "outputSizes must have 2 items"),
    ("outputPadding >= strides", [XT, WT], {"strides": [2, 2], "outputPadding": [1, 2]}, None,
     r"outputPadding \[1, 2\] must be smaller than strides \[2, 2\]"),
    ("outputPadding >= default strides", [XT, WT], {"outputPadding": [1, 0]}, None, "must be smaller than strides"),
    ("groups zero", [XT, WT], {"groups": 0}, None, "groups must not be 0"),
    ("filter input channels", [XT, (3, 2, 3, 3)], {}, None, "input channels 4 differ from the filter's input channels 3"),
    ("bias shape", [XT, WT], {"groups": 2, "bias": ((2,), "float32")}, None, r"bias shape \[2\] is not \[4\]"),
    ("bias type", [XT, WT], {"bias": ((2,), "float16")}, None, "bias's data type float16 differs"),
    ("outputSizes height small", [XT, WT], {"strides": [2, 2], "outputSizes": [6, 7]}, None,
     r"outputSizes\[0\] 6 is outside \[7, 9\)"),
    ("outputSizes height large", [XT, WT], {"strides": [2, 2], "outputSizes": [9, 7]}, None,
     r"outputSizes\[0\] 9 is outside"),
    ("outputSizes width", [XT, WT], {"strides": [2, 3], "outputSizes": [7, 12]}, None,
     r"outputSizes\[1\] 12 is outside \[9, 12\)"),
    ("output size", [XT, WT], {"padding": [3, 3, 0, 0]}, None, "output size -1 x 5 is not valid"),
]


@pytest.mark.parametrize("case", TRANSPOSE_ERRORS, ids=[c[0] for c in TRANSPOSE_ERRORS])
def test_conv_transpose2d_type_errors(case):
    _, shapes, options, types, message = case
    text = build_error("convTranspose2d", shapes, options, types, label="t")
    assert text.startswith("[t] convTranspose2d: "), text
    assert re.search(message, text), text


def test_conv_transpose2d_groups_need_not_divide_input_channels():
    # §8.9.11 steps 20.5-20.7 check only inputChannels == filterInputChannels and that
    # filterOutputChannels * groups is a valid dimension (conv2d's step 20.5 divisibility check
    # has no counterpart): 1 input channel, groups 3, padding 1 builds, with 3 output channels.

    async def shape():
        context = await webnn_py.ml.createContext()
        builder = webnn_py.MLGraphBuilder(context)
        x = builder.input("x", {"dataType": "float32", "shape": [1, 1, 5, 5]})
        w = builder.input("w", {"dataType": "float32", "shape": [1, 1, 3, 3]})
        return builder.convTranspose2d(x, w, {"padding": [1, 1, 1, 1], "groups": 3}).shape
    # (5 - 1) * 1 + (3 - 1) * 1 + 1 - 1 - 1 = 5 per spatial axis; 1 * 3 output channels.
    assert asyncio.run(shape()) == [1, 3, 5, 5]


def test_conv_transpose2d_undivided_groups_fail_at_dispatch():
    """The grouped computation splits the input channels into `groups` parts; with 1 channel
    and 3 groups there is none to run: the dispatch fails with an OperationError naming the
    operator, logged, and the output tensor keeps its contents (as every dispatch failure)."""
    import logging

    async def scenario():
        context = await webnn_py.ml.createContext()
        builder = webnn_py.MLGraphBuilder(context)
        desc = {"dataType": "float32", "shape": [1, 1, 2, 2]}
        x = builder.input("x", desc)
        w = builder.constant({"dataType": "float32", "shape": [1, 1, 1, 1]}, np.ones(1, np.float32))
        y = builder.convTranspose2d(x, w, {"groups": 3, "label": "up"})
        graph = await builder.build({"y": y})
        tx = await context.createTensor({**desc, "writable": True})
        ty = await context.createTensor({"dataType": "float32", "shape": y.shape, "readable": True,
                                         "writable": True})
        context.writeTensor(tx, np.ones(4, np.float32))
        context.writeTensor(ty, np.full(12, 7, np.float32))
        context.dispatch(graph, {"x": tx}, {"y": ty})
        return np.frombuffer(await context.readTensor(ty), np.float32)

    records = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = records.append
    logger = logging.getLogger("webnn_py")
    logger.addHandler(handler)
    try:
        after = asyncio.run(scenario())
    finally:
        logger.removeHandler(handler)
    assert after.tolist() == [7.0] * 12                      # unchanged
    assert len(records) == 1 and "dispatch failed" in records[0].getMessage()
    logged = records[0].exc_info[1]
    assert logged.name == "OperationError", logged
    assert str(logged).startswith("[up] convTranspose2d: input channels 1 are not divisible by groups 3"), logged
    for guard in logger.handlers:    # the failure was expected: do not let the suite's guard fail the test
        if type(guard).__name__ == "_FailOnWebNNErrors":
            guard.records.clear()


def test_conv_transpose2d_output_sizes_ignore_output_padding():

    async def shape():
        context = await webnn_py.ml.createContext()
        builder = webnn_py.MLGraphBuilder(context)
        x = builder.input("x", {"dataType": "float16", "shape": [1, 3, 3, 4]})
        w = builder.input("w", {"dataType": "float16", "shape": [2, 3, 3, 4]})   # ohwi: 2 outputs per group
        # outputPadding [5, 5] would fail the "smaller than strides" check, but outputSizes wins.
        return builder.convTranspose2d(x, w, {"inputLayout": "nhwc", "filterLayout": "ohwi", "strides": [2, 2],
                                              "outputSizes": [8, 7], "outputPadding": [5, 5]}).shape
    assert asyncio.run(shape()) == [1, 8, 7, 2]


def test_support_limits():

    async def limits():
        context = await webnn_py.ml.createContext()
        return context.opSupportLimits()
    limits = asyncio.run(limits())
    for op in ("conv2d", "convTranspose2d"):
        assert set(limits[op]) == {"input", "filter", "bias", "output"}
        assert limits[op]["input"] == {"dataTypes": ["float32", "float16"], "rankRange": {"min": 4, "max": 4}}
        assert limits[op]["bias"]["rankRange"] == {"min": 1, "max": 1}
