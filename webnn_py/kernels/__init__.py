"""Compiled float32 kernels (C in kernels/wasm/, see tools/build_kernels.py).

In Pyodide, `available()` gives them as WebAssembly SIMD code instantiated on
Pyodide's own WebAssembly.Memory, so they read and write numpy buffers in place
(a pointer is the buffer's address). On the host the same C is built natively at
set-up (`native()`, a ctypes library next to this file, gitignored and never in
the wheel), with one difference: GEMMs run in numpy's matmul, whose optimised BLAS
beats our C there, and only their epilogue (bias, residual, clamp) is a C pass.
`simd()` gives whichever of the two this platform has.

A missing or broken kernels.wasm never breaks anything: it is logged once as a
warning and the numpy paths serve.
"""
from __future__ import annotations

import logging
import os
import sys
import weakref
from functools import partial
from importlib import resources
from pathlib import Path
from typing import NamedTuple

import numpy as np

_log = logging.getLogger("webnn_py")
_F32 = np.dtype(np.float32)

_loaded: "Kernels | None" = None
_tried = False
_native: "Kernels | None" = None
_native_tried = False
# Where tools/build_kernels.py puts the native build (ctypes; never in the wheel).
NATIVE_LIBRARY = Path(__file__).resolve().parent / "native" / "libwebnn_kernels.so"


class Activation(NamedTuple):
    """An activation for the C kernels' epilogues (kernels.c activate4), given where a
    kernel takes `clamp=`: code 2 hardSwish, 3 sigmoid, 4 x * sigmoid(x), 5 hardSigmoid
    (a = alpha, b = beta), 6 x * a (a mul by a constant scalar, e.g. attention's scale).
    A plain (lo, hi) pair there is clamp (code 1)."""
    code: int
    a: float = 0.0
    b: float = 0.0


HARD_SWISH = Activation(2)
SIGMOID = Activation(3)
SILU = Activation(4)


def hard_sigmoid(alpha: float, beta: float) -> Activation:
    return Activation(5, float(alpha), float(beta))


def scale(factor: float) -> Activation:
    """x * factor, one float32 product (factor must be a float32 value)."""
    return Activation(6, float(factor))


def _activation_args(clamp) -> tuple[int, float, float]:
    """kernels.c's (act, lo, hi) for `clamp`: None, (lo, hi) or an Activation."""
    if clamp is None:
        return 0, 0.0, 0.0
    if isinstance(clamp, Activation):
        return clamp.code, float(clamp.a), float(clamp.b)
    lo, hi = clamp
    return 1, float(lo), float(hi)


def _element_strides(x: np.ndarray) -> bool:
    """Whether every stride of float32 view x is a non-negative whole number of elements
    (what the C kernels' element strides can express)."""
    return all(s >= 0 and s % 4 == 0 for s in x.strides)


# id(array) -> (weak reference, address): address_of's memory of the arrays that own their data.
_addresses: dict[int, tuple] = {}


def address_of(array) -> int:
    """array's address in this process's memory (0 for None): remembered per array that owns
    its memory (the plan's buffers, constants, packed weights, output tensors' [[data]]: the
    same objects every run), since `__array_interface__` builds a dict each time (~0.8 µs on
    the host, ~1.7 µs in Pyodide; a small CNN's run takes ~300 addresses). An owner's data
    never moves while it lives (nothing here resizes an array in place); the entry goes when
    it dies. A contiguous view of all its owner's bytes (a reshape, e.g. a buffer's pixel
    rows, or a transpose) starts where the owner does, and takes the owner's address."""
    if array is None:
        return 0
    entry = _addresses.get(id(array))
    if entry is not None and entry[0]() is array:
        return entry[1]
    base = array.base
    if base is None:
        address = array.__array_interface__["data"][0]
        key = id(array)
        _addresses[key] = (weakref.ref(array, lambda _dead: _addresses.pop(key, None)), address)
        return address
    if type(base) is np.ndarray and base.base is None and array.nbytes == base.nbytes and array.flags.forc:
        return address_of(base)
    return array.__array_interface__["data"][0]


def remembered_arrays() -> list:
    """(address, array) of the live arrays whose addresses address_of remembers (None for one
    that died since)."""
    return [(address, reference()) for reference, address in list(_addresses.values())]


class Kernels:
    """numpy-level calls of the C entry points, given as attributes of `functions`
    (a wasm instance's exports or a ctypes library) taking ints and floats."""

    def __init__(self, functions, name: str):
        self._sgemm = functions.sgemm
        self._sgemm_batch = functions.sgemm_batch
        self._pack_b = functions.gemm_pack_b
        self._depthwise = functions.depthwise_nhwc
        self._conv_direct = functions.conv2d_direct
        self._clamp = functions.clamp_f32
        self._gelu = functions.gelu_f32
        self._softmax = functions.softmax_rows_f32
        self._im2col = functions.im2col_nhwc
        self._layernorm = functions.layernorm_rows_f32
        self._epilogue = functions.gemm_epilogue
        self._maxpool = functions.maxpool_nhwc
        self._global_avgpool = functions.global_avgpool_nhwc
        self._scale_channels = functions.scale_channels_f32
        self._lstm = functions.lstm_sequence_f32
        self._gru = functions.gru_sequence_f32
        self._copy_2d = functions.copy_2d_f32
        self._erfc_table = None
        self.name = name
        # Which build (in Pyodide: the file of VARIANTS that was loaded; "native" on the host).
        self.variant = name
        # pool.Threads in a cross-origin isolated page (set by _load_wasm): large GEMMs with a
        # packed constant B split with workers; None: one thread.
        self.threads = None
        # Recorder of the export calls (wasm only, _from_exports): runtime/replay.py's.
        self.recorder: Recorder | None = None
        self._scratch = np.empty(0, _F32)

    def scratch(self, size: int) -> np.ndarray:
        """A float32 working array of `size` elements, shared by every kernel that needs one
        during a call (im2col's patch matrix): one allocation, not one per convolution a
        dispatch. A larger request replaces it; an older one lives on where something still
        holds it (runtime/replay.py's recorded calls keep the owners of their addresses)."""
        if self._scratch.size < size:
            self._scratch = np.empty(size, _F32)
            address_of(self._scratch)       # remembered: a recorded call's address lies in it
        return self._scratch[:size]

    # The most output channels for which ops/convolution.py takes conv2d_direct over im2col and
    # a GEMM for an image's convolution (0: never). Measured: see README "Kernels".
    direct_conv2d_max_out = 0

    # An array's address (address_of below), as the kernels' calls take it.
    _ptr = staticmethod(address_of)

    def gemm(self, a: np.ndarray, b: np.ndarray, bias_m=None, bias_n=None, clamp=None,
             out: np.ndarray | None = None, residual: np.ndarray | None = None,
             packed_b: np.ndarray | None = None) -> np.ndarray:
        """((a @ b (+ bias_m[:, None])) (+ bias_n)) (+ residual) then clip to clamp=(lo, hi) (or
        the epilogue Activation given there),
        float32, 2-D, each addition rounded as a separate float32 add would be. a may be
        any float32 view with element strides (a transpose is not copied); b needs
        contiguous rows; bias_m/bias_n contiguous vectors; residual C-contiguous [m, n]
        (it may be `out` itself); packed_b, pack_b(b) made once for a constant b. The
        result is a fresh C-contiguous array unless `out` ([m, n], C-contiguous or any rows
        of contiguous elements, e.g. a view of a transposed layout, with a residual of the
        same strides) is given."""
        m, k = a.shape
        n = b.shape[1]
        if a.strides[0] % 4 or a.strides[1] % 4 or a.strides[0] < 0 or a.strides[1] < 0:
            a = np.ascontiguousarray(a)
        if b.strides[1] != 4 or b.strides[0] % 4 or b.strides[0] < 0:
            b = np.ascontiguousarray(b)
        if out is None:
            out = np.empty((m, n), _F32)
        ldc = n
        if m > 1 and out.strides[0] != 4 * n:
            # Rows ldc apart (the residual's too: the kernel reads it with out's strides).
            if (out.strides[1] != 4 or out.strides[0] % 4 or out.strides[0] < 0
                    or (residual is not None and residual.strides != out.strides)):
                raise ValueError("gemm: out needs contiguous rows (and the residual its strides)")
            ldc = out.strides[0] // 4
        act, lo, hi = _activation_args(clamp)
        pack = packed_b
        if pack is None and m >= 16 and n >= 8 and k > 1:
            # Packing B's strips pays off once enough rows reuse them.
            pack = np.empty(k * (n // 8) * 8, _F32)
        if (self.threads is not None and packed_b is not None and m and n
                and self.threads.gemm(a, b, packed_b, out, ldc, bias_m, bias_n, residual, act, lo, hi)):
            return out
        if m and n:
            self._sgemm(m, n, k, self._ptr(a), a.strides[0] // 4, a.strides[1] // 4,
                        self._ptr(b), b.strides[0] // 4, self._ptr(out), ldc,
                        self._ptr(bias_m), self._ptr(bias_n), self._ptr(residual), act, lo, hi, self._ptr(pack),
                        int(packed_b is not None))
        return out

    def bind_gemm(self, b: np.ndarray, packed_b: np.ndarray | None = None):
        """gemm with a constant right operand, its checks and addresses done now: returns
        run(a, out, bias_m=None, bias_n=None, residual=None, clamp=None), the same result as
        gemm(a, b, bias_m, bias_n, clamp, out, residual, packed_b) (into `out`, returned), for a
        step that runs every dispatch. a and out are 2-D as for gemm, or C-contiguous arrays of
        any rank taken as their rows (last axes k and n; a residual then C-contiguous too), so
        a caller hands over the plan's own buffers, not a fresh reshape each run (a view's
        address costs ~1.1 µs in Pyodide, a remembered buffer's ~0.3 µs). b and packed_b must
        stay alive and in place."""
        k, n = b.shape
        if b.strides[1] != 4 or b.strides[0] % 4 or b.strides[0] < 0:
            b = np.ascontiguousarray(b)
        general = _gemm_on_rows(self.gemm, b, packed_b)
        if n == 0 or k == 0:
            return general
        sgemm, ptr, b_ptr, ldb = self._sgemm, self._ptr, self._ptr(b), b.strides[0] // 4
        # Without a packed b, the kernel packs b's strips itself for 16 rows or more: its scratch,
        # made once here (a plan runs one dispatch at a time).
        packs = packed_b is None and n >= 8 and k > 1
        scratch = np.empty(k * (n // 8) * 8, _F32) if packs else None
        pack_ptr, packed = (ptr(scratch), 0) if packs else (ptr(packed_b), int(packed_b is not None))
        last = [None, 0, 0.0, 0.0]             # the activation's (clamp, act, lo, hi) last seen

        def run(a, out, bias_m=None, bias_n=None, residual=None, clamp=None):
            if a.ndim == 2:
                m = a.shape[0]
                a_rs, a_cs = a.strides
                if a_rs % 4 or a_cs % 4 or a_rs < 0 or a_cs < 0:
                    return general(a, out, bias_m, bias_n, residual, clamp)
                a_rs, a_cs = a_rs // 4, a_cs // 4
            elif a.flags.c_contiguous:
                m, a_rs, a_cs = a.size // k, k, 1
            else:
                return general(a, out, bias_m, bias_n, residual, clamp)
            ldc = n
            if out.ndim == 2:
                o_rs, o_cs = out.strides
                if m > 1 and o_rs != 4 * n:
                    if (o_cs != 4 or o_rs % 4 or o_rs < 0
                            or (residual is not None and residual.strides != out.strides)):
                        return general(a, out, bias_m, bias_n, residual, clamp)
                    ldc = o_rs // 4
            elif not out.flags.c_contiguous:
                return general(a, out, bias_m, bias_n, residual, clamp)
            if m == 0:
                return out
            if clamp is not last[0]:
                last[:] = clamp, *_activation_args(clamp)
            threads = self.threads           # a cross-origin isolated page: gemm's split, as gemm asks it
            if threads is not None and packed and threads.gemm(
                    a if a.ndim == 2 else a.reshape(-1, k), b, packed_b, out if out.ndim == 2 else out.reshape(-1, n),
                    ldc, bias_m, bias_n, residual, last[1], last[2], last[3]):
                return out
            sgemm(m, n, k, ptr(a), a_rs, a_cs, b_ptr, ldb, ptr(out), ldc,
                  0 if bias_m is None else ptr(bias_m), 0 if bias_n is None else ptr(bias_n),
                  0 if residual is None else ptr(residual), last[1], last[2], last[3],
                  pack_ptr if packed or m >= 16 else 0, packed)
            return out
        run.scratch = scratch                  # the kernel writes it: alive as long as run is
        return run

    def gemm_batch(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, clamp=None) -> np.ndarray:
        """out[..., m, n] = a[..., m, k] @ b[..., k, n] for every matrix of the leading
        dimensions (the same in all three; a broadcast operand has stride 0 there), then the
        activation `clamp` (as gemm's), float32, each matrix exactly as gemm computes it.
        a and b may be any views with element strides (b's columns need not be contiguous:
        kernels.c copies such a matrix first, as copy_2d would); out's rows need contiguous
        elements. The last leading dimension is one C call (kernels.c sgemm_batch), so
        attention's products over all heads cost one call, not one per head."""
        *lead, m, k = a.shape
        n = b.shape[-1]
        if out.size == 0:
            return out
        if not _element_strides(a):
            a = np.ascontiguousarray(a)
        if not _element_strides(b):
            b = np.ascontiguousarray(b)
        if out.strides[-1] != 4 or not _element_strides(out):
            raise ValueError("gemm_batch: out needs rows of contiguous elements")
        given = out
        if not lead:
            a, b, out = a[None], b[None], out[None]
        act, lo, hi = _activation_args(clamp)
        # B's copy (columns not contiguous) and its packed strips, in the shared scratch.
        copied = k * n if b.strides[-1] != 4 else 0
        packed = k * (n // 8) * 8 if m >= 16 and n >= 8 and k > 1 else 0
        work = self.scratch(copied + packed)
        scratch = work[:copied] if copied else None
        pack = work[copied:] if packed else None
        batch = a.shape[-3]
        if batch:
            a_bs, a_rs, a_cs = (s // 4 for s in a.strides[-3:])
            b_bs, b_rs, b_cs = (s // 4 for s in b.strides[-3:])
            c_bs, ldc = out.strides[-3] // 4, out.strides[-2] // 4
            for index in np.ndindex(*a.shape[:-3]):
                self._sgemm_batch(batch, m, n, k, self._ptr(a[index]), a_bs, a_rs, a_cs, self._ptr(b[index]), b_bs,
                                  b_rs, b_cs, self._ptr(out[index]), c_bs, ldc, act, lo, hi, self._ptr(scratch),
                                  self._ptr(pack))
        return given

    def copy_2d(self, x: np.ndarray, out: np.ndarray) -> np.ndarray:
        """x (a 2-D float32 view with any non-negative element strides, e.g. a transpose)
        copied into the C-contiguous `out` of its shape, in one C pass (numpy's strided
        copy costs ~10 ns an element in Pyodide)."""
        rows, cols = x.shape
        if x.strides[0] % 4 or x.strides[1] % 4 or x.strides[0] < 0 or x.strides[1] < 0:
            untraceable()
            out[...] = x
        elif x.size:
            self._copy_2d(self._ptr(x), rows, cols, x.strides[0] // 4, x.strides[1] // 4, self._ptr(out))
        return out

    def pack_b(self, b: np.ndarray) -> np.ndarray | None:
        """A constant right operand's strips laid out once (at build), for gemm(packed_b=);
        None where the kernel would not pack (fewer than 8 columns, k of 1)."""
        k, n = b.shape
        if n < 8 or k <= 1:
            return None
        b = np.ascontiguousarray(b, _F32)
        pack = np.empty(k * (n // 8) * 8, _F32)
        self._pack_b(k, n, self._ptr(b), n, self._ptr(pack))
        return pack

    def epilogue(self, product: np.ndarray, out: np.ndarray, bias_m=None, bias_n=None, residual=None,
                 clamp=None) -> np.ndarray:
        """out = ((product (+ bias_m[:, None])) (+ bias_n)) (+ residual), clipped to clamp (or its Activation):
        gemm()'s epilogue on a product computed elsewhere; all C-contiguous float32 [m, n]
        (vectors [m], [n]), or `out` rows of contiguous elements further apart (a channel slice
        of a wider buffer) with product and residual of its strides; out may be product,
        residual may be out."""
        m, n = product.shape
        act, lo, hi = _activation_args(clamp)
        if m and n:
            ld = n
            if m > 1 and out.strides[0] != 4 * n:
                if (out.strides[1] != 4 or out.strides[0] % 4 or out.strides[0] < 0 or product.strides != out.strides
                        or (residual is not None and residual.strides != out.strides)):
                    raise ValueError("epilogue: rows further apart need the product's and residual's strides")
                ld = out.strides[0] // 4
            # The product is often `out` itself (and the residual too): one address for both.
            ptr = self._ptr
            out_ptr = ptr(out)
            self._epilogue(out_ptr if product is out else ptr(product), out_ptr, m, n, ld, ptr(bias_m), ptr(bias_n),
                           out_ptr if residual is out else ptr(residual), act, lo, hi)
        return out

    def clamp(self, x: np.ndarray, lower, upper, out: np.ndarray) -> np.ndarray:
        """min(max(x, lower), upper) into `out` (may be x); both C-contiguous float32."""
        if x.size:
            self._clamp(self._ptr(x), self._ptr(out), x.size, float(np.float32(lower)), float(np.float32(upper)))
        return out

    def gelu(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """§8.9.23 gelu of a C-contiguous float32 array, evaluated in double and rounded
        once (the numpy path's method, with its erfc interpolation table); into `out`
        (C-contiguous, x's shape; may be x) if given."""
        if self._erfc_table is None:
            from ..ops.elementwise_unary import (_ERFC_COEFFICIENTS, _ERFC_DEGREE, _ERFC_WIDTH, ERF_NEAR,
                                                 ERF_NEAR_COEFFICIENTS)
            assert _ERFC_DEGREE == 4 and len(ERF_NEAR_COEFFICIENTS) == 13, "gelu_f32's polynomial degrees"
            # [intervals, 6]: one interval's 5 coefficients together, padded to 6 for
            # 16-byte loads.
            table = np.zeros((_ERFC_COEFFICIENTS.shape[1], 6))
            table[:, :5] = _ERFC_COEFFICIENTS.T
            # The short path's bound on |x|, rounded down to a float32 (never beyond ERF_NEAR).
            near_x = float(np.nextafter(np.float32(ERF_NEAR * np.sqrt(2.0)), np.float32(0)))
            self._erfc_table = (table, 1.0 / _ERFC_WIDTH, np.ascontiguousarray(ERF_NEAR_COEFFICIENTS), near_x,
                                1.0 / ERF_NEAR ** 2)
        table, inv_width, near, near_x, inv_near2 = self._erfc_table
        if out is None:
            out = np.empty(x.shape, _F32)
        if x.size:
            self._gelu(self._ptr(x), self._ptr(out), x.size, self._ptr(table), table.shape[0], inv_width,
                       self._ptr(near), near_x, inv_near2)
        return out

    def im2col_nhwc(self, x: np.ndarray, kernel, strides, dilations, pads_begin, out_rows: range, out_w: int,
                    out: np.ndarray) -> np.ndarray:
        """The conv2d patch matrix of output rows `out_rows` of one C-contiguous NHWC image
        x [h, w, c] into `out` (C-contiguous, [len(out_rows) * out_w, kh * kw * c]);
        columns ordered (i, j, channel), zeros for the padding."""
        h, w, c = x.shape
        if len(out_rows) and out_w:
            self._im2col(self._ptr(x), h, w, c, kernel[0], kernel[1], strides[0], strides[1], dilations[0],
                         dilations[1], pads_begin[0], pads_begin[1], out_rows.start, len(out_rows), out_w,
                         self._ptr(out))
        return out

    def im2col_gemm(self, x: np.ndarray, kernel, strides, dilations, pads_begin, out_hw, b: np.ndarray,
                    packed_b: np.ndarray, out_rows: np.ndarray, cols: np.ndarray, bias_n=None, residual_rows=None,
                    clamp=None) -> bool:
        """The im2col convolution of one C-contiguous NHWC image x [h, w, c] through the kernel
        pool (a cross-origin isolated page): out_rows [oh * ow, n] (rows of contiguous elements)
        = gemm(im2col_nhwc(x, ...), b, bias_n=bias_n, clamp=clamp, residual=residual_rows (out_rows'
        strides), packed_b=packed_b), this thread's rows' patches made in `cols` (C-contiguous, a
        whole number of output rows), the workers' made by the workers. False, having done
        nothing, where the pool does not take it: the caller runs im2col_nhwc and gemm."""
        if self.threads is None or out_rows.strides[1] != 4 or out_rows.strides[0] % 4 or (
                residual_rows is not None and residual_rows.strides != out_rows.strides):
            return False
        act, lo, hi = _activation_args(clamp)
        cols_rows = cols.size // (out_hw[1] * b.shape[0])
        return self.threads.conv(x, kernel, strides, dilations, pads_begin, out_hw, b, packed_b, out_rows,
                                 out_rows.strides[0] // 4, bias_n, residual_rows, act, lo, hi, cols, cols_rows)

    def softmax_rows(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """§8.9.55 softmax along the last axis of a C-contiguous float32 array, into `out`
        (C-contiguous, x's shape) if given."""
        out = np.empty(x.shape, _F32) if out is None else out
        if x.size:
            n = x.shape[-1]
            scratch = self.scratch(2 * n).view(np.float64)     # a row's exponentials
            self._softmax(self._ptr(x), self._ptr(out), x.size // n, n, self._ptr(scratch))
        return out

    def layernorm_rows(self, x: np.ndarray, scale, bias, epsilon: float, out: np.ndarray | None = None) -> np.ndarray:
        """§8.9.30 layerNormalization over the last axis of a C-contiguous float32 array;
        scale/bias C-contiguous float32 [n] or None; evaluated in double, rounded once; into
        `out` (C-contiguous, x's shape) if given."""
        out = np.empty(x.shape, _F32) if out is None else out
        if x.size:
            n = x.shape[-1]
            self._layernorm(self._ptr(x), self._ptr(out), x.size // n, n, self._ptr(scale), self._ptr(bias),
                            float(epsilon))
        return out

    def depthwise_nhwc(self, x: np.ndarray, filter_hwc: np.ndarray, bias, out_hw, strides, dilations,
                       pads_begin, clamp=None, out: np.ndarray | None = None) -> np.ndarray:
        """§8.9.10 depthwise conv2d on a C-contiguous NHWC float32 input with a
        [kh, kw, channels] filter; (pt, pl) begin padding, the end implied by out_hw; into
        `out` (C-contiguous) if given."""
        n, h, w, c = x.shape
        kh, kw, _ = filter_hwc.shape
        oh, ow = out_hw
        if out is None:
            out = np.empty((n, oh, ow, c), _F32)
        act, lo, hi = _activation_args(clamp)
        if out.size and self.threads is not None and self.threads.depthwise(
                x, filter_hwc, bias, out, strides, dilations, pads_begin, act, lo, hi):
            return out
        if out.size:
            self._depthwise(n, h, w, c, self._ptr(x), self._ptr(filter_hwc), kh, kw, self._ptr(bias),
                            self._ptr(out), oh, ow, strides[0], strides[1], dilations[0], dilations[1],
                            pads_begin[0], pads_begin[1], act, lo, hi)
        return out

    def conv2d_direct(self, x: np.ndarray, filter_hwio: np.ndarray, bias, strides, dilations, pads_begin,
                      clamp, out: np.ndarray) -> np.ndarray:
        """§8.9.10 conv2d, groups 1, of one image x [h, w, c] (a float32 view with any element
        strides: an NCHW image's transposed view is read as it is) with a C-contiguous
        [kh, kw, c, o] filter (o a multiple of 4) into `out` (C-contiguous [..., oh, ow, o],
        its shape giving the output size), bias and clamp/activation in the epilogue."""
        h, w, c = x.shape
        kh, kw, _, o = filter_hwio.shape
        oh, ow = out.shape[-3], out.shape[-2]
        ys, xs, cs = (stride // 4 for stride in x.strides)
        act, lo, hi = _activation_args(clamp)
        if out.size:
            self._conv_direct(self._ptr(x), h, w, c, ys, xs, cs, self._ptr(filter_hwio), kh, kw, self._ptr(bias),
                              self._ptr(out), oh, ow, o, strides[0], strides[1], dilations[0], dilations[1],
                              pads_begin[0], pads_begin[1], act, lo, hi)
        return out

    def maxpool_nhwc(self, x: np.ndarray, window, strides, dilations, pads_begin, out: np.ndarray) -> np.ndarray:
        """§8.9.37 maxPool2d of a C-contiguous NHWC float32 x into `out` (C-contiguous
        [n, oh, ow, c]; its shape gives the output size, the end padding implied)."""
        n, h, w, c = x.shape
        _, oh, ow, _ = out.shape
        if out.size:
            self._maxpool(n, h, w, c, self._ptr(x), self._ptr(out), oh, ow, window[0], window[1], strides[0],
                          strides[1], dilations[0], dilations[1], pads_begin[0], pads_begin[1])
        return out

    def global_avgpool_nhwc(self, x: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Global averagePool2d of a C-contiguous NHWC float32 x [n, h, w, c] into out [n, 1, 1, c]."""
        n, h, w, c = x.shape
        if out.size:
            self._global_avgpool(n, h * w, c, self._ptr(x), self._ptr(out))
        return out

    def scale_channels(self, x: np.ndarray, scale: np.ndarray, out: np.ndarray) -> np.ndarray:
        """out = x * scale for C-contiguous float32 x [n, ..., c] and scale [n, c] (broadcast over
        the middle axes); out like x (may be x)."""
        n, c = x.shape[0], x.shape[-1]
        if x.size:
            self._scale_channels(self._ptr(x), self._ptr(scale), self._ptr(out), n, x.size // (n * c), c)
        return out

    def bind_input_gemm(self, a: np.ndarray, b: np.ndarray, packed_b, bias_n: np.ndarray | None, out: np.ndarray):
        """gemm(a, b, bias_n=bias_n, packed_b=packed_b, out=out) as a call without arguments,
        everything bound now: a recurrent runner's input parts, every run into the same memory
        (each array's address costs ~1.7 µs in Pyodide, a fresh one's ~3.5 µs with _ptr's
        memory). a and out (C-contiguous float32 [..., k] and [..., n], taken as their rows), b,
        packed_b and bias_n must stay alive and in place while the call is used."""
        k, n = b.shape
        rows, out_rows = a.reshape(-1, k), out.reshape(-1, n)
        if packed_b is None or self.threads is not None or out.size == 0:
            return lambda: self.gemm(rows, b, bias_n=bias_n, packed_b=packed_b, out=out_rows)
        m, ptr = out_rows.shape[0], self._ptr
        return partial(self._sgemm, m, n, k, ptr(a), k, 1, ptr(b), n, ptr(out), n, 0, ptr(bias_n), 0, 0, 0.0, 0.0,
                       ptr(packed_b), 1)

    def bind_lstm_sequence(self, xw: np.ndarray, rt: np.ndarray, peephole, h: np.ndarray, c: np.ndarray,
                           seq: np.ndarray | None, gates: np.ndarray, gate_offsets, reverse: bool, activations):
        """§8.9.33 lstm's time steps for one direction (kernels.c lstm_sequence_f32) as a call
        without arguments, everything bound now: xw [steps, batch, 4H] the input parts (x Wᵀ +
        bias + recurrentBias), rt = Rᵀ [H, 4H], peephole [3H] or None, h and c [batch, H]
        updated in place (the initial states before the call, the final ones after), seq (or
        None) a [steps, batch, H] view whose rows are contiguous (e.g. sequence[:, d]);
        gate_offsets (i, o, f, g) in units of H; activations: kernels.c codes (0 relu, 1
        sigmoid, 2 tanh); gates: the loop's working memory (batch * 4H floats). All float32,
        C-contiguous but seq; every array must stay alive and in place while the call is used."""
        steps, batch, width = xw.shape
        ptr = self._ptr
        return partial(self._lstm, steps, batch, width // 4, ptr(xw), ptr(rt), ptr(peephole), ptr(h), ptr(c),
                       ptr(seq), 0 if seq is None else seq.strides[0] // 4, ptr(gates), *gate_offsets,
                       int(reverse), *activations)

    def bind_gru_sequence(self, xw: np.ndarray, rt: np.ndarray, recurrent_bias_n, h: np.ndarray,
                          seq: np.ndarray | None, gates: np.ndarray, gate_offsets, reverse: bool, reset_after: bool,
                          activations):
        """§8.9.25 gru's time steps for one direction (kernels.c gru_sequence_f32) as a call
        without arguments, bound as bind_lstm_sequence: xw [steps, batch, 3H] = x Wᵀ + bias +
        recurrentBias (n's part of recurrentBias left out with reset_after), rt = Rᵀ [H, 3H],
        recurrent_bias_n [H] (n's recurrentBias, with reset_after) or None, h [batch, H] updated
        in place, seq as for lstm; gate_offsets (z, r, n); gates: batch * 3H + H floats."""
        steps, batch, width = xw.shape
        ptr = self._ptr
        return partial(self._gru, steps, batch, width // 3, ptr(xw), ptr(rt), ptr(recurrent_bias_n), ptr(h),
                       ptr(seq), 0 if seq is None else seq.strides[0] // 4, ptr(gates), *gate_offsets,
                       int(reverse), int(reset_after), *activations)

    def chain(self, calls):
        """The bound calls (bind_input_gemm's, bind_lstm_sequence's, bind_gru_sequence's) as one
        call making them in order. With kernels.wasm every bound export crosses into JavaScript
        with its ~17 arguments converted, ~1.1 µs a call in Chromium, where a JS function holding
        the exports and their arguments costs one crossing without arguments (~0.2 µs): a
        recurrent runner's run makes 2 C calls per direction. Elsewhere (ctypes, a call that is
        not a bound export: the pool's GEMM path) the calls run from Python."""
        calls = tuple(calls)
        if self.name == "wasm" and all(type(call) is partial and not call.keywords for call in calls):
            from pyodide.ffi import to_js  # type: ignore[import-not-found]

            return _js_chain()(to_js([[call.func, list(call.args)] for call in calls]))

        def run():
            for call in calls:
                call()
        return run


# Which arguments of each export are addresses (kernels.c's pointer parameters, by position;
# tests/runtime/test_replay_safety.py checks them against kernels.c and pool.js):
# runtime/replay.py holds the arrays they point into for as long as it replays the calls.
POINTER_ARGUMENTS = {
    "clamp_f32": (0, 1), "copy_2d_f32": (0, 5), "gemm_pack_b": (2, 4), "sgemm": (3, 6, 8, 10, 11, 12, 16),
    "sgemm_batch": (4, 8, 12, 18, 19), "gemm_epilogue": (0, 1, 5, 6, 7), "depthwise_nhwc": (4, 5, 8, 9),
    "conv2d_direct": (0, 7, 10, 11), "gelu_f32": (0, 1, 3, 6), "softmax_rows_f32": (0, 1, 4),
    "im2col_nhwc": (0, 15), "layernorm_rows_f32": (0, 1, 4, 5), "recurrent_activation_f32": (0,),
    "lstm_sequence_f32": (3, 4, 5, 6, 7, 8, 10), "gru_sequence_f32": (3, 4, 5, 6, 7, 9),
    "maxpool_nhwc": (4, 5), "global_avgpool_nhwc": (3, 4), "scale_channels_f32": (0, 1, 2),
    # The kernel pool's calls (pool.js; it decides at each call, replayed or not, whether the
    # workers take part: "kept" is B's offset in its arena, not an address here).
    "pool.gemm": (3, 5, 7, 10, 12, 13, 14), "pool.conv": (3, 14, 16, 18, 22, 24, 25), "pool.depthwise": (3, 4, 7, 8),
}

# The Recorder recording now, if any (untraceable() reads it).
_recording: "Recorder | None" = None


class RecordedCall(NamedTuple):
    name: str          # the export's name
    function: object   # the export itself (a JS function): what a replay calls
    values: tuple      # its arguments as Python numbers (to compare, to find addresses, to replay)


class Recorder:
    """The export calls (and the kernel pool's calls) made between start() and stop(), for
    runtime/replay.py: the functions the Kernels call are JS wrappers (recording()) that note
    each call while recording. A path that computes in numpy cannot be replayed as such calls:
    it calls untraceable(), and stop() then returns None."""

    def __init__(self, state):
        self._state = state
        self.refused = False

    def recording(self, functions, names, prefix: str = ""):
        """An object of `functions`' (a JS object's) `names`, each wrapped in a JS function that,
        while this recorder is on, notes its call as prefix + name (in state.calls, a
        null-prototype object: nothing a page puts on Object.prototype or Array.prototype
        runs), then calls it."""
        from pyodide.ffi import to_js  # type: ignore[import-not-found]

        return _recording_wrapper()(functions, to_js([[prefix + name, name] for name in names]), self._state)

    def start(self) -> None:
        global _recording
        self._state.count = 0
        self._state.on = True
        self.refused = False
        _recording = self

    def stop(self) -> "tuple[RecordedCall, ...] | None":
        global _recording
        state = self._state
        state.on = False
        _recording = None
        calls = state.calls
        recorded = []
        for index in range(int(state.count)):
            call = getattr(calls, str(index))
            recorded.append(RecordedCall(str(call.name), call.f, tuple(call.args.to_py())))
            setattr(calls, str(index), None)
        return None if self.refused else tuple(recorded)


def untraceable() -> None:
    """A kernel path that is not only recorded calls (numpy work) is running: a recording of it
    is refused (runtime/replay.py)."""
    if _recording is not None:
        _recording.refused = True


_RECORDING_WRAPPER = None


def _recording_wrapper():
    """The JS function making Recorder.recording's wrappers: (functions, names, state)."""
    global _RECORDING_WRAPPER
    if _RECORDING_WRAPPER is None:
        from pyodide.code import run_js  # type: ignore[import-not-found]

        # Each call passes on exactly the arguments it was given (a rest parameter, the
        # Reflect.apply captured here): a wasm export is never called with more than its own.
        _RECORDING_WRAPPER = run_js(
            "(() => { const apply = Reflect.apply; return (functions, names, state) => { "
            "const wrapped = Object.create(null); "
            "const wrap = (name, f) => (...args) => { if (state.on) { const call = Object.create(null); "
            "call.name = name; call.f = f; call.args = args; state.calls[state.count++] = call; } "
            "return apply(f, undefined, args); }; "
            "for (let i = 0; i < names.length; i++) wrapped[names[i][1]] = wrap(names[i][0], functions[names[i][1]]); "
            "return wrapped; }; })()")
    return _RECORDING_WRAPPER


def _recorder():
    """A Recorder with a fresh JS state."""
    from pyodide.code import run_js  # type: ignore[import-not-found]

    return Recorder(run_js("(() => { const state = Object.create(null); state.on = false; state.count = 0; "
                           "state.calls = Object.create(null); return state; })()"))


_JS_CHAIN = None


def _js_chain():
    """The JS function making Kernels.chain's call from [[export, arguments], ...]. It runs
    beside page script: no spread or Array method (which a page can replace), only indexing of
    the dense arrays made here and the Reflect.apply captured when it is made (each export gets
    exactly its own arguments). Its array writes (and to_js's pushes) are made while the shim
    has taken page-added setters off Array.prototype (webnn-polyfill.js, guarded), so no export
    passes through page code."""
    global _JS_CHAIN
    if _JS_CHAIN is None:
        from pyodide.code import run_js  # type: ignore[import-not-found]

        _JS_CHAIN = run_js("(() => { const apply = Reflect.apply; return (calls) => { "
                           "const n = calls.length, fs = [], args = []; "
                           "for (let i = 0; i < n; i++) { fs[i] = calls[i][0]; args[i] = calls[i][1]; } "
                           "return () => { for (let i = 0; i < n; i++) apply(fs[i], undefined, args[i]); }; }; })()")
    return _JS_CHAIN


try:
    # np.errstate(all="ignore")'s own state, set and reset directly: the context manager costs
    # ~1.3 µs a GEMM (it builds the state each time), this ~0.2 µs; numpy's errstate otherwise.
    from numpy._core._ufunc_config import _extobj_contextvar as _FP_ERRORS, _make_extobj
    _IGNORE_FP_ERRORS = _make_extobj(all="ignore")
except (ImportError, TypeError):                 # another numpy: its public errstate
    _FP_ERRORS = None


def _gemm_on_rows(gemm, b: np.ndarray, packed_b):
    """bind_gemm's run through `gemm` itself: a, out (and the residual) as their rows."""
    k, n = b.shape

    def run(a, out, bias_m=None, bias_n=None, residual=None, clamp=None):
        rows = out if out.ndim == 2 else out.reshape(-1, n)
        if residual is not None and residual.ndim != 2:
            residual = residual.reshape(rows.shape)
        gemm(a if a.ndim == 2 else a.reshape(-1, k), b, bias_m, bias_n, clamp, rows, residual, packed_b)
        return out
    return run


def quietly(function, a, b, out=None):
    """function(a, b) (with out=out if given) with floating-point errors ignored: inf * 0 is
    NaN, an overflow inf, x / 0 ±inf, as IEEE says, with no warning (np.errstate(all="ignore")
    semantics, the caller's setting kept). For kernels run per step, where the context manager's
    ~1.3 µs counts."""
    if _FP_ERRORS is None:
        with np.errstate(all="ignore"):
            return function(a, b) if out is None else function(a, b, out=out)
    token = _FP_ERRORS.set(_IGNORE_FP_ERRORS)
    try:
        return function(a, b) if out is None else function(a, b, out=out)
    finally:
        _FP_ERRORS.reset(token)


def _matmul_quietly(a: np.ndarray, b: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """np.matmul(a, b, out=out) with floating-point errors ignored (`quietly`)."""
    return quietly(np.matmul, a, b, out)


class HostKernels(Kernels):
    """The native build: its kernels, except that GEMMs are numpy's matmul (the host's
    BLAS) followed by the C epilogue, one pass over the product for all its terms."""

    # conv2d_direct against the image's transpose, im2col, BLAS and the epilogue (3x3 stride 2
    # on 224x224x3, AVX-512): 146 / 393 us for 16 output channels, 271 / 462 for 32, even at 64.
    direct_conv2d_max_out = 32

    def gemm_batch(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, clamp=None) -> np.ndarray:
        """Kernels.gemm_batch with BLAS: one gemm per matrix, a right operand whose columns
        are not contiguous laid out first by the C copy (as kernels.c sgemm_batch does)."""
        *lead, k, n = b.shape
        scratch = np.empty((k, n), _F32) if b.strides[-1] != 4 else None
        for index in np.ndindex(*lead):
            right = b[index] if scratch is None else self.copy_2d(b[index], scratch)
            self.gemm(a[index], right, clamp=clamp, out=out[index])
        return out

    def pack_b(self, b: np.ndarray) -> None:
        return None              # BLAS packs for itself

    def bind_input_gemm(self, a: np.ndarray, b: np.ndarray, packed_b, bias_n: np.ndarray | None, out: np.ndarray):
        rows, out_rows = a.reshape(-1, b.shape[0]), out.reshape(-1, b.shape[1])
        return lambda: self.gemm(rows, b, bias_n=bias_n, out=out_rows)   # BLAS, then the C epilogue

    def bind_gemm(self, b: np.ndarray, packed_b=None):
        """Kernels.bind_gemm with BLAS: into a C-contiguous out, BLAS's product then the C
        epilogue called directly with the activation's arguments kept (gemm's own checks and
        wrappers cost about as much as a small product here); anything else through gemm."""
        k, n = b.shape
        general = _gemm_on_rows(self.gemm, b, packed_b)
        epilogue, ptr = self._epilogue, self._ptr
        last = [None, 0, 0.0, 0.0]             # the activation's (clamp, act, lo, hi) last seen

        def run(a, out, bias_m=None, bias_n=None, residual=None, clamp=None):
            rows = out if out.ndim == 2 else out.reshape(-1, n)
            if residual is not None or not rows.flags.c_contiguous:
                return general(a, out, bias_m, bias_n, residual, clamp)
            _matmul_quietly(a if a.ndim == 2 else a.reshape(-1, k), b, rows)
            m = rows.shape[0]
            if m and n and (bias_m is not None or bias_n is not None or clamp is not None):
                if clamp is not last[0]:
                    last[:] = clamp, *_activation_args(clamp)
                address = ptr(out)
                epilogue(address, address, m, n, n, 0 if bias_m is None else ptr(bias_m),
                         0 if bias_n is None else ptr(bias_n), 0, last[1], last[2], last[3])
            return out
        return run

    def gemm(self, a: np.ndarray, b: np.ndarray, bias_m=None, bias_n=None, clamp=None,
             out: np.ndarray | None = None, residual: np.ndarray | None = None,
             packed_b: np.ndarray | None = None) -> np.ndarray:
        if out is None:
            out = np.empty((a.shape[0], b.shape[1]), _F32)
        elif not out.flags.c_contiguous:
            if (residual is None and out.strides[1] == 4 and out.strides[0] % 4 == 0
                    and out.strides[0] >= 4 * out.shape[1]):
                # Rows ldc apart (a concat's channel slice): BLAS writes them in place (numpy
                # hands it the row stride), then the epilogue over the same rows.
                _matmul_quietly(a, b, out)
                if bias_m is not None or bias_n is not None or clamp is not None:
                    self.epilogue(out, out, bias_m, bias_n, None, clamp)
                return out
            # Otherwise (Kernels.gemm's other strided outs): BLAS and the epilogue on a contiguous product.
            out[...] = self.gemm(a, b, bias_m, bias_n, clamp, None,
                                 None if residual is None else np.ascontiguousarray(residual))
            return out
        # A residual that is `out` itself must be read before the product overwrites it.
        aliased = residual is not None and np.may_share_memory(residual, out)
        product = _matmul_quietly(a, b, None if aliased else out)
        if bias_m is not None or bias_n is not None or residual is not None or clamp is not None:
            self.epilogue(product, out, bias_m, bias_n, residual, clamp)
        return out


def available() -> Kernels | None:
    """The wasm kernels in Pyodide (instantiated at the first call), else None."""
    if _loaded is not None or _tried:
        return _loaded
    if sys.platform != "emscripten":
        return None
    _load_wasm()
    return _loaded


def simd() -> Kernels | None:
    """The C kernels of this platform: the wasm ones in Pyodide, the native build on
    the host (HostKernels), else None (numpy)."""
    fast = available()
    return fast if fast is not None else native()


def native() -> HostKernels | None:
    """On the host: the C kernels built natively by tools/build_kernels.py at set-up,
    loaded once with ctypes; None when that library is missing (no clang), fails to
    load, or WEBNN_PY_NATIVE_KERNELS=0."""
    global _native, _native_tried
    if _native_tried:
        return _native
    _native_tried = True
    if sys.platform == "emscripten" or os.environ.get("WEBNN_PY_NATIVE_KERNELS", "1") == "0":
        return None
    if NATIVE_LIBRARY.is_file():
        try:
            _native = HostKernels(native_library(NATIVE_LIBRARY), "native")
        except OSError as e:
            _log.warning("webnn-py: cannot load %s (%s); using the numpy kernels", NATIVE_LIBRARY, e)
    return _native


def native_library(path):
    """A native build's C entry points (ctypes, with kernels.c's signatures), for
    Kernels (the C code as it is, e.g. for tests) or HostKernels (GEMMs in BLAS)."""
    import ctypes

    lib = ctypes.CDLL(str(path))
    i, p, f = ctypes.c_int, ctypes.c_void_p, ctypes.c_float
    signatures = {
        "sgemm": [i, i, i, p, i, i, p, i, p, i, p, p, p, i, f, f, p, i],
        "sgemm_batch": [i, i, i, i, p, i, i, i, p, i, i, i, p, i, i, i, f, f, p, p],
        "gemm_pack_b": [i, i, p, i, p],
        "depthwise_nhwc": [i, i, i, i, p, p, i, i, p, p, i, i, i, i, i, i, i, i, i, f, f],
        "conv2d_direct": [p, i, i, i, i, i, i, p, i, i, p, p, i, i, i, i, i, i, i, i, i, i, f, f],
        "clamp_f32": [p, p, i, f, f],
        "gelu_f32": [p, p, i, p, i, ctypes.c_double, p, f, ctypes.c_double],
        "softmax_rows_f32": [p, p, i, i, p],
        "im2col_nhwc": [p] + [i] * 14 + [p],
        "layernorm_rows_f32": [p, p, i, i, p, p, ctypes.c_double],
        "gemm_epilogue": [p, p, i, i, i, p, p, p, i, f, f],
        "maxpool_nhwc": [i, i, i, i, p, p] + [i] * 10,
        "global_avgpool_nhwc": [i, i, i, p, p],
        "scale_channels_f32": [p, p, p, i, i, i],
        "lstm_sequence_f32": [i, i, i, p, p, p, p, p, p, i, p] + [i] * 8,
        "gru_sequence_f32": [i, i, i, p, p, p, p, p, i, p] + [i] * 6,
        "copy_2d_f32": [p, i, i, i, i, p],
    }
    for name, argtypes in signatures.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = None
    return lib


# The wasm builds (tools/build_kernels.py), the preferred first: relaxed SIMD's FMA in the GEMM
# (kernels.c madd4) where the engine validates it, SIMD128 alone elsewhere.
VARIANTS = ("kernels_relaxed.wasm", "kernels.wasm")


def _wasm_variant(js, to_js) -> tuple[str, object]:
    """(file name, its bytes as a JS Uint8Array) of the first of VARIANTS that is in the package
    and that this engine validates; the last one's whatever the engine says (compiling it
    reports the failure)."""
    for name in VARIANTS:
        try:
            wasm = to_js((resources.files(__name__) / "wasm" / name).read_bytes())
        except (OSError, FileNotFoundError):
            continue
        if name == VARIANTS[-1] or js.WebAssembly.validate(wasm):
            return name, wasm
    raise FileNotFoundError(f"none of {', '.join(VARIANTS)}")


def _load_wasm(synchronously: bool = True) -> None:
    global _tried, _loaded
    _tried = True
    try:
        import js  # type: ignore[import-not-found]
        import pyodide_js  # type: ignore[import-not-found]
        from pyodide.ffi import to_js  # type: ignore[import-not-found]
    except ImportError as e:
        _log.warning("webnn-py: not in Pyodide (%s); using the numpy kernels", e)
        return
    try:
        variant, module_bytes = _wasm_variant(js, to_js)
    except (OSError, FileNotFoundError) as e:
        _log.warning("webnn-py: no kernels.wasm in the package (%s); using the numpy kernels", e)
        return
    try:
        # Pyodide's WebAssembly.Memory: the main module's exports as its dynamic
        # linker keeps them (Emscripten's LDSO, where side modules find `memory`).
        main = js.Reflect.get(pyodide_js._module.LDSO.loadedLibsByName, "__main__")
        memory = main.exports.memory
        if memory is None or memory.buffer.byteLength != pyodide_js._module.HEAPU8.buffer.byteLength:
            raise RuntimeError("Pyodide's WebAssembly.Memory was not found")
        imports = to_js({"env": {"memory": memory}}, dict_converter=js.Object.fromEntries)
    except Exception as e:  # noqa: BLE001 - any failure means: numpy kernels
        _log.warning("webnn-py: cannot reach Pyodide's memory for kernels.wasm (%s); using the numpy kernels", e)
        return
    if not synchronously:
        _compile_later(js, module_bytes, imports, memory, variant, "not tried")
        return
    try:
        # Synchronous compile: ~85 KB, under what browsers compile synchronously on a page's
        # main thread (1.6 ms in headless Chromium 156); otherwise _compile_later.
        instance = js.WebAssembly.Instance.new(js.WebAssembly.Module.new(module_bytes), imports)
    except Exception as e:  # noqa: BLE001
        _compile_later(js, module_bytes, imports, memory, variant, e)
        return
    _loaded = _from_exports(instance.exports, memory, variant)


def _from_exports(exports, memory, variant: str) -> Kernels:
    from . import pool

    recorder = _recorder()
    kernels = Kernels(recorder.recording(exports, [name for name in POINTER_ARGUMENTS if "." not in name]), "wasm")
    kernels.variant = variant
    kernels.recorder = recorder
    kernels.threads = pool.threads(exports, memory, kernels._ptr, variant, recorder)
    return kernels


def _compile_later(js, module_bytes, imports, memory, variant, error) -> None:
    """A browser that refuses to compile synchronously here: compile asynchronously and
    switch to the kernels when it is done; the numpy kernels serve until then."""
    from pyodide.ffi import create_proxy  # type: ignore[import-not-found]

    def done(result):
        global _loaded
        _loaded = _from_exports(result.instance.exports, memory, variant)

    def failed(reason):
        _log.warning("webnn-py: %s failed to load (%s, then %s); using the numpy kernels",
                     variant, error, reason)

    js.WebAssembly.instantiate(module_bytes, imports).then(create_proxy(done), create_proxy(failed))
