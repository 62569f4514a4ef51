"""Element-wise unary operators (§8.9.15), cast (§8.9.7) and the activations,
on small hand-computed cases (expected values from the definitions, evaluated
with Python's math module on the exact inputs).

Portable: runs under pytest on CPython and inside Pyodide under Node.js.
"""
import math

import numpy as np

import webnn_py

from .expect import assert_close, raises
from .graph import compute

F32 = np.float32


def unary(op, **options):
    return lambda b, o: getattr(b, op)(o["x"], options) if options else getattr(b, op)(o["x"])


async def run1(op, x, **options):
    return await compute(unary(op, **options), {"x": x})


async def builder():
    context = await webnn_py.ml.createContext()
    return webnn_py.MLGraphBuilder(context)


def f32(values):
    return np.array(values, dtype=F32)


# -- element-wise unary -----------------------------------------------------------------------

async def test_exact_unary_ops():
    x = f32([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.0])
    assert (await run1("abs", x)).tolist() == [2.5, 1.5, 0.5, 0.5, 1.5, 2.5, 3.0]
    assert (await run1("neg", x)).tolist() == [2.5, 1.5, 0.5, -0.5, -1.5, -2.5, -3.0]
    assert (await run1("ceil", x)).tolist() == [-2, -1, 0, 1, 2, 3, 3]
    assert (await run1("floor", x)).tolist() == [-3, -2, -1, 0, 1, 2, 3]
    # round half to even
    assert (await run1("roundEven", x)).tolist() == [-2, -2, 0, 0, 2, 2, 3]
    assert (await run1("sign", f32([-3, 0, 7, np.nan]))).tolist() == [-1, 0, 1, 0]   # the spec's decomposition
    assert (await run1("identity", x)).tolist() == x.tolist()


async def test_integer_unary_ops():
    x = np.array([-128, -5, 0, 9, 127], np.int8)
    assert (await run1("abs", x)).tolist() == [-128, 5, 0, 9, 127]      # -128 wraps, as int8 does
    assert (await run1("neg", x)).tolist() == [-128, 5, 0, -9, -127]
    assert (await run1("sign", x)).tolist() == [-1, -1, 0, 1, 1]
    big = np.array([-(2**63), 2**62], np.int64)
    assert (await run1("sign", big)).tolist() == [-1, 1]
    u = np.array([0, 2**64 - 1], np.uint64)
    assert (await run1("identity", u)).tolist() == [0, 2**64 - 1]


async def test_transcendental_unary_ops():
    x = f32([0.25, 1.0, 2.0])
    for op, fn in {"cos": math.cos, "sin": math.sin, "tan": math.tan, "exp": math.exp, "log": math.log,
                   "sqrt": math.sqrt, "erf": math.erf, "reciprocal": lambda v: 1 / v}.items():
        expected = f32([fn(float(v)) for v in x])
        assert_close(await run1(op, x), expected, ulp=2, what=op)
    special = await run1("log", f32([0, -1]))
    assert special[0] == -math.inf and math.isnan(special[1])
    assert math.isnan((await run1("sqrt", f32([-4])))[0])
    assert (await run1("reciprocal", f32([0, -0.0]))).tolist() == [math.inf, -math.inf]
    assert (await run1("erf", f32([-10, 10, 0]))).tolist() == [-1, 1, 0]


async def test_float16_unary():
    x = np.array([0.5, 2.0, -1.0], np.float16)
    got = await run1("exp", x)
    assert got.dtype == np.float16
    assert_close(got, np.array([math.exp(0.5), math.exp(2), math.exp(-1)], np.float16), ulp=1, what="exp f16")


async def test_unary_validation():
    b = await builder()
    i = b.input("i", {"dataType": "int32", "shape": [2]})
    u = b.input("u", {"dataType": "uint8", "shape": [2]})
    with raises(TypeError, match=r"^floor: input has data type int32"):
        b.floor(i)
    with raises(TypeError, match=r"^\[n\] neg: input has data type uint8"):
        b.neg(u, {"label": "n"})
    assert b.identity(u).dataType == "uint8"


# -- cast -------------------------------------------------------------------------------------

async def test_cast():
    got = await compute(lambda b, o: b.cast(o["x"], "int32"), {"x": f32([-2.7, -0.5, 0.5, 2.7, 1e10, np.nan])})
    assert got.tolist() == [-2, 0, 0, 2, 2**31 - 1, 0]     # truncation; saturation and NaN -> 0 are our choice
    got = await compute(lambda b, o: b.cast(o["x"], "uint8"), {"x": np.array([-1, 256, 300], np.int32)})
    assert got.tolist() == [255, 0, 44]                     # lowest 8 bits
    got = await compute(lambda b, o: b.cast(o["x"], "float16"), {"x": np.array([70000, 3, -65504], np.int64)})
    assert got.tolist() == [math.inf, 3, -65504]
    got = await compute(lambda b, o: b.cast(o["x"], "float32"), {"x": np.array([2**24 + 1], np.uint32)})
    assert got.tolist() == [2**24]                          # nearest, ties to even
    b = await builder()
    y = b.cast(b.input("x", {"dataType": "int8", "shape": [2, 3]}), "uint64")
    assert (y.dataType, y.shape) == ("uint64", [2, 3])
    with raises(TypeError):
        b.cast(b.input("z", {"dataType": "int8", "shape": [2]}), "float64")


# -- activations ------------------------------------------------------------------------------

async def test_relu_and_clamp():
    x = f32([-3, -0.5, 0, 2, 10])
    assert (await run1("relu", x)).tolist() == [0, 0, 0, 2, 10]
    assert (await run1("relu", np.array([-7, 7], np.int64))).tolist() == [0, 7]
    assert (await run1("clamp", x, minValue=-1, maxValue=3)).tolist() == [-1, -0.5, 0, 2, 3]
    assert (await run1("clamp", x, minValue=0.0)).tolist() == [0, 0, 0, 2, 10]
    assert (await run1("clamp", x, maxValue=1.0)).tolist() == [-3, -0.5, 0, 1, 1]
    assert (await run1("clamp", x)).tolist() == x.tolist()
    u = np.array([0, 100, 255], np.uint8)
    assert (await run1("clamp", u, minValue=10.0, maxValue=299.0)).tolist() == [10, 100, 255]
    b = await builder()
    with raises(TypeError, match=r"^\[c\] clamp: minValue .* is greater than maxValue"):
        b.clamp(b.input("x", {"dataType": "float32", "shape": [1]}), {"minValue": 1.0, "maxValue": 0.0, "label": "c"})


async def test_scalar_option_activations():
    x = f32([-2, -1, 0, 1, 4])
    assert_close(await run1("elu", x), f32([math.expm1(-2), math.expm1(-1), 0, 1, 4]), ulp=2, what="elu")
    assert_close(await run1("elu", x, alpha=2.0), f32([2 * math.expm1(-2), 2 * math.expm1(-1), 0, 1, 4]),
                 ulp=2, what="elu alpha")
    assert_close(await run1("leakyRelu", x), f32([-0.02, -0.01, 0, 1, 4]), ulp=1, what="leakyRelu")
    assert_close(await run1("leakyRelu", x, alpha=0.5), f32([-1, -0.5, 0, 1, 4]), ulp=0, what="leakyRelu alpha")
    assert_close(await run1("linear", x), x, ulp=0, what="linear")
    assert_close(await run1("linear", x, alpha=2.0, beta=1.0), f32([-3, -1, 1, 3, 9]), ulp=0, what="linear")
    # hardSigmoid: max(min(0.2 x + 0.5, 1), 0)
    assert_close(await run1("hardSigmoid", x), f32([0.1, 0.3, 0.5, 0.7, 1]), ulp=1, what="hardSigmoid")
    assert_close(await run1("hardSigmoid", x, alpha=0.5, beta=0.0), f32([0, 0, 0, 0.5, 1]), ulp=0,
                 what="hardSigmoid options")


async def test_smooth_activations():
    x = f32([-3, -1, 0, 0.5, 2])
    v = [float(t) for t in x]
    expected = {
        "sigmoid": [1 / (1 + math.exp(-t)) for t in v],
        "tanh": [math.tanh(t) for t in v],
        "softplus": [math.log1p(math.exp(t)) for t in v],
        "softsign": [t / (1 + abs(t)) for t in v],
        "gelu": [0.5 * t * (1 + math.erf(t / math.sqrt(2))) for t in v],
        "hardSwish": [t * max(0, min(6, t + 3)) / 6 for t in v],
    }
    for op, values in expected.items():
        assert_close(await run1(op, x), f32(values), ulp=2, what=op)
    assert (await run1("softplus", f32([100, -200]))).tolist() == [100, 0]    # no overflow


async def test_prelu():
    x = f32([[-2, 3], [-4, -1]])
    got = await compute(lambda b, o: b.prelu(o["x"], o["s"]), {"x": x, "s": f32([0.5, 2])})
    assert got.tolist() == [[-1, 3], [-2, -2]]
    # slope broadcast bidirectionally: [3] with [2, 1] gives [2, 3]
    xi = np.array([[-1], [2]], np.int32)
    got = await compute(lambda b, o: b.prelu(o["x"], o["s"]), {"x": xi, "s": np.array([1, 2, 3], np.int32)})
    assert got.tolist() == [[-1, -2, -3], [2, 2, 2]]
    b = await builder()
    a = b.input("a", {"dataType": "float32", "shape": [2, 3]})
    with raises(TypeError, match=r"^prelu: slope shape \[2\] and input shape \[2, 3\] are not"):
        b.prelu(a, b.input("s", {"dataType": "float32", "shape": [2]}))
    with raises(TypeError, match=r"^prelu: slope's data type float16 differs from input's float32"):
        b.prelu(a, b.input("h", {"dataType": "float16", "shape": [3]}))


async def test_softmax():
    x = f32([[1, 2, 3], [0, 0, 0]])
    got = await compute(lambda b, o: b.softmax(o["x"], 1), {"x": x})
    total = math.exp(1) + math.exp(2) + math.exp(3)
    assert_close(got, f32([[math.exp(1) / total, math.exp(2) / total, math.exp(3) / total], [1 / 3] * 3]),
                 ulp=2, what="softmax axis 1")
    got = await compute(lambda b, o: b.softmax(o["x"], 0), {"x": x})
    e = [1 / (1 + math.exp(-t)) for t in (1, 2, 3)]
    assert_close(got, f32([e, [1 - t for t in e]]), ulp=2, what="softmax axis 0")
    b = await builder()
    with raises(TypeError, match=r"^softmax: axis 2 is out of range for rank 2"):
        b.softmax(b.input("y", {"dataType": "float32", "shape": [2, 3]}), 2)
    with raises(TypeError, match=r"^softmax: input has rank 0"):
        b.softmax(b.input("z", {"dataType": "float32", "shape": []}), 0)
    with raises(TypeError, match=r"^\[sm\] softmax: input has data type int32"):
        b.softmax(b.input("w", {"dataType": "int32", "shape": [3]}), 0, {"label": "sm"})
