"""averagePool2d, l2Pool2d, maxPool2d (§8.9.37) against torch (floats) and exact
Python arithmetic (maxPool2d on integers), for every allowed data type, both
layouts and every option; plus every TypeError of "create a pooling operation"."""
import asyncio
import math
import re

import numpy as np
import pytest

import webnn_py
from tests.portable.expect import assert_close

from .conftest import ALL_TYPES, FLOAT_TYPES, INT_TYPES, run, torch

F = torch.nn.functional
POOLS = ["averagePool2d", "l2Pool2d", "maxPool2d"]


def name(dtype):
    return np.dtype(dtype).name


def out_size(size, window, begin, end, stride, dilation, rounding):
    value = (size - ((window - 1) * dilation + 1) + begin + end) / stride + 1
    return math.floor(value) if rounding == "floor" else math.ceil(value)


def torch_pool(op, x_nchw, window, padding, strides, dilations, out_hw):
    """float64 reference: pad with NaN (padding is not data), cut the windows
    with torch's unfold, reduce ignoring NaN. Rows/columns past the ending
    padding (ceil rounding) are padded with NaN too."""
    n, c, h, w = x_nchw.shape
    pt, pb, pl, pr = padding
    need_h = (out_hw[0] - 1) * strides[0] + (window[0] - 1) * dilations[0] + 1
    need_w = (out_hw[1] - 1) * strides[1] + (window[1] - 1) * dilations[1] + 1
    pb, pr = max(pb, need_h - pt - h), max(pr, need_w - pl - w)
    t = F.pad(torch.from_numpy(x_nchw.astype(np.float64)), (pl, pr, pt, pb), value=float("nan"))
    cols = F.unfold(t.reshape(n * c, 1, *t.shape[2:]), window, dilation=dilations, stride=strides)
    rows_h = (t.shape[2] - (window[0] - 1) * dilations[0] - 1) // strides[0] + 1
    rows_w = (t.shape[3] - (window[1] - 1) * dilations[1] - 1) // strides[1] + 1
    cols = cols.reshape(n * c, -1, rows_h, rows_w)[:, :, :out_hw[0], :out_hw[1]]
    if op == "averagePool2d":
        result = torch.nanmean(cols, dim=1)
    elif op == "l2Pool2d":
        result = torch.sqrt(torch.nansum(cols * cols, dim=1))
    else:
        result = torch.where(torch.isnan(cols), -math.inf, cols).amax(dim=1)
    return result.reshape(n, c, *out_hw).numpy()


def tolerance(op, dtype, window_elements):
    # WPT: maxPool2d exact; averagePool2d / l2Pool2d accumulate window_elements terms.
    if op == "maxPool2d":
        return {"ulp": 0}
    eps = float(np.finfo(dtype).eps)
    return {"atol": (window_elements + 2) * eps * 10}


CASES = {
    "global": dict(x=(2, 3, 4, 5), options={}),
    "global-large": dict(x=(2, 2, 9, 10), options={}),          # > 64 window elements: one reduction
    "large-window": dict(x=(1, 2, 12, 12), options={"windowDimensions": [9, 8], "padding": [1, 2, 0, 3],
                                                    "strides": [2, 3], "outputShapeRounding": "ceil"}),
    "window": dict(x=(1, 2, 5, 6), options={"windowDimensions": [2, 3]}),
    "padding": dict(x=(1, 2, 4, 4), options={"windowDimensions": [3, 3], "padding": [1, 2, 0, 1]}),
    "strides": dict(x=(1, 3, 7, 8), options={"windowDimensions": [3, 2], "strides": [2, 3]}),
    "dilations": dict(x=(1, 2, 7, 7), options={"windowDimensions": [2, 3], "dilations": [3, 2]}),
    "ceil": dict(x=(1, 2, 6, 7), options={"windowDimensions": [3, 3], "strides": [2, 2],
                                         "outputShapeRounding": "ceil"}),
    "floor": dict(x=(1, 2, 6, 7), options={"windowDimensions": [3, 3], "strides": [2, 2],
                                          "outputShapeRounding": "floor"}),
    "outputSizes-ceil": dict(x=(1, 2, 5, 5), options={"windowDimensions": [3, 3], "padding": [1, 0, 0, 1],
                                                      "strides": [2, 2], "outputSizes": [3, 3]}),
    "outputSizes-floor-overrides-ceil": dict(x=(1, 2, 6, 7), options={
        "windowDimensions": [2, 2], "strides": [2, 2], "outputSizes": [3, 3], "outputShapeRounding": "ceil"}),
    "all": dict(x=(2, 3, 9, 8), options={"windowDimensions": [3, 2], "padding": [2, 1, 1, 0], "strides": [2, 3],
                                         "dilations": [2, 2], "outputShapeRounding": "ceil"}),
}


def expected_hw(shape, options):
    h, w = shape[2:]
    window = options.get("windowDimensions", [h, w])
    padding = options.get("padding", [0, 0, 0, 0])
    strides, dilations = options.get("strides", [1, 1]), options.get("dilations", [1, 1])
    if "outputSizes" in options:
        return options["outputSizes"]
    rounding = options.get("outputShapeRounding", "floor")
    return [out_size(h, window[0], padding[0], padding[1], strides[0], dilations[0], rounding),
            out_size(w, window[1], padding[2], padding[3], strides[1], dilations[1], rounding)]


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=name)
@pytest.mark.parametrize("op", POOLS)
def test_float_pools(op, dtype, case, layout, rng):
    spec = CASES[case]
    x = rng.uniform(-3, 3, spec["x"]).astype(dtype)
    options = dict(spec["options"], layout=layout)
    x_in = x if layout == "nchw" else np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    got = run(lambda b, o: getattr(b, op)(o["x"], options), {"x": x_in})
    hw = expected_hw(x.shape, options)
    window = options.get("windowDimensions", list(x.shape[2:]))
    expected = torch_pool(op, x, window, options.get("padding", [0] * 4), options.get("strides", [1, 1]),
                          options.get("dilations", [1, 1]), hw)
    if layout == "nhwc":
        expected = expected.transpose(0, 2, 3, 1)
    assert_close(got, expected, **tolerance(op, dtype, window[0] * window[1]), what=f"{op} {case} {layout}")
    assert got.dtype == dtype


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=name)
def test_average_excludes_padding_like_torch_count_include_pad_false(dtype, rng):
    """A second, independent reference: torch's own avg_pool2d with symmetric padding."""
    x = rng.uniform(-3, 3, (2, 3, 6, 5)).astype(dtype)
    got = run(lambda b, o: b.averagePool2d(o["x"], {"windowDimensions": [3, 3], "padding": [1, 1, 1, 1],
                                                    "strides": [2, 1]}), {"x": x})
    expected = F.avg_pool2d(torch.from_numpy(x.astype(np.float64)), 3, stride=(2, 1), padding=1,
                            count_include_pad=False).numpy()
    assert_close(got, expected, **tolerance("averagePool2d", dtype, 9))


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=name)
def test_max_and_lp_pool_match_torch_builtins(dtype, rng):
    x = rng.uniform(-3, 3, (1, 2, 7, 6)).astype(dtype)
    got = run(lambda b, o: b.maxPool2d(o["x"], {"windowDimensions": [3, 2], "padding": [1, 1, 1, 1],
                                                "strides": [2, 2], "dilations": [2, 1]}), {"x": x})
    expected = F.max_pool2d(torch.from_numpy(x.astype(np.float32)), (3, 2), stride=2, padding=1,
                            dilation=(2, 1)).numpy()
    assert_close(got, expected, ulp=0)
    got = run(lambda b, o: b.l2Pool2d(o["x"], {"windowDimensions": [2, 3], "strides": [2, 3]}), {"x": x})
    expected = F.lp_pool2d(torch.from_numpy(x.astype(np.float64)), 2, (2, 3), stride=(2, 3)).numpy()
    assert_close(got, expected, **tolerance("l2Pool2d", dtype, 6))


def test_average_hand_computed_with_padding():
    # 2x2 input, 2x2 window, padding 1 all around, stride 1: corners see one
    # element, edges two, so padding must not count.
    x = np.array([[[[1, 2], [3, 4]]]], np.float32)
    got = run(lambda b, o: b.averagePool2d(o["x"], {"windowDimensions": [2, 2], "padding": [1, 1, 1, 1]}),
              {"x": x})
    assert got.tolist() == [[[[1, 1.5, 2], [2, 2.5, 3], [3, 3.5, 4]]]]


def test_window_entirely_past_the_input():
    # ceil rounding adds a window that starts past the ending padding: average 0, l2 0, max -inf.
    x = np.array([[[[5.0]]]], np.float32)
    options = {"windowDimensions": [1, 1], "strides": [3, 1], "padding": [0, 2, 0, 0], "outputShapeRounding": "ceil"}
    assert run(lambda b, o: b.averagePool2d(o["x"], options), {"x": x}).ravel().tolist() == [5, 0]
    assert run(lambda b, o: b.l2Pool2d(o["x"], options), {"x": x}).ravel().tolist() == [5, 0]
    assert run(lambda b, o: b.maxPool2d(o["x"], options), {"x": x}).ravel().tolist() == [5, -math.inf]


def python_max_pool(x, window, padding, strides, dilations, out_hw):
    """Exact: plain Python max over the in-input elements of each window."""
    n, c, h, w = x.shape
    out = np.empty((n, c, *out_hw), dtype=object)
    for b in range(n):
        for ch in range(c):
            for oy in range(out_hw[0]):
                for ox in range(out_hw[1]):
                    values = [int(x[b, ch, y, xx])
                              for i in range(window[0]) for j in range(window[1])
                              for y in [oy * strides[0] + i * dilations[0] - padding[0]]
                              for xx in [ox * strides[1] + j * dilations[1] - padding[2]]
                              if 0 <= y < h and 0 <= xx < w]
                    out[b, ch, oy, ox] = max(values)
    return out


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("dtype", INT_TYPES, ids=name)
def test_max_pool_integers(dtype, layout, rng):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=(1, 2, 5, 6), dtype=dtype, endpoint=True)
    x[0, 0, 0, 0], x[0, 1, 4, 5] = info.min, info.max
    options = {"windowDimensions": [2, 3], "padding": [1, 0, 2, 1], "strides": [2, 2], "dilations": [1, 2],
               "outputShapeRounding": "ceil", "layout": layout}
    x_in = x if layout == "nchw" else np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    got = run(lambda b, o: b.maxPool2d(o["x"], options), {"x": x_in})
    hw = expected_hw(x.shape, options)
    expected = python_max_pool(x, [2, 3], options["padding"], [2, 2], [1, 2], hw)
    if layout == "nhwc":
        expected = expected.transpose(0, 2, 3, 1)
    assert_close(got, expected.astype(dtype))
    assert got.dtype == dtype


def test_all_minimum_window_keeps_minimum():
    x = np.full((1, 1, 2, 2), -128, np.int8)
    got = run(lambda b, o: b.maxPool2d(o["x"], {"windowDimensions": [2, 2], "padding": [1, 1, 1, 1]}), {"x": x})
    assert (got == -128).all() and got.shape == (1, 1, 3, 3)


# -- validation -----------------------------------------------------------------------------------

def pool_error(op, shape, options, dtype="float32", label="p"):
    async def attempt():
        context = await webnn_py.ml.createContext()
        builder = webnn_py.MLGraphBuilder(context)
        x = builder.input("x", {"dataType": dtype, "shape": list(shape)})
        with pytest.raises(TypeError) as info:
            getattr(builder, op)(x, dict(options, label=label))
        return str(info.value)
    return asyncio.run(attempt())


S = (1, 2, 5, 5)
ERRORS = [
    ("rank", (2, 5, 5), {}, "input has rank 3"),
    ("window size", S, {"windowDimensions": [2]}, "windowDimensions must have 2 items"),
    ("window zero", S, {"windowDimensions": [2, 0]}, "windowDimensions must not contain 0"),
    ("padding size", S, {"padding": [1, 1]}, "padding must have 4 items"),
    ("strides size", S, {"strides": [1, 1, 1]}, "strides must have 2 items"),
    ("strides zero", S, {"strides": [0, 1]}, "strides must not contain 0"),
    ("outputSizes size", S, {"outputSizes": [2]}, "outputSizes must have 2 items"),
    ("dilations size", S, {"dilations": [1]}, "dilations must have 2 items"),
    ("dilations zero", S, {"dilations": [1, 0]}, "dilations must not contain 0"),
    ("outputSizes not floor/ceil", S, {"windowDimensions": [2, 2], "strides": [2, 2], "outputSizes": [4, 3]},
     r"outputSizes \[4, 3\] is neither the floor \[2, 2\] nor the ceiling \[3, 3\]"),
    ("outputSizes mixed rounding", S, {"windowDimensions": [2, 2], "strides": [2, 2], "outputSizes": [2, 3]},
     "is neither the floor"),
    ("window larger than input", S, {"windowDimensions": [6, 2]}, "output size 0 x 4 is not valid"),
    ("dilated window larger than input", S, {"windowDimensions": [3, 3], "dilations": [1, 3]},
     "output size 3 x -1 is not valid"),
    ("window larger than input nhwc", (1, 5, 4, 2), {"windowDimensions": [3, 5], "layout": "nhwc"},
     "output size 3 x 0 is not valid"),
]


@pytest.mark.parametrize("op", POOLS)
@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_type_errors(op, case):
    _, shape, options, message = case
    text = pool_error(op, shape, options)
    assert text.startswith(f"[p] {op}: "), text
    assert re.search(message, text), text


@pytest.mark.parametrize("op", ["averagePool2d", "l2Pool2d"])
@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64"])
def test_float_only_pools_reject_integers(op, dtype):
    text = pool_error(op, S, {}, dtype=dtype)
    assert text.startswith(f"[p] {op}: input has data type {dtype}; allowed: float32, float16"), text


@pytest.mark.parametrize("dtype", [name(d) for d in ALL_TYPES])
def test_max_pool_accepts_every_type(dtype):
    async def shape():
        context = await webnn_py.ml.createContext()
        builder = webnn_py.MLGraphBuilder(context)
        x = builder.input("x", {"dataType": dtype, "shape": [1, 2, 5, 5]})
        return builder.maxPool2d(x, {"windowDimensions": [2, 2]}).shape
    assert asyncio.run(shape()) == [1, 2, 4, 4]


def test_output_sizes_keep_padding_and_accept_either_rounding():
    # §8.9.37 steps 10 and 15.2, read literally, would zero the padding and demand
    # outputSizes < strides whenever outputSizes is given; we follow Chromium/WPT
    # (see pooling.py): padding stays, either rounding of the calculated size is accepted.
    async def shapes():
        context = await webnn_py.ml.createContext()
        builder = webnn_py.MLGraphBuilder(context)
        x = builder.input("x", {"dataType": "float32", "shape": [1, 2, 5, 5]})
        base = {"windowDimensions": [3, 3], "padding": [1, 0, 0, 1], "strides": [2, 2]}
        return [builder.maxPool2d(x, dict(base, outputSizes=[2, 2])).shape,
                builder.maxPool2d(x, dict(base, outputSizes=[3, 3])).shape,
                builder.l2Pool2d(x, {"windowDimensions": [1, 1], "outputSizes": [5, 5]}).shape]
    assert asyncio.run(shapes()) == [[1, 2, 2, 2], [1, 2, 3, 3], [1, 2, 5, 5]]


def test_support_limits():
    async def limits():
        context = await webnn_py.ml.createContext()
        return context.opSupportLimits()
    limits = asyncio.run(limits())
    for op in ("averagePool2d", "l2Pool2d"):
        assert limits[op]["input"] == {"dataTypes": ["float32", "float16"], "rankRange": {"min": 4, "max": 4}}
    assert len(limits["maxPool2d"]["input"]["dataTypes"]) == 8
    assert set(limits["maxPool2d"]) == {"input", "output"}
