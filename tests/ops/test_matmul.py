"""matmul (§8.9.35) and gemm (§8.9.24) against torch in float64, for float32 and
float16, with batch broadcasting, every gemm option, and every TypeError path."""
import asyncio

import numpy as np
import pytest

import webnn_py
from tests.portable.expect import assert_close

from .conftest import FLOAT_TYPES, builder_and_operands, random_array, run, torch

DTYPE_IDS = {"ids": lambda d: np.dtype(d).name}


def matmul_atol(dtype, k, bound):
    """WPT-style accumulation budget: a dot product of length K in the compute
    type (float32) can be off by about K·ε·Σ|a||b| (`bound` bounds that sum);
    float16 results are also rounded once to float16 (half an ULP of the
    largest result)."""
    tolerance = 2 * k * np.finfo(np.float32).eps * bound
    if np.dtype(dtype) == np.float16:
        tolerance += np.finfo(np.float16).eps * bound
    return tolerance


def torch64(array):
    return torch.from_numpy(np.ascontiguousarray(array).astype(np.float64))


# -- matmul --------------------------------------------------------------------------------

MATMUL_SHAPES = [
    ((3, 4), (4, 5)),                  # plain 2-D
    ((2, 3, 4), (2, 4, 5)),            # batched
    ((2, 1, 3, 4), (5, 4, 2)),         # batch dimensions broadcast both ways
    ((3, 4), (2, 2, 4, 1)),            # rank 2 against rank 4
    ((1, 64), (64, 1)),                # a longer reduction (K = 64)
    ((1, 1), (1, 1)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", FLOAT_TYPES, **DTYPE_IDS)
def test_matmul(shapes, dtype, rng):
    a = random_array(shapes[0], dtype, rng, -2, 2)
    b = random_array(shapes[1], dtype, rng, -2, 2)
    got = run(lambda builder, x: builder.matmul(x["a"], x["b"]), {"a": a, "b": b})
    expected = torch.matmul(torch64(a), torch64(b)).numpy()
    assert got.dtype == dtype
    k = shapes[0][-1]
    bound = torch.matmul(torch64(np.abs(a)), torch64(np.abs(b))).numpy().max()
    assert_close(got, expected.astype(dtype), atol=matmul_atol(dtype, k, bound), what=f"matmul {shapes}")


@pytest.mark.parametrize("dtype", FLOAT_TYPES, **DTYPE_IDS)
def test_matmul_constants_and_special_values(dtype):
    a = np.array([[np.inf, 1], [0, -0.0]], dtype)
    b = np.array([[1, 2], [3, 4]], dtype)
    got = run(lambda builder, x: builder.matmul(x["a"], x["b"]), {"a": a}, {"b": b})
    assert_close(got, np.array([[np.inf, np.inf], [0, 0]], dtype), ulp=0)


# -- gemm ----------------------------------------------------------------------------------

GEMM_CASES = [
    # (shape a, shape b, shape c or None, options)
    ((3, 4), (4, 5), None, {}),
    ((4, 3), (4, 5), None, {"aTranspose": True}),
    ((3, 4), (5, 4), None, {"bTranspose": True}),
    ((4, 3), (5, 4), (3, 5), {"aTranspose": True, "bTranspose": True}),
    ((3, 4), (4, 5), (3, 5), {}),
    ((3, 4), (4, 5), (5,), {"alpha": 2.0}),
    ((3, 4), (4, 5), (3, 1), {"beta": 0.5}),
    ((3, 4), (4, 5), (1, 5), {"alpha": -0.75, "beta": 3.0}),
    ((3, 4), (4, 5), (), {"alpha": 0.1, "beta": -1.3}),       # scalar c; alpha/beta not exact in float16
    ((3, 4), (4, 5), None, {"beta": 7.0}),                      # beta without c has no effect
    ((2, 32), (32, 2), (2, 2), {"alpha": 0.0}),
]


@pytest.mark.parametrize("case", GEMM_CASES, ids=str)
@pytest.mark.parametrize("dtype", FLOAT_TYPES, **DTYPE_IDS)
def test_gemm(case, dtype, rng):
    shape_a, shape_b, shape_c, options = case
    inputs = {"a": random_array(shape_a, dtype, rng, -2, 2), "b": random_array(shape_b, dtype, rng, -2, 2)}
    if shape_c is not None:
        inputs["c"] = random_array(shape_c, dtype, rng, -2, 2)

    def build(builder, x):
        opts = dict(options)
        if "c" in x:
            opts["c"] = x["c"]
        return builder.gemm(x["a"], x["b"], opts)

    got = run(build, inputs)
    # Steps 5-6: alpha and beta are cast to the operand type first.
    alpha = float(np.dtype(dtype).type(options.get("alpha", 1.0)))
    beta = float(np.dtype(dtype).type(options.get("beta", 1.0)))
    a, b = torch64(inputs["a"]), torch64(inputs["b"])
    a = a.T if options.get("aTranspose") else a
    b = b.T if options.get("bTranspose") else b
    if shape_c is None:
        expected = alpha * (a @ b)
    else:
        expected = torch.addmm(torch64(inputs["c"]), a, b, beta=beta, alpha=alpha)
    bound = abs(alpha) * (a.abs() @ b.abs()).max().item() + (abs(beta) * np.abs(inputs["c"]).max() if "c" in inputs else 0)
    assert got.dtype == dtype and got.shape == tuple(expected.shape)
    assert_close(got, expected.numpy().astype(dtype), atol=matmul_atol(dtype, a.shape[1] + 2, bound),
                 what=f"gemm {case}")


def test_gemm_alpha_is_cast_to_float16():
    # 1/3 is not a float16: step 5 rounds it to 0.333251953125 before multiplying.
    a = np.array([[3.0]], np.float16)
    b = np.array([[1024.0]], np.float16)
    got = run(lambda builder, x: builder.gemm(x["a"], x["b"], {"alpha": 1 / 3}), {"a": a, "b": b})
    assert got.item() == np.float16(1 / 3) * 3 * 1024 == 1023.75


# -- validation ----------------------------------------------------------------------------

MATMUL_ERRORS = [
    ({"a": ("int32", (2, 2)), "b": ("int32", (2, 2))}, r"matmul: a has data type int32"),
    ({"a": ("float32", (2, 2)), "b": ("float16", (2, 2))}, r"matmul: b's data type float16 differs from a's float32"),
    ({"a": ("float32", (2,)), "b": ("float32", (2, 2))}, r"matmul: a has rank 1"),
    ({"a": ("float32", (2, 2)), "b": ("float32", ())}, r"matmul: b has rank 0"),
    ({"a": ("float32", (2, 3)), "b": ("float32", (2, 3))}, r"matmul: a's columns \(3\) differ from b's rows \(2\)"),
    ({"a": ("float32", (2, 2, 3)), "b": ("float32", (3, 3, 1))},
     r"matmul: batch dimensions \[2\] and \[3\] are not broadcastable"),
]


@pytest.mark.parametrize("descriptors, match", MATMUL_ERRORS, ids=[m for _, m in MATMUL_ERRORS])
def test_matmul_type_errors(descriptors, match):
    builder, x = builder_and_operands(**descriptors)
    with pytest.raises(TypeError, match=match):
        builder.matmul(x["a"], x["b"])
    with pytest.raises(TypeError, match=r"^\[mm\] matmul: "):
        builder.matmul(x["a"], x["b"], {"label": "mm"})


GEMM_ERRORS = [
    ({"a": ("int32", (2, 2)), "b": ("int32", (2, 2))}, {}, r"gemm: a has data type int32"),
    ({"a": ("float16", (2, 2)), "b": ("float32", (2, 2))}, {}, r"gemm: b's data type float32 differs from a's float16"),
    ({"a": ("float32", (1, 2, 2)), "b": ("float32", (2, 2))}, {}, r"gemm: a has rank 3"),
    ({"a": ("float32", (2, 2)), "b": ("float32", (2,))}, {}, r"gemm: b has rank 1"),
    ({"a": ("float32", (2, 3)), "b": ("float32", (2, 3))}, {}, r"gemm: a's columns \(3\) differ from b's rows \(2\)"),
    ({"a": ("float32", (2, 3)), "b": ("float32", (3, 4))}, {"aTranspose": True}, r"gemm: a's columns \(2\)"),
    ({"a": ("float32", (2, 3)), "b": ("float32", (3, 4))}, {"bTranspose": True}, r"gemm: a's columns \(3\) differ from b's rows \(4\)"),
    ({"a": ("float32", (2, 3)), "b": ("float32", (3, 4)), "c": ("float32", (3,))}, {},
     r"gemm: c's shape \[3\] is not unidirectionally broadcastable to \[2, 4\]"),
    ({"a": ("float32", (2, 3)), "b": ("float32", (3, 4)), "c": ("float32", (1, 2, 4))}, {},
     r"gemm: c's shape \[1, 2, 4\] is not unidirectionally broadcastable"),
    ({"a": ("float32", (2, 3)), "b": ("float32", (3, 4)), "c": ("float16", (2, 4))}, {},
     r"gemm: c's data type float16 differs from a's float32"),
    ({"a": ("float32", (2, 3)), "b": ("float32", (3, 4)), "c": ("int32", (4,))}, {},
     r"gemm: c's data type int32 differs"),
]


@pytest.mark.parametrize("descriptors, options, match", GEMM_ERRORS, ids=[m for _, _, m in GEMM_ERRORS])
def test_gemm_type_errors(descriptors, options, match):
    builder, x = builder_and_operands(**descriptors)
    opts = dict(options, **({"c": x["c"]} if "c" in x else {}))
    with pytest.raises(TypeError, match=match):
        builder.gemm(x["a"], x["b"], opts)
    with pytest.raises(TypeError, match=r"^\[g\] gemm: "):
        builder.gemm(x["a"], x["b"], dict(opts, label="g"))


def test_operand_from_another_builder():
    builder, x = builder_and_operands(a=("float32", (2, 2)))
    other, y = builder_and_operands(b=("float32", (2, 2)), c=("float32", (2, 2)))
    with pytest.raises(TypeError, match="matmul: an operand was created by another MLGraphBuilder"):
        builder.matmul(x["a"], y["b"])
    with pytest.raises(TypeError, match="gemm: an operand was created by another MLGraphBuilder"):
        other.gemm(y["b"], y["c"], {"c": x["a"]})


def test_op_support_limits():
    async def limits():
        context = await webnn_py.ml.createContext()
        return context.opSupportLimits()
    limits = asyncio.run(limits())
    assert limits["matmul"]["a"] == {"dataTypes": ["float32", "float16"], "rankRange": {"min": 2, "max": 8}}
    assert set(limits["matmul"]) == {"a", "b", "output"}
    assert set(limits["gemm"]) == {"a", "b", "c", "output"}
    assert limits["gemm"]["c"]["rankRange"] == {"min": 0, "max": 2}
    assert limits["gemm"]["output"]["rankRange"] == {"min": 2, "max": 2}
