"""On the host, depthwise conv2d (NHWC), gelu, softmax, layerNormalization, clamp and
the epilogue of GEMMs run in the natively built C kernels (webnn_py.kernels.native(), 2.5-6x numpy
there), while the products themselves stay with numpy's BLAS; without that library
the numpy paths serve. Checked against torch in float64 (gelu against math.erfc)."""
import math

import numpy as np
import pytest
import torch

import webnn_py.kernels as kernels
from tests.ops.conftest import run
from tests.portable.expect import assert_close

F = torch.nn.functional
RNG = np.random.default_rng(7)


def _depthwise_case():
    x = RNG.standard_normal((1, 9, 11, 6)).astype(np.float32)
    w = RNG.standard_normal((6, 1, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(6).astype(np.float32)
    ref = F.conv2d(F.pad(torch.from_numpy(x.transpose(0, 3, 1, 2)).double(), (1, 0, 1, 1)),
                   torch.from_numpy(w).double(), torch.from_numpy(b).double(), groups=6, stride=2)
    options = {"padding": [1, 1, 1, 0], "groups": 6, "strides": [2, 2], "inputLayout": "nhwc"}
    got = run(lambda g, op: g.conv2d(op["x"], op["w"], options | {"bias": op["b"]}),
              {"x": x}, {"w": w, "b": b})
    assert_close(got, ref.numpy().transpose(0, 2, 3, 1), atol=1e-4)


def _gelu_case():
    x = (RNG.standard_normal((4, 37)) * 4).astype(np.float32)
    got = run(lambda g, op: g.gelu(op["x"]), {"x": x})
    # 0.5 x erfc(-x / sqrt 2) in double (torch's 1 + erf cancels in the negative tail).
    ref = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64).ravel().tolist()])
    assert_close(got, ref.reshape(x.shape), ulp=1, what="gelu")


def _pointwise_case():
    # 1x1 conv + bias + relu6 + residual in NHWC: one GEMM with its epilogue.
    x = RNG.standard_normal((1, 5, 6, 8)).astype(np.float32)
    w = RNG.standard_normal((8, 8, 1, 1)).astype(np.float32)
    b = RNG.standard_normal(8).astype(np.float32)
    options = {"inputLayout": "nhwc", "bias": None}
    got = run(lambda g, op: g.clamp(g.add(g.conv2d(op["x"], op["w"], options | {"bias": op["b"]}), op["x"]),
                                    {"minValue": 0, "maxValue": 6}), {"x": x}, {"w": w, "b": b})
    t = torch.from_numpy(x.transpose(0, 3, 1, 2)).double()
    ref = torch.clamp(F.conv2d(t, torch.from_numpy(w).double(), torch.from_numpy(b).double()) + t, 0, 6)
    assert_close(got, ref.numpy().transpose(0, 2, 3, 1), atol=1e-4)


@pytest.fixture
def counted_native(host, monkeypatch):
    calls = []

    class Counting:
        name = "native"

        def __getattr__(self, name):
            calls.append(name)
            return getattr(host, name)

    def never(*_):
        raise AssertionError("the C GEMM ran on the host, where numpy's BLAS is faster")
    monkeypatch.setattr(host, "_sgemm", never)
    monkeypatch.setattr(kernels, "native", lambda: Counting())
    return calls


def test_the_package_loads_its_native_build(native, monkeypatch):
    monkeypatch.setattr(kernels, "_native_tried", False)
    monkeypatch.setattr(kernels, "_native", None)
    monkeypatch.delenv("WEBNN_PY_NATIVE_KERNELS", raising=False)
    loaded = kernels.native()
    assert loaded is not None and loaded.name == "native"
    assert kernels.available() is None          # the host: no wasm, GEMMs stay with numpy
    assert kernels.simd() is loaded


def test_the_switch_turns_the_native_build_off(native, monkeypatch):
    monkeypatch.setattr(kernels, "_native_tried", False)
    monkeypatch.setattr(kernels, "_native", None)
    monkeypatch.setenv("WEBNN_PY_NATIVE_KERNELS", "0")
    assert kernels.native() is None and kernels.simd() is None


def test_the_host_takes_the_native_build_for_all_but_plain_products(counted_native):
    _depthwise_case()
    _gelu_case()
    _pointwise_case()
    x = RNG.standard_normal((5, 8)).astype(np.float32)
    w = RNG.standard_normal((8, 3)).astype(np.float32)
    got = run(lambda g, op: g.matmul(op["x"], op["w"]), {"x": x}, {"w": w})
    assert_close(got, x.astype(np.float64) @ w.astype(np.float64), atol=1e-5)
    # Products are numpy's (the C sgemm never runs), their epilogues C.
    # (A constant right operand's GEMM is bound at build: bind_gemm, then the host's gemm.)
    assert {"depthwise_nhwc", "gelu", "bind_gemm"} <= set(counted_native), counted_native


def test_numpy_paths_without_the_native_build(monkeypatch):
    monkeypatch.setattr(kernels, "native", lambda: None)
    _depthwise_case()
    _gelu_case()
    _pointwise_case()


def test_addresses_are_remembered_per_owning_array_and_forgotten_with_it(host):
    owner = np.zeros((4, 6), np.float32)
    view = owner[1:, 2:]
    assert host._ptr(owner) == owner.__array_interface__["data"][0]
    assert host._ptr(owner) == owner.__array_interface__["data"][0]      # the remembered one
    assert host._ptr(view) == owner.__array_interface__["data"][0] + (6 + 2) * 4
    # Views of all the owner's bytes start where it does; others have their own offsets.
    start = owner.__array_interface__["data"][0]
    assert host._ptr(owner.reshape(6, 4)) == host._ptr(owner.T) == start
    assert host._ptr(owner.reshape(24)[::-1]) == start + 23 * 4
    assert host._ptr(owner.reshape(24)[1:].reshape(23, 1)) == start + 4
    assert host._ptr(np.lib.stride_tricks.as_strided(owner[1:], (3, 6), (24, 4))) == start + 24
    assert host._ptr(None) == 0
    assert id(owner) in kernels._addresses and id(view) not in kernels._addresses
    key = id(owner)
    del owner, view
    assert key not in kernels._addresses               # gone with the array
    fresh = [np.empty(3, np.float32) for _ in range(50)]    # ids are reused: each its own address
    assert [host._ptr(a) for a in fresh] == [a.__array_interface__["data"][0] for a in fresh]


def test_the_host_gemm_gives_ieee_results_without_warnings_and_keeps_the_callers_setting(host):
    a = np.array([[np.inf, 3e38], [1.0, 2.0]], np.float32)
    b = np.array([[0.0, 1.0], [2.0, 1.0]], np.float32)
    with np.errstate(all="raise"):
        got = host.gemm(a, b)
        with pytest.raises(FloatingPointError):     # the caller's own setting stays in force
            np.matmul(a, b)
    # inf * 0 + 3e38 * 2 is NaN; inf * 1 + 3e38 * 1 is inf; the second row is exact.
    assert np.isnan(got[0, 0]) and got[0, 1] == np.inf and got[1].tolist() == [4.0, 3.0]
