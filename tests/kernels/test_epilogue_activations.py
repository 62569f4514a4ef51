"""kernels.c's epilogue activations (activate4: hardSwish, sigmoid, x * sigmoid(x),
hardSigmoid) through the GEMM (the C sgemm and the host's BLAS + C epilogue pass) and the
depthwise kernel: hardSwish and hardSigmoid bit for bit against the operators' numpy
formulas, sigmoid within 3 ULP of float64 over a dense sweep and at special values."""
import numpy as np
import pytest
import torch

from webnn_py.kernels import HARD_SWISH, SIGMOID, SILU, hard_sigmoid, scale
from webnn_py.ops.activations import _hard_sigmoid, _hard_swish
from tests.portable.expect import ulp_distance

SIGMOID_ULP = 3
SPECIAL = np.array([0.0, -0.0, 1e-30, -1e-30, 3.0, -3.0, 6.0, -6.0, 20.0, -20.0, 87.5, -87.5, 104.0, -104.0,
                    np.inf, -np.inf, np.nan, 1e-8, -0.5, 0.5], np.float32)


def through_epilogue(kernels, values, activation):
    """values [m, n] through the GEMM epilogue: a zero product (zeros times an identity, so
    no inf * 0 arises), the values as bias_n row by row (0 + v is v; -0 becomes +0), then
    the activation."""
    m, n = values.shape
    zeros, identity = np.zeros((1, n), np.float32), np.eye(n, dtype=np.float32)
    return np.concatenate([kernels.gemm(zeros, identity, bias_n=np.ascontiguousarray(values[i]), clamp=activation)
                           for i in range(m)])


def sweep():
    return np.linspace(-30, 30, 64 * 401, dtype=np.float32).reshape(64, 401)


@pytest.mark.parametrize("values", [sweep(), SPECIAL.reshape(4, 5), np.tile(SPECIAL, (2, 1))],
                         ids=["sweep", "special", "special-16-lanes"])      # rows of 20: 16 lanes + 4
def test_hard_swish_and_hard_sigmoid_bit_for_bit(gemm_kernels, values):
    values = values + np.float32(0)            # the -0 the epilogue's 0 + v cannot keep
    got = through_epilogue(gemm_kernels, values, HARD_SWISH)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(got, _hard_swish(values))
    alpha, beta = np.float32(0.2), np.float32(0.5)
    got = through_epilogue(gemm_kernels, values, hard_sigmoid(alpha, beta))
    np.testing.assert_array_equal(got, _hard_sigmoid(values, alpha, beta))
    one_sixth = hard_sigmoid(np.float32(1 / 6), np.float32(0.5))     # torch's Hardsigmoid
    got = through_epilogue(gemm_kernels, values, one_sixth)
    np.testing.assert_array_equal(got, _hard_sigmoid(values, np.float32(1 / 6), np.float32(0.5)))


@pytest.mark.parametrize("values", [sweep(), SPECIAL.reshape(4, 5), np.tile(SPECIAL, (2, 1))],
                         ids=["sweep", "special", "special-16-lanes"])      # rows of 20: 16 lanes + 4
def test_sigmoid_and_silu_within_3_ulp_of_float64(gemm_kernels, values):
    exact = torch.sigmoid(torch.from_numpy(values.astype(np.float64))).numpy()
    got = through_epilogue(gemm_kernels, values, SIGMOID)
    nan = np.isnan(values)
    assert np.isnan(got[nan]).all()
    tiny = np.abs(exact) < 1.2e-38          # below the normal range: absolute 1e-38 at most
    assert np.all(ulp_distance(got[~nan & ~tiny], exact[~nan & ~tiny].astype(np.float32)) <= SIGMOID_ULP)
    assert np.all(np.abs(got[tiny] - exact[tiny]) <= 1.2e-38)
    silu = through_epilogue(gemm_kernels, values, SILU)
    # the product of x and the float32 sigmoid, one more rounding
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(silu[~nan], (values * got)[~nan])
    assert np.isnan(silu[nan]).all()


@pytest.mark.parametrize("channels", [20, 84])      # 84: blocks of 64 and 16 where FW is 16 (AVX-512)
def test_depthwise_epilogue_activations(native, channels):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 7, 9, channels)).astype(np.float32) * 4
    f = rng.standard_normal((3, 3, channels)).astype(np.float32)
    bias = rng.standard_normal(channels).astype(np.float32)
    plain = native.depthwise_nhwc(x, f, bias, (7, 9), (1, 1), (1, 1), (1, 1))
    for activation, reference in ((HARD_SWISH, _hard_swish(plain)),
                                  (hard_sigmoid(0.2, 0.5), _hard_sigmoid(plain, np.float32(0.2), np.float32(0.5)))):
        got = native.depthwise_nhwc(x, f, bias, (7, 9), (1, 1), (1, 1), (1, 1), clamp=activation)
        np.testing.assert_array_equal(got, reference)
    got = native.depthwise_nhwc(x, f, bias, (7, 9), (1, 1), (1, 1), (1, 1), clamp=SILU)
    exact = torch.sigmoid(torch.from_numpy(plain.astype(np.float64))).numpy().astype(np.float32)
    assert np.all(ulp_distance(got / plain, exact)[np.abs(plain) > 1e-3] <= SIGMOID_ULP + 2)


@pytest.mark.parametrize("values", [sweep(), SPECIAL.reshape(4, 5), np.tile(SPECIAL, (2, 1))],
                         ids=["sweep", "special", "special-16-lanes"])      # rows of 20: 16 lanes + 4
@pytest.mark.parametrize("factor", [0.125, 0.37, -3.5, 1e-30])
def test_scale_is_the_float32_product_bit_for_bit(gemm_kernels, values, factor):
    """Activation 6 (a mul by a constant scalar, attention's 1/sqrt(d)): numpy's float32 product."""
    values = values + np.float32(0)
    factor = np.float32(factor)
    got = through_epilogue(gemm_kernels, values, scale(factor))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, values * factor)
