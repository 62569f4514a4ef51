"""batchNormalization (§8.9.6), instanceNormalization (§8.9.29) and
layerNormalization (§8.9.30) against torch in float64 (rounded to the operand
type), for float32 and float16, every option, and every TypeError path."""
import asyncio

import numpy as np
import pytest

import webnn_py
from tests.portable.expect import assert_close

from .conftest import FLOAT_TYPES, builder_and_operands, random_array, run, torch

F = torch.nn.functional
DTYPE_IDS = {"ids": lambda d: np.dtype(d).name}


def t64(array):
    return None if array is None else torch.from_numpy(np.array(array, dtype=np.float64))


def cast_eps(epsilon, dtype):
    """Steps "set options.epsilon to the result of casting it to input's dataType"."""
    return float(np.dtype(dtype).type(epsilon))


def check(got, expected, dtype, reduced=1, what=""):
    """The float64 reference rounded to the operand type, within an absolute
    budget of a few ULP of the largest result (relative ULPs are meaningless
    where x - mean cancels), widened by the reduction size for the
    on-the-fly mean and variance, as WPT's normalization tolerances are."""
    expected = np.asarray(expected)
    magnitude = max(1.0, float(np.abs(expected).max())) if expected.size else 1.0
    eps = np.finfo(np.dtype(dtype)).eps
    ulps = 8 if np.dtype(dtype) == np.float16 else 8 + 2 * reduced
    assert got.dtype == dtype
    assert_close(got, expected.astype(dtype), atol=ulps * eps * magnitude, what=what)


def optional_operands(x, names):
    return {name: x[name] for name in names if name in x}


# -- batchNormalization --------------------------------------------------------------------

BATCH_CASES = [
    # (input shape, options besides operands, which optional operands)
    ((2, 3, 4, 5), {}, ()),
    ((2, 3, 4, 5), {}, ("scale", "bias")),
    ((2, 3, 4, 5), {"axis": 3, "epsilon": 1e-3}, ("scale",)),
    ((2, 3, 4, 5), {"axis": 0}, ("bias",)),
    ((6,), {"axis": 0}, ("scale", "bias")),                     # rank 1
    ((4, 7), {}, ("scale", "bias")),                            # rank 2, default axis 1
    ((2, 2, 3, 2, 2), {"axis": 2, "epsilon": 0.5}, ("scale", "bias")),
]


@pytest.mark.parametrize("case", BATCH_CASES, ids=str)
@pytest.mark.parametrize("dtype", FLOAT_TYPES, **DTYPE_IDS)
def test_batch_normalization(case, dtype, rng):
    shape, options, optional = case
    axis = options.get("axis", 1)
    size = shape[axis]
    inputs = {"input": random_array(shape, dtype, rng, -5, 5), "mean": random_array((size,), dtype, rng, -2, 2),
              "variance": random_array((size,), dtype, rng, 0.1, 4)}
    for name in optional:
        inputs[name] = random_array((size,), dtype, rng, -3, 3)

    got = run(lambda b, x: b.batchNormalization(x["input"], x["mean"], x["variance"],
                                                {**options, **optional_operands(x, ("scale", "bias"))}), inputs)
    # torch wants the features at dimension 1: put them there behind a new batch dimension.
    x = t64(inputs["input"]).movedim(axis, 0).unsqueeze(0)
    expected = F.batch_norm(x, t64(inputs["mean"]), t64(inputs["variance"]), t64(inputs.get("scale")),
                            t64(inputs.get("bias")), training=False,
                            eps=cast_eps(options.get("epsilon", 1e-5), dtype))
    expected = expected.squeeze(0).movedim(0, axis).numpy()
    check(got, expected, dtype, what=f"batchNormalization {case}")


# -- instanceNormalization -----------------------------------------------------------------

INSTANCE_CASES = [
    ((2, 3, 4, 5), {}, ()),
    ((2, 3, 4, 5), {"epsilon": 1e-2}, ("scale", "bias")),
    ((2, 4, 5, 3), {"layout": "nhwc"}, ("scale", "bias")),
    ((1, 3, 3, 2), {"layout": "nhwc"}, ("bias",)),
    ((1, 2, 8, 8), {"layout": "nchw"}, ("scale",)),
    ((3, 2, 1, 2), {}, ("scale", "bias")),
]


@pytest.mark.parametrize("case", INSTANCE_CASES, ids=str)
@pytest.mark.parametrize("dtype", FLOAT_TYPES, **DTYPE_IDS)
def test_instance_normalization(case, dtype, rng):
    shape, options, optional = case
    nhwc = options.get("layout") == "nhwc"
    channels = shape[3] if nhwc else shape[1]
    inputs = {"input": random_array(shape, dtype, rng, -5, 5)}
    for name in optional:
        inputs[name] = random_array((channels,), dtype, rng, -3, 3)
    got = run(lambda b, x: b.instanceNormalization(x["input"], {**options, **optional_operands(x, ("scale", "bias"))}),
              inputs)
    x = t64(inputs["input"])
    x = x.permute(0, 3, 1, 2) if nhwc else x
    expected = F.instance_norm(x, weight=t64(inputs.get("scale")), bias=t64(inputs.get("bias")),
                               eps=cast_eps(options.get("epsilon", 1e-5), dtype))
    expected = expected.permute(0, 2, 3, 1) if nhwc else expected
    spatial = shape[1] * shape[2] if nhwc else shape[2] * shape[3]
    check(got, expected.numpy(), dtype, reduced=spatial, what=f"instanceNormalization {case}")


@pytest.mark.parametrize("dtype", FLOAT_TYPES, **DTYPE_IDS)
def test_instance_normalization_single_element(dtype):
    # One element per instance: x - mean = 0 and variance 0, so the result is
    # the bias alone (torch refuses this shape, hence hand-computed).
    x = np.array([[[[5]], [[-7]]], [[[1e3]], [[0]]]], dtype)
    bias = np.array([0.5, -2], dtype)
    got = run(lambda b, o: b.instanceNormalization(o["x"], {"bias": o["b"]}), {"x": x, "b": bias})
    assert got.tolist() == [[[[0.5]], [[-2]]], [[[0.5]], [[-2]]]]


# -- layerNormalization --------------------------------------------------------------------

def layer_norm_reference(x, axes, scale, bias, epsilon):
    """Mean and variance over `axes` in float64 torch; scale and bias are looked
    up element by element: output[i] uses scale[i[axes[0]], i[axes[1]], ...]."""
    xt = t64(x)
    if axes:
        mean = xt.mean(dim=tuple(axes), keepdim=True)
        variance = ((xt - mean) ** 2).mean(dim=tuple(axes), keepdim=True)
    else:
        mean, variance = xt, torch.zeros_like(xt)
    out = ((xt - mean) / torch.sqrt(variance + epsilon)).numpy()
    index = np.indices(x.shape)
    lookup = tuple(index[a] for a in axes)
    if scale is not None:
        out = out * scale.astype(np.float64)[lookup]
    if bias is not None:
        out = out + bias.astype(np.float64)[lookup]
    return out


LAYER_CASES = [
    ((2, 3, 4, 5), {}, ()),                              # default axes [1, 2, 3]
    ((2, 3, 4, 5), {}, ("scale", "bias")),
    ((2, 3, 4, 5), {"axes": [3], "epsilon": 1e-3}, ("scale", "bias")),
    ((2, 3, 4, 5), {"axes": [3, 1]}, ("scale", "bias")),  # axes not in increasing order
    ((2, 3, 4, 5), {"axes": [0, 2]}, ("scale",)),
    ((2, 3, 4), {"axes": [2, 0, 1]}, ("bias",)),
    ((7,), {}, ("scale", "bias")),                       # rank 1: default axes are empty
    ((7,), {"axes": [0]}, ("scale", "bias")),
    ((), {}, ("scale", "bias")),                         # rank 0
    ((3, 4), {"axes": []}, ("scale", "bias")),           # explicit empty axes
    ((4, 6), {}, ()),
]


@pytest.mark.parametrize("case", LAYER_CASES, ids=str)
@pytest.mark.parametrize("dtype", FLOAT_TYPES, **DTYPE_IDS)
def test_layer_normalization(case, dtype, rng):
    shape, options, optional = case
    rank = len(shape)
    axes = options.get("axes", list(range(1, rank)))
    inputs = {"input": random_array(shape, dtype, rng, -5, 5)}
    for name in optional:
        inputs[name] = random_array(tuple(shape[a] for a in axes), dtype, rng, -3, 3)
    got = run(lambda b, x: b.layerNormalization(x["input"], {**options, **optional_operands(x, ("scale", "bias"))}),
              inputs)
    expected = layer_norm_reference(inputs["input"], axes, inputs.get("scale"), inputs.get("bias"),
                                    cast_eps(options.get("epsilon", 1e-5), dtype))
    reduced = int(np.prod([shape[a] for a in axes]))
    check(got, expected, dtype, reduced=reduced, what=f"layerNormalization {case}")


@pytest.mark.parametrize("dtype", FLOAT_TYPES, **DTYPE_IDS)
def test_layer_normalization_matches_torch_layer_norm(dtype, rng):
    # The common case (trailing axes) against torch's own layer_norm.
    x = random_array((2, 5, 6), dtype, rng, -4, 4)
    scale = random_array((5, 6), dtype, rng, -2, 2)
    bias = random_array((5, 6), dtype, rng, -2, 2)
    got = run(lambda b, o: b.layerNormalization(o["x"], {"scale": o["s"], "bias": o["b"], "epsilon": 1e-4}),
              {"x": x, "s": scale, "b": bias})
    expected = F.layer_norm(t64(x), (5, 6), t64(scale), t64(bias), eps=cast_eps(1e-4, dtype)).numpy()
    check(got, expected, dtype, reduced=30)


# -- validation ----------------------------------------------------------------------------

def f32(*shape):
    return ("float32", shape)


BATCH_ERRORS = [
    (dict(input=("int32", (2, 3)), mean=f32(3), variance=f32(3)), {}, r"input has data type int32"),
    (dict(input=f32(), mean=f32(1), variance=f32(1)), {"axis": 0}, r"input has rank 0"),
    (dict(input=f32(2, 3), mean=f32(3), variance=f32(3)), {"axis": 2}, r"axis 2 is out of range for rank 2"),
    (dict(input=f32(2, 3), mean=("float16", (3,)), variance=f32(3)), {}, r"mean's data type float16 differs"),
    (dict(input=f32(2, 3), mean=f32(2), variance=f32(3)), {}, r"mean's shape \[2\] must be \[3\]"),
    (dict(input=f32(2, 3), mean=f32(1, 3), variance=f32(3)), {}, r"mean's shape \[1, 3\] must be \[3\]"),
    (dict(input=f32(2, 3), mean=f32(3), variance=("int8", (3,))), {}, r"variance's data type int8 differs"),
    (dict(input=f32(2, 3), mean=f32(3), variance=f32(2)), {"axis": 0}, r"mean's shape \[3\] must be \[2\]"),
    (dict(input=f32(2, 3), mean=f32(2), variance=f32(3)), {"axis": 0}, r"variance's shape \[3\] must be \[2\]"),
    (dict(input=f32(2, 3), mean=f32(3), variance=f32(3), scale=("float16", (3,))), {},
     r"scale's data type float16 differs"),
    (dict(input=f32(2, 3), mean=f32(3), variance=f32(3), scale=f32(2)), {}, r"scale's shape \[2\] must be \[3\]"),
    (dict(input=f32(2, 3), mean=f32(3), variance=f32(3), bias=("int32", (3,))), {}, r"bias's data type int32"),
    (dict(input=f32(2, 3), mean=f32(3), variance=f32(3), bias=f32(3, 1)), {}, r"bias's shape \[3, 1\] must be \[3\]"),
]


@pytest.mark.parametrize("descriptors, options, match", BATCH_ERRORS, ids=[m for _, _, m in BATCH_ERRORS])
def test_batch_normalization_type_errors(descriptors, options, match):
    builder, x = builder_and_operands(**descriptors)
    opts = dict(options, **optional_operands(x, ("scale", "bias")))
    with pytest.raises(TypeError, match="batchNormalization: " + match):
        builder.batchNormalization(x["input"], x["mean"], x["variance"], opts)
    with pytest.raises(TypeError, match=r"^\[bn\] batchNormalization: "):
        builder.batchNormalization(x["input"], x["mean"], x["variance"], dict(opts, label="bn"))


INSTANCE_ERRORS = [
    (dict(input=("int8", (1, 2, 3, 3))), {}, r"input has data type int8"),
    (dict(input=f32(2, 3, 3)), {}, r"input has rank 3"),
    (dict(input=f32(1, 2, 3, 3, 1)), {}, r"input has rank 5"),
    (dict(input=f32(1, 2, 3, 3), scale=("float16", (2,))), {}, r"scale's data type float16 differs"),
    (dict(input=f32(1, 2, 3, 4), scale=f32(4)), {}, r"scale's shape \[4\] must be \[2\]"),
    (dict(input=f32(1, 2, 3, 4), scale=f32(2)), {"layout": "nhwc"}, r"scale's shape \[2\] must be \[4\]"),
    (dict(input=f32(1, 2, 3, 4), bias=("uint8", (2,))), {}, r"bias's data type uint8 differs"),
    (dict(input=f32(1, 2, 3, 4), bias=f32(1, 2)), {}, r"bias's shape \[1, 2\] must be \[2\]"),
]


@pytest.mark.parametrize("descriptors, options, match", INSTANCE_ERRORS, ids=[m for _, _, m in INSTANCE_ERRORS])
def test_instance_normalization_type_errors(descriptors, options, match):
    builder, x = builder_and_operands(**descriptors)
    opts = dict(options, **optional_operands(x, ("scale", "bias")))
    with pytest.raises(TypeError, match="instanceNormalization: " + match):
        builder.instanceNormalization(x["input"], opts)
    with pytest.raises(TypeError, match=r"^\[in\] instanceNormalization: "):
        builder.instanceNormalization(x["input"], dict(opts, label="in"))


LAYER_ERRORS = [
    (dict(input=("int32", (2, 3))), {}, r"input has data type int32"),
    (dict(input=f32(2, 3)), {"axes": [1, 1]}, r"axes \[1, 1\] contain duplicate values"),
    (dict(input=f32(2, 3)), {"axes": [2]}, r"axes item 2 is out of range for rank 2"),
    (dict(input=f32()), {"axes": [0]}, r"axes item 0 is out of range for rank 0"),
    (dict(input=f32(2, 3), scale=("float16", (3,))), {}, r"scale's data type float16 differs"),
    (dict(input=f32(2, 3), scale=f32(2, 3)), {}, r"scale's rank 2 differs from the number of axes 1"),
    (dict(input=f32(2, 3), scale=f32(3)), {"axes": []}, r"scale's rank 1 differs from the number of axes 0"),
    (dict(input=f32(2, 3, 4), scale=f32(3, 4)), {"axes": [2, 1]}, r"scale's dimension 0 is 3, but input's dimension 2"),
    (dict(input=f32(2, 3), bias=("int64", (3,))), {}, r"bias's data type int64 differs"),
    (dict(input=f32(2, 3), bias=f32()), {}, r"bias's rank 0 differs from the number of axes 1"),
    (dict(input=f32(2, 3), bias=f32(2)), {}, r"bias's dimension 0 is 2, but input's dimension 1"),
]


@pytest.mark.parametrize("descriptors, options, match", LAYER_ERRORS, ids=[m for _, _, m in LAYER_ERRORS])
def test_layer_normalization_type_errors(descriptors, options, match):
    builder, x = builder_and_operands(**descriptors)
    opts = dict(options, **optional_operands(x, ("scale", "bias")))
    with pytest.raises(TypeError, match="layerNormalization: " + match):
        builder.layerNormalization(x["input"], opts)
    with pytest.raises(TypeError, match=r"^\[ln\] layerNormalization: "):
        builder.layerNormalization(x["input"], dict(opts, label="ln"))


def test_operand_from_another_builder():
    builder, x = builder_and_operands(input=f32(1, 2, 2, 2), m=f32(2))
    _, y = builder_and_operands(s=f32(2))
    with pytest.raises(TypeError, match="batchNormalization: an operand was created by another MLGraphBuilder"):
        builder.batchNormalization(x["input"], x["m"], y["s"])
    with pytest.raises(TypeError, match="instanceNormalization: an operand was created by another"):
        builder.instanceNormalization(x["input"], {"bias": y["s"]})
    with pytest.raises(TypeError, match="layerNormalization: an operand was created by another"):
        builder.layerNormalization(x["input"], {"axes": [1], "scale": y["s"]})


def test_op_support_limits():
    async def limits():
        context = await webnn_py.ml.createContext()
        return context.opSupportLimits()
    limits = asyncio.run(limits())
    assert set(limits["batchNormalization"]) == {"input", "mean", "variance", "scale", "bias", "output"}
    assert limits["batchNormalization"]["mean"] == {"dataTypes": ["float32", "float16"],
                                                    "rankRange": {"min": 1, "max": 1}}
    for name in ("instanceNormalization", "layerNormalization"):
        assert set(limits[name]) == {"input", "scale", "bias", "output"}
    assert limits["instanceNormalization"]["input"]["rankRange"] == {"min": 4, "max": 4}
    assert limits["layerNormalization"]["scale"]["rankRange"]["min"] == 0
