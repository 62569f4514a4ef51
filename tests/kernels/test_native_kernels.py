"""The C kernels (the source of kernels.wasm, built natively) against independent
references: float64 numpy products and torch's conv2d. Float tolerances are tight
(the sums differ only in rounding order); results on small integers are exact."""
import itertools

import numpy as np
import pytest
import torch

import webnn_py.kernels as kernels_module

RNG = np.random.default_rng(20261122)


def reference_gemm(a, b, bias_m=None, bias_n=None, clamp=None):
    y = a.astype(np.float64) @ b.astype(np.float64)
    if bias_m is not None:
        y += bias_m[:, None]
    if bias_n is not None:
        y += bias_n
    if clamp is not None:
        y = np.clip(y, *clamp)
    return y


def assert_close(actual, a, b, expected):
    assert actual.dtype == np.float32 and actual.shape == expected.shape
    # Rounding of a k-term float32 sum: a few ulps of the sum of |products|.
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)) + 1
    bound = 4 * max(1, a.shape[1]) * np.finfo(np.float32).eps * scale
    assert np.all(np.abs(actual - expected) <= bound), np.max(np.abs(actual - expected) / bound)


SHAPES = [(1, 1, 1), (1, 8, 1), (4, 8, 3), (5, 9, 7), (3, 4, 2), (7, 3, 5), (64, 64, 64), (65, 67, 33),
          (130, 12, 200), (2, 131, 1), (129, 17, 0), (0, 5, 3), (6, 0, 4), (11, 1000, 19), (200, 24, 16)]


@pytest.mark.parametrize("m,n,k", SHAPES)
def test_gemm_shapes(native, m, n, k):
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    assert_close(native.gemm(a, b), a, b, reference_gemm(a, b))


@pytest.mark.parametrize("m,n,k", [(5, 9, 7), (64, 40, 33), (3, 17, 128)])
def test_gemm_strided_operands(native, m, n, k):
    # A transposed (column stride > 1), B a slice of wider rows, A a strided row slice.
    at = RNG.standard_normal((k, m)).astype(np.float32)
    wide = RNG.standard_normal((k, n + 5)).astype(np.float32)
    b = wide[:, 2:2 + n]
    assert_close(native.gemm(at.T, b), at.T, b, reference_gemm(at.T, b))
    rows = RNG.standard_normal((2 * m, k + 3)).astype(np.float32)
    a = rows[::2, 1:1 + k]
    assert_close(native.gemm(a, b), a, b, reference_gemm(a, b))
    # A negatively strided operand is copied, never read backwards.
    assert_close(native.gemm(a[::-1], b), a[::-1], b, reference_gemm(a[::-1], b))


@pytest.mark.parametrize("m,n,k", [(9, 13, 6), (4, 8, 5), (67, 20, 3)])
@pytest.mark.parametrize("clamp", [None, (0.0, np.inf), (0.0, 6.0), (-1.5, 0.25)])
def test_gemm_epilogue(gemm_kernels, m, n, k, clamp):
    a = RNG.standard_normal((m, k)).astype(np.float32) * 3
    b = RNG.standard_normal((k, n)).astype(np.float32)
    bias_m = RNG.standard_normal(m).astype(np.float32)
    bias_n = RNG.standard_normal(n).astype(np.float32)
    for bm, bn in ((None, bias_n), (bias_m, None), (bias_m, bias_n)):
        got = gemm_kernels.gemm(a, b, bias_m=bm, bias_n=bn, clamp=clamp)
        assert_close(got, a, b, reference_gemm(a, b, bm, bn, clamp))
        if clamp is not None:
            assert got.min() >= clamp[0] and got.max() <= clamp[1]


def test_gemm_integers_exact_and_special_values(native):
    a = RNG.integers(-8, 9, (23, 31)).astype(np.float32)
    b = RNG.integers(-8, 9, (31, 19)).astype(np.float32)
    np.testing.assert_array_equal(native.gemm(a, b), (a.astype(np.int64) @ b.astype(np.int64)).astype(np.float32))
    # IEEE: inf * 0 is NaN, NaN propagates through the sum and through the clamp.
    a = np.ones((5, 3), np.float32)
    b = np.ones((3, 9), np.float32)
    a[1, 0], b[0, 2], a[3, 1] = np.inf, 0.0, np.nan
    got = native.gemm(a, b, clamp=(0.0, 6.0))
    assert np.isnan(got[1, 2]) and np.isnan(got[3]).all()
    assert got[0, 0] == 3.0 and got[1, 0] == 6.0
    got = native.gemm(a, b)
    assert got[1, 0] == np.inf


def test_gemm_writes_only_its_output(native):
    a = RNG.standard_normal((6, 5)).astype(np.float32)
    b = RNG.standard_normal((5, 10)).astype(np.float32)
    guard = np.full(6 * 10 + 16, 7.0, np.float32)
    out = guard[8:8 + 60].reshape(6, 10)
    native.gemm(a, b, out=out)
    assert (guard[:8] == 7).all() and (guard[-8:] == 7).all()
    assert_close(out, a, b, reference_gemm(a, b))


def reference_depthwise(x, w_hwc, bias, strides, dilations, pads, clamp):
    """torch (float64) conv2d with groups = channels; pads = (top, bottom, left, right)."""
    xt = torch.from_numpy(x.astype(np.float64)).permute(0, 3, 1, 2)
    xt = torch.nn.functional.pad(xt, (pads[2], pads[3], pads[0], pads[1]))
    wt = torch.from_numpy(w_hwc.astype(np.float64)).permute(2, 0, 1).unsqueeze(1)
    bt = None if bias is None else torch.from_numpy(bias.astype(np.float64))
    y = torch.nn.functional.conv2d(xt, wt, bt, stride=strides, dilation=dilations, groups=x.shape[3])
    y = y.permute(0, 2, 3, 1).numpy()
    return np.clip(y, *clamp) if clamp is not None else y


def out_size(size, k, d, s, p0, p1):
    return (size + p0 + p1 - ((k - 1) * d + 1)) // s + 1


def has_output(case) -> bool:
    (_, h, w, _), (kh, kw), (strides, dilations, pads) = case
    return (out_size(h, kh, dilations[0], strides[0], pads[0], pads[1]) >= 1
            and out_size(w, kw, dilations[1], strides[1], pads[2], pads[3]) >= 1)


# Only geometries with a non-empty output (WebNN rejects the others at build time).
DEPTHWISE = [case for case in itertools.product(
    # n, h, w, c: every channel loop of every build (blocks of 4 FW channels, FW = 4 or 16, then FW, 4, 1)
    [(1, 7, 9, 16), (2, 5, 6, 3), (1, 12, 11, 36), (1, 4, 4, 1), (1, 9, 8, 21), (1, 5, 6, 88), (1, 4, 5, 150)],
    [(3, 3), (1, 1), (5, 5), (2, 3)],                                             # kh, kw
    [((1, 1), (1, 1), (1, 1, 1, 1)), ((2, 2), (1, 1), (0, 1, 0, 1)), ((1, 2), (2, 1), (2, 2, 1, 3)),
     ((3, 1), (1, 2), (0, 0, 0, 0)), ((1, 1), (1, 1), (4, 0, 3, 5))],             # strides, dilations, pads
) if has_output(case)]


@pytest.mark.parametrize("shape,kernel,geometry", DEPTHWISE)
def test_depthwise_against_torch(native, shape, kernel, geometry):
    strides, dilations, pads = geometry
    n, h, w, c = shape
    kh, kw = kernel
    oh = out_size(h, kh, dilations[0], strides[0], pads[0], pads[1])
    ow = out_size(w, kw, dilations[1], strides[1], pads[2], pads[3])
    x = RNG.standard_normal(shape).astype(np.float32)
    f = RNG.standard_normal((kh, kw, c)).astype(np.float32)
    bias = RNG.standard_normal(c).astype(np.float32)
    for b, clamp in ((None, None), (bias, (0.0, 6.0)), (bias, None)):
        got = native.depthwise_nhwc(x, f, b, (oh, ow), strides, dilations, (pads[0], pads[2]), clamp)
        want = reference_depthwise(x, f, b, strides, dilations, pads, clamp)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * kh * kw)


def test_depthwise_integers_exact(native):
    x = RNG.integers(-4, 5, (1, 10, 10, 20)).astype(np.float32)
    f = RNG.integers(-4, 5, (3, 3, 20)).astype(np.float32)
    bias = RNG.integers(-4, 5, 20).astype(np.float32)
    got = native.depthwise_nhwc(x, f, bias, (5, 5), (2, 2), (1, 1), (1, 1))
    want = reference_depthwise(x, f, bias, (2, 2), (1, 1), (1, 0, 1, 0), None)
    np.testing.assert_array_equal(got, want.astype(np.float32))


def test_clamp_kernel_matches_numpy_bit_for_bit(native):
    """Including the special values: NaN passes, ties give the bound (numpy's -0/+0), infinities."""
    special = np.array([-0.0, 0.0, np.inf, -np.inf, np.nan, 6.0, -6.0, 1e-45, -1e-45, 5.999999, 6.000001, 3.0],
                       np.float32)
    for n in (1, 3, 4, 15, 16, 17, 37, 1000):
        x = np.concatenate([special, RNG.standard_normal(n).astype(np.float32) * 8])
        for lo, hi in ((0.0, 6.0), (-0.0, 6.0), (0.0, np.inf), (-1.5, 0.25), (-np.inf, np.inf)):
            want = np.minimum(np.maximum(x, np.full_like(x, lo)), np.full_like(x, hi))
            got = native.clamp(x, lo, hi, np.empty_like(x))
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
            y = x.copy()
            native.clamp(y, lo, hi, y)        # in place
            np.testing.assert_array_equal(y.view(np.uint32), want.view(np.uint32))


def test_gelu_kernel_within_one_ulp_of_float64_over_a_dense_sweep(native):
    """Against Python's math.erfc in float64 (independent of the kernel's table), as the
    numpy path is tested; plus NaN, infinities, signed zeros, tiny values."""
    import math
    x = np.concatenate([np.linspace(-16, 8, 200_001), [-1e-30, 1e-30, 3e-39, -3e-39, 13.0, -12.0, 40.0, -40.0]])
    x = x.astype(np.float32)
    got = native.gelu(x)
    ref = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64).tolist()])
    ref32 = ref.astype(np.float32)
    ulp = np.spacing(np.abs(ref32)).astype(np.float64)
    assert np.all(np.abs(got - ref) <= ulp), np.max(np.abs(got - ref) / ulp)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32)
    got = native.gelu(special)
    assert np.isnan(got[0]) and got[1] == np.inf and np.isnan(got[2])     # -inf * 0 is NaN, as the formula says
    assert got[3] == 0 and got[4] == 0


def test_gelu_short_path_and_its_edges_within_one_ulp(native):
    """Groups of lanes (four in wasm and SSE builds, eight with AVX-512) all within
    |x| <= 2 sqrt 2 take the polynomial without exp (where 1 + erf(x / sqrt 2) falls to
    0.0047); a group with one element beyond takes the table path. Both sides of the bound,
    and the bound itself, in both kinds of group, for either group width (every block
    below starts at a multiple of 8)."""
    import math
    from webnn_py.ops.elementwise_unary import ERF_NEAR
    bound = np.float32(ERF_NEAR * math.sqrt(2.0))
    edges = [np.nextafter(bound, np.float32(0)), bound, np.nextafter(bound, np.float32(9))]
    values = [v * sign for v in edges for sign in (1, -1)]
    near = np.linspace(-2.8, 2.8, 4000).astype(np.float32)
    x = np.concatenate([near, np.array(values * 4, np.float32), np.repeat(np.float32(values), 8),
                        [0.5, -0.5, 1.0, 40.0, -2.0, -1.0, 0.25, np.nan]]).astype(np.float32)
    got = native.gelu(x)
    ref = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64).tolist()])
    ulp = np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64)
    ok = np.abs(got - ref) <= ulp
    assert np.all(ok | (np.isnan(ref) & np.isnan(got))), np.nanmax(np.abs(got - ref) / ulp)


@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (4, 128), (2, 5, 1000), (9,), (3, 197), (2, 12)])
def test_softmax_rows_within_one_ulp_of_float64(native, shape):
    x = (RNG.standard_normal(shape) * 30).astype(np.float32)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    ref = e / e.sum(axis=-1, keepdims=True)
    got = native.softmax_rows(x)
    ulp = np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64)
    assert got.dtype == np.float32 and np.all(np.abs(got - ref) <= ulp)


def test_softmax_rows_special_values(native):
    x = np.array([[0.0, np.nan, 1.0, 2.0], [np.inf, 0.0, 1.0, 2.0], [-np.inf, 0.0, 0.0, -np.inf],
                  [-np.inf] * 4, [1e30, -1e30, 1e30, 0.0]], np.float32)
    got = native.softmax_rows(x)
    assert np.isnan(got[0]).all()                              # NaN row
    assert np.isnan(got[1]).all()                              # inf - inf is NaN, so is the sum
    np.testing.assert_array_equal(got[2], [0.0, 0.5, 0.5, 0.0])
    assert np.isnan(got[3]).all()                              # -inf - -inf
    np.testing.assert_array_equal(got[4], [0.5, 0.0, 0.5, 0.0])


@pytest.mark.parametrize("shape,kernel,geometry", DEPTHWISE[::3])
def test_im2col_then_gemm_is_a_conv(native, shape, kernel, geometry):
    """The patch matrix times the filter matrix against torch's conv2d (groups 1), and
    the patch matrix itself against patches cut out of a zero-padded copy."""
    strides, dilations, pads = geometry
    _, h, w, c = shape
    kh, kw = kernel
    oh = out_size(h, kh, dilations[0], strides[0], pads[0], pads[1])
    ow = out_size(w, kw, dilations[1], strides[1], pads[2], pads[3])
    x = RNG.standard_normal((h, w, c)).astype(np.float32)
    o = 5
    wt = RNG.standard_normal((o, c, kh, kw)).astype(np.float32)
    matrix = np.ascontiguousarray(wt.transpose(2, 3, 1, 0).reshape(kh * kw * c, o))
    cols = np.full((oh * ow, kh * kw * c), np.nan, np.float32)
    native.im2col_nhwc(x, (kh, kw), strides, dilations, (pads[0], pads[2]), range(0, oh), ow, cols)
    xp = np.pad(x, ((pads[0], pads[1]), (pads[2], pads[3]), (0, 0)))
    for oy, ox in [(0, 0), (oh - 1, ow - 1), (oh // 2, ow // 3)]:
        patch = np.stack([xp[oy * strides[0] + i * dilations[0], ox * strides[1] + j * dilations[1]]
                          for i in range(kh) for j in range(kw)]).reshape(-1)
        np.testing.assert_array_equal(cols[oy * ow + ox], patch)
    got = native.gemm(cols, matrix).reshape(oh, ow, o)
    xt = torch.nn.functional.pad(torch.from_numpy(x.astype(np.float64)).permute(2, 0, 1)[None],
                                    (pads[2], pads[3], pads[0], pads[1]))
    ref = torch.nn.functional.conv2d(xt, torch.from_numpy(wt.astype(np.float64)), stride=strides,
                                     dilation=dilations)[0].permute(1, 2, 0).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * kh * kw * c)
    # A block of rows in the middle writes only its rows.
    part = np.full((2 * ow, kh * kw * c), np.nan, np.float32)
    if oh >= 3:
        native.im2col_nhwc(x, (kh, kw), strides, dilations, (pads[0], pads[2]), range(1, 3), ow, part)
        np.testing.assert_array_equal(part, cols[ow:3 * ow])


# c, o: input channels (an image's 3, and 1 and 4), output channels in strips of FW (4 or 16)
# then 4: 4, 8, 16, 20, 36.
DIRECT_CHANNELS = [(3, 16), (1, 4), (4, 20), (3, 36), (2, 8)]


@pytest.mark.parametrize("channels", DIRECT_CHANNELS)
@pytest.mark.parametrize("shape,kernel,geometry", DEPTHWISE[::4])
def test_conv2d_direct_against_torch(native, channels, shape, kernel, geometry):
    """conv2d_direct (groups 1) against torch's float64 conv2d, on a C-contiguous NHWC image
    and on the NHWC view of an NCHW one (its strides read as they are): rows of 8 pixels and
    the last ones, padding, strides, dilations, with and without bias and clamp."""
    strides, dilations, pads = geometry
    _, h, w, _ = shape
    c, o = channels
    kh, kw = kernel
    oh = out_size(h, kh, dilations[0], strides[0], pads[0], pads[1])
    ow = out_size(w, kw, dilations[1], strides[1], pads[2], pads[3])
    nchw = RNG.standard_normal((1, c, h, w)).astype(np.float32)
    wt = RNG.standard_normal((o, c, kh, kw)).astype(np.float32)
    filter_hwio = np.ascontiguousarray(wt.transpose(2, 3, 1, 0))
    bias = RNG.standard_normal(o).astype(np.float32)
    xt = torch.nn.functional.pad(torch.from_numpy(nchw.astype(np.float64)), (pads[2], pads[3], pads[0], pads[1]))
    for b, clamp in ((None, None), (bias, (0.0, 6.0)), (bias, None)):
        ref = torch.nn.functional.conv2d(xt, torch.from_numpy(wt.astype(np.float64)),
                                         None if b is None else torch.from_numpy(b.astype(np.float64)),
                                         stride=strides, dilation=dilations)[0].permute(1, 2, 0).numpy()
        if clamp is not None:
            ref = np.clip(ref, *clamp)
        for image in (nchw[0].transpose(1, 2, 0), np.ascontiguousarray(nchw[0].transpose(1, 2, 0))):
            out = np.full((1, oh, ow, o), np.nan, np.float32)
            native.conv2d_direct(image, filter_hwio, b, strides, dilations, (pads[0], pads[2]), clamp, out)
            np.testing.assert_allclose(out[0], ref, rtol=1e-5, atol=1e-5 * kh * kw * c)


def test_conv2d_direct_integers_exact_and_hard_swish(native):
    """Small integers: exact sums; the hardSwish epilogue as the operator's float32 steps."""
    x = RNG.integers(-4, 5, (1, 3, 13, 17)).astype(np.float32)
    wt = RNG.integers(-3, 4, (16, 3, 3, 3)).astype(np.float32)
    bias = RNG.integers(-4, 5, 16).astype(np.float32)
    out = np.empty((1, 7, 9, 16), np.float32)
    native.conv2d_direct(x[0].transpose(1, 2, 0), np.ascontiguousarray(wt.transpose(2, 3, 1, 0)), bias,
                         (2, 2), (1, 1), (1, 1), kernels_module.HARD_SWISH, out)
    y = torch.nn.functional.conv2d(torch.from_numpy(x.astype(np.float64)), torch.from_numpy(wt.astype(np.float64)),
                                   torch.from_numpy(bias.astype(np.float64)), stride=2, padding=1)
    y = y[0].permute(1, 2, 0).numpy().astype(np.float32)
    want = (y * np.clip(y + np.float32(3), np.float32(0), np.float32(6))) / np.float32(6)
    np.testing.assert_array_equal(out[0], want)


@pytest.mark.parametrize("m,n,k", [(9, 13, 6), (4, 8, 5), (67, 20, 3), (130, 36, 17)])
def test_gemm_residual_epilogue_is_the_separate_float32_adds(gemm_kernels, m, n, k):
    """((a b + bias) + residual) then clamp: bit for bit the kernel's own product followed
    by numpy's float32 adds one at a time (every block shape: 4x8, 1x8, 4-wide, scalar),
    with the residual also given as the output buffer itself."""
    native = gemm_kernels
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    bias = RNG.standard_normal(n).astype(np.float32)
    residual = RNG.standard_normal((m, n)).astype(np.float32)
    product = native.gemm(a, b)
    np.testing.assert_array_equal(native.gemm(a, b, bias_n=bias, residual=residual), (product + bias) + residual)
    np.testing.assert_array_equal(native.gemm(a, b, residual=residual), product + residual)
    np.testing.assert_array_equal(native.gemm(a, b, bias_n=bias, residual=residual, clamp=(-0.5, 1.0)),
                                  np.clip((product + bias) + residual, np.float32(-0.5), np.float32(1.0)))
    in_place = residual.copy()
    native.gemm(a, b, bias_n=bias, residual=in_place, out=in_place)
    np.testing.assert_array_equal(in_place, (product + bias) + residual)


@pytest.mark.parametrize("m,n,k", [(4, 8, 3), (37, 20, 9), (130, 1024, 64), (16, 7, 5), (2, 9, 1)])
def test_a_b_packed_at_build_gives_the_same_bits(native, m, n, k):
    """gemm(packed_b=pack_b(b)) is the same computation as packing at the call (every
    strip shape: full 8-column strips packed, the 4-wide and scalar edges read from b),
    also where the call would not have packed (few rows); None where nothing is packed."""
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    bias = RNG.standard_normal(n).astype(np.float32)
    packed = native.pack_b(b)
    if n < 8 or k == 1:
        assert packed is None
    else:
        assert packed.shape == (k * (n // 8) * 8,)
        np.testing.assert_array_equal(packed[:8 * k].reshape(k, 8), b[:, :8])
    got = native.gemm(a, b, bias_n=bias, clamp=(-1.0, 1.0), packed_b=packed)
    np.testing.assert_array_equal(got, native.gemm(a, b, bias_n=bias, clamp=(-1.0, 1.0)))
    assert_close(native.gemm(a, b, packed_b=packed), a, b, reference_gemm(a, b))


@pytest.mark.parametrize("m,n", [(1, 1), (3, 3), (5, 4), (7, 13), (64, 96)])
def test_gemm_epilogue_pass_is_the_separate_float32_operations(native, m, n):
    """The epilogue on its own (the host's GEMMs): ((p + bias_m) + bias_n) + residual, then
    min(max(., lo), hi), bit for bit numpy's float32 operations one at a time, into a new
    array, in place, and with the residual being the output itself; NaN passes the clamp."""
    product = RNG.standard_normal((m, n)).astype(np.float32) * 4
    product[0, 0] = np.nan
    bias_m = RNG.standard_normal(m).astype(np.float32)
    bias_n = RNG.standard_normal(n).astype(np.float32)
    residual = RNG.standard_normal((m, n)).astype(np.float32)
    lo, hi = np.float32(-1.0), np.float32(2.5)
    summed = ((product + bias_m[:, None]) + bias_n) + residual
    want = np.minimum(np.maximum(summed, lo), hi)
    want[0, 0] = np.nan
    out = np.empty_like(product)
    native.epilogue(product, out, bias_m, bias_n, residual, (float(lo), float(hi)))
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(native.epilogue(product, np.empty_like(product), bias_n=bias_n),
                                  product + bias_n)
    in_place = product.copy()
    native.epilogue(in_place, in_place, bias_m=bias_m)
    np.testing.assert_array_equal(in_place, product + bias_m[:, None])
    aliased = residual.copy()
    native.epilogue(product, aliased, bias_n=bias_n, residual=aliased)
    np.testing.assert_array_equal(aliased, (product + bias_n) + residual)


@pytest.mark.parametrize("shape", [(128, 256), (3, 7), (2, 5, 1024), (1, 1), (4, 12), (3, 197)])
@pytest.mark.parametrize("affine", [False, True])
def test_layernorm_rows_within_one_ulp_of_float64(native, shape, affine):
    x = (RNG.standard_normal(shape) * 3 + 5).astype(np.float32)
    n = shape[-1]
    scale = RNG.uniform(0.5, 1.5, n).astype(np.float32) if affine else None
    bias = RNG.standard_normal(n).astype(np.float32) if affine else None
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=-1, keepdims=True)
    want = (x64 - mean) / np.sqrt(((x64 - mean) ** 2).mean(axis=-1, keepdims=True) + np.float64(np.float32(1e-5)))
    if affine:
        want = want * scale + bias
    got = native.layernorm_rows(x, scale, bias, float(np.float32(1e-5)))
    assert got.dtype == np.float32 and got.shape == x.shape
    diff = np.abs(got.view(np.int32).astype(np.int64) - want.astype(np.float32).view(np.int32).astype(np.int64))
    assert diff.max() <= 1


def test_layernorm_rows_special_values(native):
    x = np.array([[1, 2, np.nan, 4], [1, np.inf, 3, 4], [5, 5, 5, 5]], np.float32)
    got = native.layernorm_rows(x, None, None, 1e-5)
    assert np.isnan(got[0]).all() and np.isnan(got[1]).all()
    np.testing.assert_array_equal(got[2], np.zeros(4, np.float32))


@pytest.mark.parametrize("shape, view", [((7, 13), lambda x: x.T), ((5, 9, 11), lambda x: x[1].T),
                                         ((40, 70), lambda x: x[::3, 1::2]), ((33, 64), lambda x: x.T[5:37]),
                                         # an image's planes to pixels (3 columns), 16 and 17 columns
                                         ((3, 50), lambda x: x.T), ((16, 21), lambda x: x.T),
                                         ((17, 8), lambda x: x.T)])
def test_copy_2d_gives_numpys_copy(native, shape, view):
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    source = view(x)
    out = np.full(source.shape, np.nan, np.float32)
    np.testing.assert_array_equal(native.copy_2d(source, out), np.ascontiguousarray(source))


@pytest.mark.parametrize("m, n, k", [(5, 12, 7), (9, 16, 33), (1, 8, 4)])
def test_gemm_into_rows_of_a_wider_array(gemm_kernels, m, n, k):
    """out given as a view whose rows are ldc apart (a head's columns of [tokens, heads * d]):
    the product lands there and nothing around it changes; a residual of the same strides."""
    rng = np.random.default_rng(m * n)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    wide = np.full((m, 3 * n), 7.0, np.float32)
    residual = rng.standard_normal((m, 3 * n)).astype(np.float32)
    gemm_kernels.gemm(a, b, out=wide[:, n:2 * n], residual=residual[:, n:2 * n])
    expected = (a.astype(np.float64) @ b.astype(np.float64)) + residual[:, n:2 * n]
    assert_close(wide[:, n:2 * n], a, b, expected)
    assert (wide[:, :n] == 7).all() and (wide[:, 2 * n:] == 7).all()


@pytest.mark.parametrize("m,n,k", [(9, 13, 6), (67, 20, 3), (130, 36, 17)])
def test_gemm_into_rows_of_a_wider_array_with_bias_and_clamp(gemm_kernels, m, n, k):
    """A concat's channel slice as out (rows ldc apart), with a column bias and relu in the
    epilogue: the product lands there, bit for bit the contiguous out's, nothing around it
    changes (the host's BLAS writes the rows in place and the epilogue walks them, ld apart)."""
    rng = np.random.default_rng(m + n)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    wide = np.full((m, 3 * n), 7.0, np.float32)
    gemm_kernels.gemm(a, b, bias_n=bias, clamp=(0.0, np.inf), out=wide[:, n:2 * n])
    assert_close(wide[:, n:2 * n], a, b, np.maximum(a.astype(np.float64) @ b.astype(np.float64) + bias, 0))
    np.testing.assert_array_equal(wide[:, n:2 * n], gemm_kernels.gemm(a, b, bias_n=bias, clamp=(0.0, np.inf)))
    assert (wide[:, :n] == 7).all() and (wide[:, 2 * n:] == 7).all()


def test_gemm_refuses_a_residual_laid_out_otherwise_than_its_strided_out(native):
    a, b = np.ones((4, 3), np.float32), np.ones((3, 8), np.float32)
    wide = np.zeros((4, 16), np.float32)
    with pytest.raises(ValueError):
        native.gemm(a, b, out=wide[:, 8:], residual=np.zeros((4, 8), np.float32))


def _attention_operands(rng, batch, heads, s, d):
    """Attention's operands as ORT's graphs hand them over: q and v as head-strided views
    of one [batch, s, heads * d] buffer ([batch, heads, s, d]), kᵀ as a transposed view
    ([batch, heads, d, s], columns not contiguous), p the softmax [batch, heads, s, s]."""
    qkv = rng.standard_normal((batch, s, 3, heads, d)).astype(np.float32)
    q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
    p = rng.standard_normal((batch, heads, s, s)).astype(np.float32)
    return q, k.transpose(0, 1, 3, 2), v, p


@pytest.mark.parametrize("batch, heads, s, d", [(1, 3, 17, 8), (2, 2, 9, 12), (1, 4, 33, 16), (1, 1, 5, 3)])
def test_gemm_batch_attention_products_against_float64(gemm_kernels, batch, heads, s, d):
    """q kᵀ (kᵀ a transposed view, the scale in the epilogue) and p v written into the
    [batch, s, heads, d] layout (rows heads * d apart): every head in one call, each against
    float64 numpy; on the C path bit for bit what gemm gives one matrix at a time."""
    rng = np.random.default_rng(batch * 100 + heads * 10 + s)
    q, kt, v, p = _attention_operands(rng, batch, heads, s, d)
    scores = np.full((batch, heads, s, s), np.nan, np.float32)
    gemm_kernels.gemm_batch(q, kt, scores, clamp=kernels_module.scale(np.float32(0.125)))
    context = np.full((batch, s, heads, d), 7.0, np.float32)
    gemm_kernels.gemm_batch(p, v, context.transpose(0, 2, 1, 3))
    for bi, h in itertools.product(range(batch), range(heads)):
        q64, kt64 = q[bi, h].astype(np.float64), kt[bi, h].astype(np.float64)
        assert_close(scores[bi, h], q[bi, h], kt[bi, h], (q64 @ kt64) * 0.125)
        assert_close(context[bi, :, h], p[bi, h], v[bi, h], p[bi, h].astype(np.float64) @ v[bi, h].astype(np.float64))
        if type(gemm_kernels) is kernels_module.Kernels:         # the C sgemm (not BLAS)
            one = gemm_kernels.gemm(q[bi, h], np.ascontiguousarray(kt[bi, h]),
                                    clamp=kernels_module.scale(np.float32(0.125)))
            np.testing.assert_array_equal(scores[bi, h], one)
            np.testing.assert_array_equal(context[bi, :, h], gemm_kernels.gemm(p[bi, h], v[bi, h]))


def test_gemm_batch_broadcasts_an_operand_and_writes_only_its_output(gemm_kernels):
    """A matrix broadcast over the batch (stride 0) is read for every matrix; a batch of
    three 2-D outputs inside a guarded buffer: nothing around them is written."""
    rng = np.random.default_rng(7)
    a = np.broadcast_to(rng.standard_normal((6, 5)).astype(np.float32), (3, 6, 5))
    b = rng.standard_normal((3, 5, 10)).astype(np.float32)
    guard = np.full(3 * 6 * 10 + 16, 7.0, np.float32)
    out = guard[8:8 + 180].reshape(3, 6, 10)
    gemm_kernels.gemm_batch(a, b, out)
    assert (guard[:8] == 7).all() and (guard[-8:] == 7).all()
    for i in range(3):
        assert_close(out[i], a[i], b[i], reference_gemm(a[i], b[i]))
    # A 2-D product (no batch at all) and an empty batch.
    assert_close(gemm_kernels.gemm_batch(a[0], b[0], np.empty((6, 10), np.float32)), a[0], b[0],
                 reference_gemm(a[0], b[0]))
    gemm_kernels.gemm_batch(a[:0], b[:0], np.empty((0, 6, 10), np.float32))


def test_bound_gemm_is_gemm_bit_for_bit(gemm_kernels):
    """Kernels.bind_gemm (the C sgemm called with the constant arguments bound) and
    HostKernels' (BLAS) against their own gemm, bit for bit."""
    from tests.kernels.pyodide_wasm_checks import bound_gemm_matches_gemm

    bound_gemm_matches_gemm(gemm_kernels)


def test_bound_gemm_offers_the_thread_pool_what_gemm_offers_it(native, monkeypatch):
    """In a cross-origin isolated page Kernels.threads may split a GEMM with a packed b: the bound
    GEMM asks it with gemm's arguments (a and out as matrices) and computes alone when declined."""
    offered = []

    class DecliningPool:
        def gemm(self, a, b, packed_b, out, ldc, bias_m, bias_n, residual, act, lo, hi):
            offered.append((a.shape, a.strides, b.shape, packed_b.size, out.shape, ldc, bias_n is not None,
                            residual is not None, act, lo, hi))
            return False

    monkeypatch.setattr(native, "threads", DecliningPool())
    rng = np.random.default_rng(3)
    a = rng.standard_normal((40, 24)).astype(np.float32)
    b = rng.standard_normal((24, 16)).astype(np.float32)
    bias = rng.standard_normal(16).astype(np.float32)
    packed = native.pack_b(b)
    want = native.gemm(a, b, bias_n=bias, clamp=(0.0, 6.0), packed_b=packed, out=np.empty((40, 16), np.float32))
    got = native.bind_gemm(b, packed)(a.reshape(2, 20, 24), np.empty((2, 20, 16), np.float32), None, bias, None,
                                      (0.0, 6.0))
    assert len(offered) == 2 and offered[0] == offered[1], offered
    np.testing.assert_array_equal(got.reshape(40, 16), want)


def test_bound_gemm_keeps_the_packing_scratch_it_hands_the_kernel(native, monkeypatch):
    """Without a packed b, 16 rows or more make the kernel pack b into the bound GEMM's scratch:
    that memory must live as long as the bound function (not be freed at bind's return)."""
    import gc

    given = []
    sgemm = native._sgemm
    monkeypatch.setattr(native, "_sgemm", lambda *args: given.append(args[-2]) or sgemm(*args))
    b = np.ones((12, 16), np.float32)
    run = native.bind_gemm(b, None)
    gc.collect()
    run(np.ones((20, 12), np.float32), np.empty((20, 16), np.float32))
    assert given == [run.scratch.__array_interface__["data"][0]] and run.scratch.size == 12 * 16
