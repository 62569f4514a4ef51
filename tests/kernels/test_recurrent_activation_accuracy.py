"""kernels.c's float32 sigmoid and tanh (sigmoidS / tanhS, through its `recurrent_activation_f32`
export: lstm / gru's gate activations; sigmoid is also the GEMM epilogue's) against float64
math over the whole float32 range: every 97th bit pattern from 0 to 100 (subnormals, the
polynomials' whole reduced range, the saturation regions on both sides) with both signs, the
largest finite values, the boundaries of the clamped exponent (sigmoid: -87.5 and 89 on -x;
tanh: |x| = 10), and NaN, ±inf, ±0. The bounds are kernels.c's and README's: sigmoid within
2 float32 ULP of the correctly rounded value wherever that value is normal (an absolute error
below 2^-126 where it is not), tanh within 3 ULP everywhere."""
import ctypes

import numpy as np
import pytest
import torch

from webnn_py.kernels import NATIVE_LIBRARY
from tests.portable.expect import ulp_distance

SIGMOID, TANH = 1, 2                      # kernels.c recurrent_activationS's act codes
SIGMOID_ULP, TANH_ULP = 2, 3
SMALLEST_NORMAL = 2.0 ** -126
EXACT = {SIGMOID: torch.sigmoid, TANH: torch.tanh}


@pytest.fixture(scope="module")
def activation(native):
    """x -> act(x) in float32 through the native build of kernels.c (the same float32
    operations as kernels.wasm: no FMA contraction, IEEE division)."""
    lib = ctypes.CDLL(str(NATIVE_LIBRARY))
    function = lib.recurrent_activation_f32
    function.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    function.restype = None

    def apply(x, act):
        y = np.array(x, np.float32)                 # a copy: the kernel works in place
        function(y.ctypes.data, y.size, act)
        return y
    return apply


def sweep():
    magnitudes = np.arange(0, np.float32(100).view(np.int32), 97, dtype=np.int32).view(np.float32)
    edges = np.array([np.finfo(np.float32).max, 1e38, 104, 89, 88.8, 88.72, 88.5, 88.37, 87.5, 87.3, 87, 20,
                      10.5, 10, 9.5, 9.01, 9, 0.55, np.finfo(np.float32).smallest_subnormal], np.float32)
    edges = np.concatenate([edges, np.nextafter(edges, np.float32(0)), np.nextafter(edges[1:], np.float32(np.inf))])
    both = np.concatenate([magnitudes, edges])
    return np.concatenate([both, -both])


@pytest.mark.parametrize("act,bound", [(SIGMOID, SIGMOID_ULP), (TANH, TANH_ULP)], ids=["sigmoid", "tanh"])
def test_within_its_ulp_bound_of_float64_over_the_float32_range(activation, act, bound):
    x = sweep()
    got = activation(x, act)
    exact = EXACT[act](torch.from_numpy(x.astype(np.float64))).numpy()
    normal = np.abs(exact) >= SMALLEST_NORMAL
    distance = ulp_distance(got[normal], exact[normal].astype(np.float32))
    assert distance.max() <= bound, f"{distance.max()} ULP at x = {x[normal][np.argmax(distance)]!r}"
    if act == TANH:           # tanh x = x (to the last bit) where |x| is tiny, subnormals included
        assert np.all(ulp_distance(got[~normal], exact[~normal].astype(np.float32)) <= bound)
    else:                     # sigmoid far below -87: 2^-126 at most (0 where it underflows)
        assert np.all(np.abs(got[~normal] - exact[~normal]) < SMALLEST_NORMAL)
        assert np.all(got >= 0) and np.all(got <= 1)


def test_special_values(activation):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -1e-45, 1e-45], np.float32)
    sigmoid, tanh = activation(x, SIGMOID), activation(x, TANH)
    assert np.isnan(sigmoid[0]) and np.isnan(tanh[0])
    np.testing.assert_array_equal(sigmoid[1:], [1, 0, 0.5, 0.5, 0.5, 0.5])
    np.testing.assert_array_equal(tanh[1:], [1, -1, 0, 0, x[5], x[6]])       # tanh x = x, subnormal
    assert not np.signbit(tanh[3]) and np.signbit(tanh[4])          # tanh(±0) = ±0


def test_same_bits_in_every_lane_width(activation):
    """The 16-lane (AVX-512 natively), 4-lane and one-at-a-time loops do the same float32
    operations: shifting the values by one element changes which loop takes each."""
    x = np.linspace(-30, 30, 4099, dtype=np.float32)
    for act in (SIGMOID, TANH):
        whole = activation(x, act)
        for start in (1, 2, 3, 5):
            np.testing.assert_array_equal(activation(x[start:], act), whole[start:])
