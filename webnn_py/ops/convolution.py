"""Convolutions: conv2d (§8.9.10) and convTranspose2d (§8.9.11).

Both kernels bring the operands to one canonical layout (NCHW input, a
grouped filter), do the arithmetic as batched matrix products (im2col for
conv2d, col2im for convTranspose2d) and transpose back. Loops run only over
the filter's spatial offsets, never over output elements.

The small helpers at the top (option lists, layouts, windows) are shared with
pooling.py, whose options follow the same conventions.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..base.descriptor import MAX_DIMENSION, OperandDescriptor
from ..base.errors import OperationError, describe
from .. import kernels
from .matmul import gemm
from .registry import FLOATS, BuildContext, TensorLimits, compute_type, register


# -- helpers shared by the 2-D operators ----------------------------------------------------------

def valid_dimension(value) -> bool:
    """§8.5 "valid dimension": an integer greater than zero and in the range of long."""
    return float(value).is_integer() and 0 < value <= MAX_DIMENSION


def list_option(ctx: BuildContext, options: dict, name: str, default: list[int], size: int,
                nonzero: bool = False) -> list[int]:
    """The recurring steps "if options.X does not exist, set it to «default»; otherwise,
    if its size is not N, throw a TypeError" (+ "if any item is 0, throw")."""
    value = options.get(name)
    if value is None:
        return list(default)
    value = [int(v) for v in value]
    if len(value) != size:
        ctx.fail(f"{name} must have {size} items, got {len(value)} ({value})")
    if nonzero and any(v == 0 for v in value):
        ctx.fail(f"{name} must not contain 0, got {value}")
    return value


def check_rank_then_type(ctx: BuildContext, name: str, operand, limits: TensorLimits) -> OperandDescriptor:
    """Like ctx.check, for the steps that test the rank before the data type."""
    desc = ctx.descriptor(operand)
    if not limits.min_rank <= desc.rank <= limits.max_rank:
        ctx.fail(f"{name} has rank {desc.rank} (shape {list(desc.shape)}); allowed: {limits.min_rank}")
    if desc.data_type not in limits.data_types:
        ctx.fail(f"{name} has data type {desc.data_type}; allowed: {', '.join(limits.data_types)}")
    return desc


def split_layout(shape, layout: str) -> tuple[int, int, int, int]:
    """(batches, channels, height, width) of a 4-D shape in `layout` ("nchw" or "nhwc")."""
    if layout == "nchw":
        return tuple(shape)
    batches, height, width, channels = shape
    return batches, channels, height, width


def join_layout(batches: int, channels: int, height: int, width: int, layout: str) -> tuple[int, ...]:
    """The inverse of split_layout."""
    return (batches, channels, height, width) if layout == "nchw" else (batches, height, width, channels)


def groups_option(ctx: BuildContext, options: dict) -> int:
    """The step "if options.groups is 0, throw a TypeError"."""
    groups = int(options.get("groups", 1))
    if groups == 0:
        ctx.fail("groups must not be 0")
    return groups


def check_bias(ctx: BuildContext, bias_desc: OperandDescriptor | None, output_channels: int,
               input_desc: OperandDescriptor) -> None:
    """The bias steps: shape « outputChannels », same data type as input."""
    if bias_desc is None:
        return
    if bias_desc.shape != (output_channels,):
        ctx.fail(f"bias shape {list(bias_desc.shape)} is not [{output_channels}] (the output channels)")
    ctx.same_type("bias", bias_desc, "input", input_desc)


def check_output_size(ctx: BuildContext, height, width, why: str) -> None:
    """"If outputHeight or outputWidth is not a valid dimension, throw a TypeError"."""
    if not (valid_dimension(height) and valid_dimension(width)):
        ctx.fail(f"the output size {height} x {width} is not valid ({why})")


def to_nchw(x: np.ndarray, layout: str) -> np.ndarray:
    return x if layout == "nchw" else x.transpose(0, 3, 1, 2)


def from_nchw(x: np.ndarray, layout: str) -> np.ndarray:
    return x if layout == "nchw" else x.transpose(0, 2, 3, 1)


def spatial_windows(x: np.ndarray, window: tuple[int, int], strides, dilations, out_size) -> np.ndarray:
    """View of the windows of an (already padded) NCHW array: shape
    [N, C, outH, outW, windowH, windowW], element [.., y, x, i, j] being
    x[.., y*strideH + i*dilationH, x*strideW + j*dilationW]. No copy."""
    effective = [(k - 1) * d + 1 for k, d in zip(window, dilations)]
    view = sliding_window_view(x, effective, axis=(2, 3))
    return view[:, :, :(out_size[0] - 1) * strides[0] + 1:strides[0], :(out_size[1] - 1) * strides[1] + 1:strides[1],
                ::dilations[0], ::dilations[1]]


def conv_output_size(input_size: int, filter_size: int, begin: int, end: int, stride: int, dilation: int) -> float:
    """§8.9.10 "calculate conv output size" (a rational number; callers round it)."""
    effective_filter_size = (filter_size - 1) * dilation + 1
    return (input_size - effective_filter_size + begin + end) / stride + 1


def conv_output_floor(input_size: int, filter_size: int, begin: int, end: int, stride: int, dilation: int) -> int:
    # Integer floor division equals floor() of the rational result, without float rounding.
    return (input_size - ((filter_size - 1) * dilation + 1) + begin + end) // stride + 1


def conv_output_ceil(input_size: int, filter_size: int, begin: int, end: int, stride: int, dilation: int) -> int:
    return -(-(input_size - ((filter_size - 1) * dilation + 1) + begin + end) // stride) + 1


# -- conv2d ---------------------------------------------------------------------------------------

FLOAT4 = TensorLimits(FLOATS, 4, 4)
BIAS = TensorLimits(FLOATS, 1, 1)

# Where each filter layout keeps (out, in, height, width), as transpose axes to OIHW.
_CONV_FILTER_TO_OIHW = {"oihw": (0, 1, 2, 3), "hwio": (3, 2, 0, 1), "ohwi": (0, 3, 1, 2), "ihwo": (3, 0, 1, 2)}


def _validate_operands(ctx: BuildContext, input, filter, bias) -> OperandDescriptor | None:
    """Step 2 of both methods: "validate operand" for input, filter and options.bias."""
    ctx.descriptor(input)
    ctx.descriptor(filter)
    return ctx.descriptor(bias) if bias is not None else None


def build_conv2d(ctx: BuildContext, input, filter, options: dict):
    """§8.9.10 conv2d(input, filter, options), steps 2-18."""
    bias = options.get("bias")
    bias_desc = _validate_operands(ctx, input, filter, bias)                 # step 2
    input_desc = ctx.check("input", input)                                   # steps 3-4
    filter_desc = check_rank_then_type(ctx, "filter", filter, FLOAT4)        # steps 5-6
    ctx.same_type("filter", filter_desc, "input", input_desc)
    padding = list_option(ctx, options, "padding", [0, 0, 0, 0], 4)        # steps 7-8
    strides = list_option(ctx, options, "strides", [1, 1], 2, nonzero=True)   # steps 9-11
    dilations = list_option(ctx, options, "dilations", [1, 1], 2, nonzero=True)  # steps 12-14
    groups = groups_option(ctx, options)                                    # step 15
    input_layout = options.get("inputLayout", "nchw")
    filter_layout = options.get("filterLayout", "oihw")
    # Step 16: the output shape.
    batches, input_channels, input_height, input_width = split_layout(input_desc.shape, input_layout)
    output_channels, filter_input_channels, filter_height, filter_width = \
        (filter_desc.shape[a] for a in _CONV_FILTER_TO_OIHW[filter_layout])
    if input_channels % groups != 0:
        ctx.fail(f"input channels {input_channels} are not divisible by groups {groups}")
    if input_channels // groups != filter_input_channels:
        ctx.fail(f"input channels / groups ({input_channels} / {groups}) differs from the filter's "
                 f"input channels {filter_input_channels} (filter shape {list(filter_desc.shape)}, "
                 f"layout {filter_layout})")
    if output_channels % groups != 0:
        ctx.fail(f"output channels {output_channels} are not divisible by groups {groups}")
    check_bias(ctx, bias_desc, output_channels, input_desc)
    output_height = conv_output_floor(input_height, filter_height, padding[0], padding[1], strides[0], dilations[0])
    output_width = conv_output_floor(input_width, filter_width, padding[2], padding[3], strides[1], dilations[1])
    check_output_size(ctx, output_height, output_width,
                      f"input {input_height} x {input_width}, filter {filter_height} x {filter_width}, "
                      f"padding {padding}, strides {strides}, dilations {dilations}")
    shape = join_layout(batches, output_channels, output_height, output_width, input_layout)
    attributes = {"padding": padding, "strides": strides, "dilations": dilations, "groups": groups,
                  "inputLayout": input_layout, "filterLayout": filter_layout}
    return ctx.emit([input, filter, bias], [OperandDescriptor(input_desc.data_type, shape)], attributes)[0]


def conv2d_filter_oihw(w: np.ndarray, filter_layout: str) -> np.ndarray:
    """The filter as a contiguous OIHW array (the one layout the computation uses)."""
    return np.ascontiguousarray(w.transpose(_CONV_FILTER_TO_OIHW[filter_layout]))


class Conv2dPlan:
    """conv2d specialised to one input shape, options and (OIHW, compute-type) filter:
    the filter is re-laid out into the matrix its path needs once, when the plan is
    made (at build() for a constant filter), so calls only move activations.

    Paths, all in the input's own layout (no transposes of activations):
      * depthwise (groups == input channels == output channels): the sum over the
        kh*kw taps of a shifted strided slice times the per-channel weights, each
        tap over the part of the output its input window covers (no padded copy);
      * 1x1, stride 1, no padding, groups 1: one plain GEMM on the input as it is;
      * groups 1, any other filter: im2col into a bounded buffer, a block of output
        rows at a time, and a GEMM per block;
      * "direct", groups 1 on an NHWC image of at most DIRECT_MAX_CHANNELS channels (one
        image, float32, where the C kernels' direct_conv2d_max_out allows the output
        channels): kernels.c conv2d_direct, each output pixel's sum straight from the
        input, read through its strides (the layout pass's NCHW -> NHWC transpose of the
        image is not made: fusion.py's _absorb_input_transposes, `strided_in`);
      * other grouped convolutions: im2col over windows with one batched product.

    float32 plans call the C kernels (webnn_py.kernels.simd(): WebAssembly in Pyodide,
    the native build on the host) for the GEMMs (on the host, numpy's BLAS with the
    C epilogue), the NHWC im2col of one image and NHWC depthwise convolutions, with
    the bias, a residual add and clamp/relu in the kernels' epilogue instead of a
    separate pass each. (The kernels are looked up when the plan is made, at build()
    for a constant filter.)
    """

    # Size of one im2col block (elements): bounds the extra memory of large convolutions.
    BLOCK_ELEMENTS = 1 << 21
    # The direct path's input channels at most: an image's (im2col's patch rows are then a
    # few dozen floats, and making them costs more than the product).
    DIRECT_MAX_CHANNELS = 4

    def __init__(self, input_shape, w_oihw: np.ndarray, attributes: dict, output_shape):
        self.layout = attributes["inputLayout"]
        self.groups = attributes["groups"]
        self.padding = attributes["padding"]
        self.strides, self.dilations = attributes["strides"], attributes["dilations"]
        self.batches, self.channels, self.height, self.width = split_layout(input_shape, self.layout)
        _, _, self.out_h, self.out_w = split_layout(output_shape, self.layout)
        self.output_shape = tuple(output_shape)
        o, cg, kh, kw = w_oihw.shape
        self.out_channels, self.kh, self.kw = o, kh, kw
        nchw = self.layout == "nchw"
        self.fast = kernels.simd() if w_oihw.dtype == np.float32 else None
        self.depthwise_kernel = None
        self.packed = None
        if self.groups == 1:
            self.path = ("pointwise" if (kh, kw) == (1, 1) and self.strides == [1, 1]
                         and not any(self.padding) else "im2col")
            # im2col columns are ordered (c, i, j) for NCHW and (i, j, c) for NHWC.
            self.matrix = (np.ascontiguousarray(w_oihw.reshape(o, cg * kh * kw)) if nchw else
                           np.ascontiguousarray(w_oihw.transpose(2, 3, 1, 0).reshape(kh * kw * cg, o)))
            if (self.path == "im2col" and not nchw and self.fast is not None and self.batches == 1
                    and cg <= self.DIRECT_MAX_CHANNELS and o % 4 == 0 and o <= self.fast.direct_conv2d_max_out):
                self.path = "direct"
                self.filter_hwio = self.matrix.reshape(kh, kw, cg, o)     # [kh, kw, c, o]
            elif self.fast is not None and not nchw:
                self.packed = self.fast.pack_b(self.matrix)     # the GEMM's right operand, packed once
                self.bound_gemm = self.fast.bind_gemm(self.matrix, self.packed)   # its checks too
        elif cg == 1 and o == self.groups:
            self.path = "depthwise"
            self._depthwise_taps(w_oihw.reshape(o, kh * kw))
            # The C kernel takes NHWC (~4x the numpy taps on the host); its filter layout
            # is [kh, kw, channels].
            self.depthwise_kernel = None if nchw else self.fast
            if self.depthwise_kernel is not None:
                self.filter_hwc = np.ascontiguousarray(w_oihw.reshape(o, kh, kw).transpose(1, 2, 0))
        else:
            self.path = "grouped"
            og = o // self.groups
            self.matrix = np.ascontiguousarray(w_oihw.reshape(self.groups, og, cg * kh * kw).transpose(0, 2, 1))

    def _padded(self, x: np.ndarray) -> np.ndarray:
        pt, pb, pl, pr = self.padding
        if not (pt or pb or pl or pr):
            return x
        if self.layout == "nchw":
            return np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
        return np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))

    def _tap(self, xp: np.ndarray, i: int, j: int, rows: slice | None = None) -> np.ndarray:
        """The input elements tap (i, j) meets for every output position (a strided view)."""
        (sh, sw), (dh, dw) = self.strides, self.dilations
        r0, r1 = (0, self.out_h) if rows is None else (rows.start, rows.stop)
        ys = slice(i * dh + r0 * sh, i * dh + (r1 - 1) * sh + 1, sh)
        xs = slice(j * dw, j * dw + (self.out_w - 1) * sw + 1, sw)
        return xp[:, :, ys, xs] if self.layout == "nchw" else xp[:, ys, xs, :]

    def takes_residual(self) -> bool:
        """Whether __call__ can add a residual in the GEMM's epilogue (the C kernels'
        NHWC pointwise and single-image im2col paths, float32)."""
        return (self.fast is not None and self.layout == "nhwc" and
                (self.path == "pointwise" or (self.path == "im2col" and self.batches == 1)))

    def writes_into(self) -> bool:
        """Whether __call__ can write its result into a given `out` (the C kernels' NHWC
        paths: depthwise, direct, pointwise, single-image im2col)."""
        return self.depthwise_kernel is not None or self.path == "direct" or self.takes_residual()

    def __call__(self, x: np.ndarray, bias: np.ndarray | None = None,
                 residual: np.ndarray | None = None, clamp=None, out: np.ndarray | None = None) -> np.ndarray:
        """The convolution of `x` (compute type, the input's layout) plus `bias` (along
        the output channels, if given), as a fresh contiguous array in the output's layout
        (or in `out`, where writes_into()); then + `residual` (C-contiguous, the output's
        shape; only where takes_residual()) and clamp=(lo, hi) (only there or with a
        depthwise_kernel) in the kernel's epilogue."""
        if self.path == "direct":
            out = np.empty(self.output_shape, np.float32) if out is None else out
            return self.fast.conv2d_direct(x[0], self.filter_hwio,
                                           None if bias is None else np.ascontiguousarray(bias, np.float32),
                                           self.strides, self.dilations, (self.padding[0], self.padding[2]),
                                           clamp, out)
        if self.path == "depthwise" and self.depthwise_kernel is not None:
            bias = None if bias is None else np.ascontiguousarray(bias, np.float32)
            return self.depthwise_kernel.depthwise_nhwc(
                np.ascontiguousarray(x), self.filter_hwc, bias, (self.out_h, self.out_w), self.strides,
                self.dilations, (self.padding[0], self.padding[2]), clamp=clamp, out=out)
        if residual is not None or clamp is not None or out is not None:
            return self._fast(x, bias, residual, clamp, out)
        if self.fast is not None and self.path != "grouped":
            return self._fast(x, bias)
        return self._numpy_with_bias(x, bias)

    def _fast(self, x: np.ndarray, bias: np.ndarray | None, residual: np.ndarray | None = None,
              clamp=None, out: np.ndarray | None = None) -> np.ndarray:
        """The C kernels' paths (float32): the same GEMM shapes as the numpy paths,
        the bias in the kernel's epilogue, and the NHWC depthwise convolution in one call."""
        fast, n, o = self.fast, self.batches, self.out_channels
        nchw = self.layout == "nchw"
        bias = None if bias is None else np.ascontiguousarray(bias, np.float32)
        if self.path == "depthwise":      # NCHW (NHWC went to depthwise_kernel)
            return self._numpy_with_bias(x, bias)
        if self.path == "pointwise":
            hw = self.height * self.width
            if nchw:
                x = x.reshape(n, self.channels, hw)
                out = np.empty((n, o, hw), np.float32)
                for b in range(n):
                    fast.gemm(self.matrix, x[b], bias_m=bias, out=out[b])
                return out.reshape(self.output_shape)
            # The image and the output as they are (C-contiguous: their pixel rows, no reshape).
            out = np.empty(self.output_shape, np.float32) if out is None else out
            self.bound_gemm(x, out if out.flags.c_contiguous else pixel_rows(out), None, bias, residual, clamp)
            return out
        if nchw or n != 1:
            return self._numpy_with_bias(x, bias)
        return self._im2col_nhwc_single(np.ascontiguousarray(x[0]), bias, residual, clamp, out)

    def _numpy_with_bias(self, x, bias):
        y = self._numpy(x)
        if bias is not None:
            self.add_bias(y, bias)
        return y

    def _im2col_nhwc_single(self, x: np.ndarray, bias: np.ndarray | None,
                            residual: np.ndarray | None = None, clamp=None,
                            out: np.ndarray | None = None) -> np.ndarray:
        """_im2col for one NHWC image [h, w, c], both halves in the kernels: the patch
        matrix of a block of output rows (padding as zeros, no padded copy), then its
        GEMM writing those output rows in place."""
        c, o, kh, kw, ow = self.channels, self.out_channels, self.kh, self.kw, self.out_w
        depth = c * kh * kw
        block = max(1, min(self.out_h, self.BLOCK_ELEMENTS // max(1, depth * ow)))
        if out is None:
            out = np.empty(self.output_shape, np.float32)
        rows_out = pixel_rows(out)
        residual_rows = None if residual is None else residual.reshape(self.out_h * ow, o)
        cols = self.fast.scratch(block * ow * depth)
        pads = (self.padding[0], self.padding[2])
        if self.packed is not None and self.fast.im2col_gemm(
                x, (kh, kw), self.strides, self.dilations, pads, (self.out_h, ow), self.matrix, self.packed, rows_out,
                cols, bias, residual_rows, clamp):
            return out      # the kernel pool's workers made the patches of their rows
        for r0 in range(0, self.out_h, block):
            rows = range(r0, min(r0 + block, self.out_h))
            part = cols[:len(rows) * ow * depth].reshape(len(rows) * ow, depth)
            self.fast.im2col_nhwc(x, (kh, kw), self.strides, self.dilations, pads, rows, ow, part)
            self.bound_gemm(part, rows_out[r0 * ow:rows.stop * ow], None, bias,
                            None if residual is None else residual_rows[r0 * ow:rows.stop * ow], clamp)
        return out

    def _numpy(self, x: np.ndarray) -> np.ndarray:
        """The numpy paths, without bias."""
        if self.path == "pointwise":
            return self._pointwise(x)
        if self.path == "depthwise":
            # A transposed view (the layout pass's NCHW -> NHWC) is copied once: the taps
            # then read contiguous rows (3x faster on a 32x112x112 input here).
            return self._depthwise(np.ascontiguousarray(x))
        if self.path == "im2col":
            return self._im2col(self._padded(x))
        return self._grouped(x)

    def _pointwise(self, x: np.ndarray) -> np.ndarray:
        n, c, hw = self.batches, self.channels, self.height * self.width
        if self.layout == "nchw":
            # [O, C] x [C, H*W] -> [O, H*W] for each batch.
            x = x.reshape(n, c, hw)
            if n == 1:
                return gemm(self.matrix, x[0]).reshape(self.output_shape)
            return np.stack([gemm(self.matrix, x[b]) for b in range(n)]).reshape(self.output_shape)
        return gemm(x.reshape(n * hw, c), self.matrix).reshape(self.output_shape)

    def _depthwise_taps(self, weights: np.ndarray) -> None:
        """Per filter tap: the output rectangle it reaches inside the unpadded input, the
        input window feeding it, and its weights shaped to multiply that window (per
        channel; for NHWC tiled along the row, so numpy's inner loop runs over a whole
        contiguous row instead of one pixel's channels). Padding is never materialised:
        a tap only touches the outputs whose input element lies inside the input."""
        (sh, sw), (dh, dw) = self.strides, self.dilations
        pt, _, pl, _ = self.padding
        nchw = self.layout == "nchw"

        def span(offset, begin, stride, size, out_size):
            # Outputs y with 0 <= y*stride + offset - begin < size.
            first = max(0, -(-(begin - offset) // stride))
            last = min(out_size - 1, (size - 1 + begin - offset) // stride)
            if last < first:
                return None
            start = first * stride + offset - begin
            return slice(first, last + 1), slice(start, start + (last - first) * stride + 1, stride)

        self.taps = []
        for tap in range(self.kh * self.kw):
            i, j = divmod(tap, self.kw)
            rows = span(i * dh, pt, sh, self.height, self.out_h)
            cols = span(j * dw, pl, sw, self.width, self.out_w)
            if rows is None or cols is None:
                continue            # a tap that only ever meets padding
            w = weights[:, tap]
            if nchw:
                w = w[:, None, None]
            else:
                w = np.ascontiguousarray(np.broadcast_to(w, (cols[0].stop - cols[0].start, self.channels)))
            full = rows[0] == slice(0, self.out_h) and cols[0] == slice(0, self.out_w)
            self.taps.append((full, rows, cols, w))
        # A tap reaching every output starts the sum (no zero fill); it goes first.
        self.taps.sort(key=lambda t: not t[0])

    def _depthwise(self, x: np.ndarray) -> np.ndarray:
        out = np.empty(self.output_shape, x.dtype)
        scratch = np.empty(self.output_shape, x.dtype)
        nchw = self.layout == "nchw"
        if not self.taps or not self.taps[0][0]:
            out.fill(0)
        for index, (full, (out_rows, in_rows), (out_cols, in_cols), w) in enumerate(self.taps):
            if nchw:
                source, target = x[:, :, in_rows, in_cols], (slice(None), slice(None), out_rows, out_cols)
            else:
                source, target = x[:, in_rows, in_cols], (slice(None), out_rows, out_cols)
            if index == 0 and full:
                np.multiply(source, w, out=out)
            else:
                product = scratch[target]
                np.multiply(source, w, out=product)
                out[target] += product
        return out

    def _im2col(self, xp: np.ndarray) -> np.ndarray:
        n, c, o, kh, kw, ow = self.batches, self.channels, self.out_channels, self.kh, self.kw, self.out_w
        depth = c * kh * kw
        block = max(1, min(self.out_h, self.BLOCK_ELEMENTS // max(1, depth * ow * (1 if self.layout == "nchw" else n))))
        out = np.empty(self.output_shape, xp.dtype)
        if self.layout == "nchw":
            cols = np.empty((c, kh, kw, block, ow), xp.dtype)
            flat_out = out.reshape(n, o, self.out_h * ow)
            for b in range(n):
                for r0 in range(0, self.out_h, block):
                    rows = slice(r0, min(r0 + block, self.out_h))
                    count = rows.stop - r0
                    part = cols[:, :, :, :count]
                    for i in range(kh):
                        for j in range(kw):
                            part[:, i, j] = self._tap(xp[b:b + 1], i, j, rows)[0]
                    product = gemm(self.matrix, part.reshape(depth, count * ow))
                    flat_out[b, :, r0 * ow:rows.stop * ow] = product
        else:
            cols = np.empty((n, block, ow, kh, kw, c), xp.dtype)
            for r0 in range(0, self.out_h, block):
                rows = slice(r0, min(r0 + block, self.out_h))
                count = rows.stop - r0
                part = cols[:, :count]
                for i in range(kh):
                    for j in range(kw):
                        part[:, :, :, i, j] = self._tap(xp, i, j, rows)
                product = gemm(part.reshape(n * count * ow, depth), self.matrix)
                out[:, rows] = product.reshape(n, count, ow, o)
        return out

    def _grouped(self, x: np.ndarray) -> np.ndarray:
        groups, n, o = self.groups, self.batches, self.out_channels
        out_h, out_w, kh, kw = self.out_h, self.out_w, self.kh, self.kw
        x = to_nchw(x, self.layout)
        pt, pb, pl, pr = self.padding
        x = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
        cg = self.channels // groups
        windows = spatial_windows(x, (kh, kw), self.strides, self.dilations, (out_h, out_w))
        # im2col: rows are (group, n, oh, ow), columns (channel in group, kh, kw).
        cols = windows.reshape(n, groups, cg, out_h, out_w, kh, kw).transpose(1, 0, 3, 4, 2, 5, 6) \
            .reshape(groups, n * out_h * out_w, cg * kh * kw)
        result = np.matmul(cols, self.matrix)                                     # [G, n*oh*ow, og]
        result = result.reshape(groups, n, out_h, out_w, o // groups).transpose(1, 0, 4, 2, 3) \
            .reshape(n, o, out_h, out_w)
        return np.ascontiguousarray(from_nchw(result, self.layout))

    def add_bias(self, y: np.ndarray, bias: np.ndarray) -> None:
        """y += bias along the output channels, in place."""
        y += bias.reshape(-1, 1, 1) if self.layout == "nchw" else bias


def pixel_rows(out: np.ndarray) -> np.ndarray:
    """An NHWC output [n, h, w, c] as its [n h w, c] matrix of pixel rows, without a copy:
    also for a channel slice of a wider buffer (a concat's part written in place, rows
    further apart than c; the GEMM takes them ldc apart). Its leading axes must step
    evenly (numpy's reshape would copy otherwise, and the result would be lost)."""
    *lead, channels = out.shape
    rows = math.prod(lead)           # (np.prod costs ~4 us a call: one per step of a CNN)
    if out.flags.c_contiguous:
        return out.reshape(rows, channels)
    step = out.strides[-2]
    for axis in range(len(lead) - 1):
        if out.shape[axis] > 1 and out.strides[axis] != out.shape[axis + 1] * out.strides[axis + 1]:
            raise ValueError(f"conv2d: an output view with strides {out.strides} is not rows of pixels")
    return np.lib.stride_tricks.as_strided(out, (rows, channels), (step, out.strides[-1]))


def conv2d_prepare(input_desc: OperandDescriptor, filter_array: np.ndarray | None, attributes: dict,
                   output_desc: OperandDescriptor):
    """A conv2d kernel specialised once (§8.9.10): with a constant filter, its
    re-layout happens here rather than on every call. Returns the kernel."""
    ctype = compute_type(input_desc.type.numpy)
    out_dtype = input_desc.type.numpy
    fixed = None
    if filter_array is not None:
        w = conv2d_filter_oihw(filter_array, attributes["filterLayout"]).astype(ctype, copy=False)
        fixed = Conv2dPlan(input_desc.shape, w, attributes, output_desc.shape)

    def kernel(inputs, _attributes, outputs, out=None):
        x, w, bias = inputs
        plan = fixed
        if plan is None:
            w = conv2d_filter_oihw(w, attributes["filterLayout"]).astype(ctype, copy=False)
            plan = Conv2dPlan(x.shape, w, attributes, outputs[0].shape)
        y = plan(x.astype(ctype, copy=False), None if bias is None else bias.astype(ctype, copy=False), out=out)
        return [y.astype(out_dtype, copy=False)]
    kernel.plan = fixed
    # float32 on a C path: the plan may hand the kernel a buffer to write into; on the GEMM
    # paths also a channel slice of a wider one (pixel_rows: a concat written in place).
    kernel.writes_into = fixed is not None and fixed.writes_into() and out_dtype == np.float32
    kernel.strided_out = kernel.writes_into and fixed.takes_residual()
    # Into a given buffer the C paths are export calls alone (runtime/replay.py).
    kernel.replayable = kernel.writes_into
    # The direct path reads x through its strides (a transposed view of an NCHW image as it is).
    kernel.strided_in = fixed is not None and fixed.path == "direct"
    if fixed is not None and (fixed.takes_residual() or fixed.depthwise_kernel is not None or fixed.path == "direct"):
        def epilogue(extra_bias, residual_at, clamp):
            """For the compiler's fusion: a following residual add ((conv + bias) + residual,
            the GEMM paths) and clamp/relu (also the depthwise kernel) in the C kernel's
            epilogue; None for what the kernel cannot take (a second bias)."""
            if extra_bias is not None or (residual_at is not None and not fixed.takes_residual()):
                return None

            def fused(inputs, _attributes, _outputs, out=None):
                x, _, bias = inputs[:3]
                residual = None if residual_at is None else np.ascontiguousarray(inputs[residual_at])
                return [fixed(x, bias, residual, clamp, out)]
            fused.writes_into = fused.replayable = fixed.writes_into()
            fused.strided_out = fixed.takes_residual()
            fused.strided_in = kernel.strided_in
            return fused
        kernel.epilogue = epilogue
    return kernel


def conv2d_kernel(inputs, attributes, outputs):
    """§8.9.10's computation, for a filter given at call time (see Conv2dPlan)."""
    x, w, _ = inputs
    ctype = compute_type(x.dtype)
    w = conv2d_filter_oihw(w, attributes["filterLayout"]).astype(ctype, copy=False)
    plan = Conv2dPlan(x.shape, w, attributes, outputs[0].shape)
    bias = inputs[2]
    y = plan(x.astype(ctype, copy=False), None if bias is None else bias.astype(ctype, copy=False))
    return [y.astype(x.dtype, copy=False)]


register("conv2d", build=build_conv2d, kernel=conv2d_kernel,
         limits={"input": FLOAT4, "filter": FLOAT4, "bias": BIAS, "output": FLOAT4})


# -- convTranspose2d ------------------------------------------------------------------------------

# Where each filter layout keeps (in, out/groups, height, width), as transpose axes to IOHW.
_TRANSPOSE_FILTER_TO_IOHW = {"iohw": (0, 1, 2, 3), "hwoi": (3, 2, 0, 1), "ohwi": (3, 0, 1, 2)}


def build_conv_transpose2d(ctx: BuildContext, input, filter, options: dict):
    """§8.9.11 convTranspose2d(input, filter, options), steps 2-22."""
    bias = options.get("bias")
    bias_desc = _validate_operands(ctx, input, filter, bias)                 # step 2
    input_desc = check_rank_then_type(ctx, "input", input, FLOAT4)          # steps 3-4
    filter_desc = check_rank_then_type(ctx, "filter", filter, FLOAT4)        # steps 5-6
    ctx.same_type("filter", filter_desc, "input", input_desc)
    padding = list_option(ctx, options, "padding", [0, 0, 0, 0], 4)        # steps 7-8
    strides = list_option(ctx, options, "strides", [1, 1], 2, nonzero=True)   # steps 9-11
    dilations = list_option(ctx, options, "dilations", [1, 1], 2, nonzero=True)  # steps 12-14
    output_padding = list_option(ctx, options, "outputPadding", [0, 0], 2)  # steps 15-16
    output_sizes = options.get("outputSizes")
    if output_sizes is not None:                                             # step 17
        output_sizes = [int(v) for v in output_sizes]
        if len(output_sizes) != 2:
            ctx.fail(f"outputSizes must have 2 items, got {len(output_sizes)} ({output_sizes})")
    elif output_padding[0] >= strides[0] or output_padding[1] >= strides[1]:  # step 18
        ctx.fail(f"outputPadding {output_padding} must be smaller than strides {strides}")
    groups = groups_option(ctx, options)                                    # step 19
    input_layout = options.get("inputLayout", "nchw")
    filter_layout = options.get("filterLayout", "iohw")
    # Step 20: the output shape.
    batches, input_channels, input_height, input_width = split_layout(input_desc.shape, input_layout)
    filter_input_channels, filter_output_channels, filter_height, filter_width = \
        (filter_desc.shape[a] for a in _TRANSPOSE_FILTER_TO_IOHW[filter_layout])
    if input_channels != filter_input_channels:
        ctx.fail(f"input channels {input_channels} differ from the filter's input channels "
                 f"{filter_input_channels} (filter shape {list(filter_desc.shape)}, layout {filter_layout})")
    # Steps 20.5-20.7. §8.9.11 has no step requiring the input channels to be divisible by
    # `groups`, so the builder accepts such a graph (the shape is defined); its computation
    # is not (the kernel refuses it, see conv_transpose2d_kernel).
    output_channels = filter_output_channels * groups
    if not valid_dimension(output_channels):
        ctx.fail(f"output channels {filter_output_channels} * {groups} groups is not a valid dimension")
    check_bias(ctx, bias_desc, output_channels, input_desc)
    calculated_height = _conv_transpose_output_size(input_height, filter_height, padding[0], padding[1],
                                                    strides[0], dilations[0])
    calculated_width = _conv_transpose_output_size(input_width, filter_width, padding[2], padding[3],
                                                   strides[1], dilations[1])
    if output_sizes is not None:
        output_height, output_width = output_sizes
        if not calculated_height <= output_height < calculated_height + strides[0]:
            ctx.fail(f"outputSizes[0] {output_height} is outside [{calculated_height}, "
                     f"{calculated_height + strides[0]}) (calculated height + stride)")
        if not calculated_width <= output_width < calculated_width + strides[1]:
            ctx.fail(f"outputSizes[1] {output_width} is outside [{calculated_width}, "
                     f"{calculated_width + strides[1]}) (calculated width + stride)")
    else:
        output_height = calculated_height + output_padding[0]
        output_width = calculated_width + output_padding[1]
    check_output_size(ctx, output_height, output_width,
                      f"input {input_height} x {input_width}, filter {filter_height} x {filter_width}, "
                      f"padding {padding}, strides {strides}, dilations {dilations}")
    shape = join_layout(batches, output_channels, output_height, output_width, input_layout)
    attributes = {"padding": padding, "strides": strides, "dilations": dilations, "groups": groups,
                  "inputLayout": input_layout, "filterLayout": filter_layout,
                  "label": ctx.label}   # the kernel's OperationError names the operator as build-time errors do
    return ctx.emit([input, filter, bias], [OperandDescriptor(input_desc.data_type, shape)], attributes)[0]


def _conv_transpose_output_size(input_size, filter_size, begin, end, stride, dilation) -> int:
    """§8.9.11 "calculate convtranspose output size"."""
    effective_filter_size = (filter_size - 1) * dilation + 1
    return (input_size - 1) * stride + effective_filter_size - begin - end


def conv_transpose2d_kernel(inputs, attributes, outputs):
    """col2im: one batched matrix product gives every (input pixel, filter tap)
    contribution; a loop over the filter taps scatters them (strided adds) into
    the uncropped output, which the padding then crops."""
    x, w, bias = inputs
    out_dtype = x.dtype
    ctype = compute_type(out_dtype)
    layout = attributes["inputLayout"]
    x = to_nchw(x, layout).astype(ctype, copy=False)
    w = w.transpose(_TRANSPOSE_FILTER_TO_IOHW[attributes["filterLayout"]]).astype(ctype, copy=False)
    groups = attributes["groups"]
    pt, _, pl, _ = attributes["padding"]
    (sh, sw), (dh, dw) = attributes["strides"], attributes["dilations"]
    n, c, h, wd = x.shape
    if c % groups != 0:
        # The `groups` option "divides the input and output channels into groups"; with
        # channels that do not divide there is no computation to run. The builder's steps
        # accept the graph, so this surfaces as a failed dispatch (an OperationError, logged;
        # the outputs keep their contents), like every other run-time failure.
        raise OperationError(describe("convTranspose2d", attributes["label"],
                                      f"input channels {c} are not divisible by groups {groups}: "
                                      "the grouped computation is undefined"))
    _, og, kh, kw = w.shape
    cg = c // groups
    out_shape = outputs[0].shape
    out_h, out_w = out_shape[2:] if layout == "nchw" else out_shape[1:3]
    # contributions[g, n*h*w, og*kh*kw] = sum over the group's input channels.
    rows = x.reshape(n, groups, cg, h * wd).transpose(1, 0, 3, 2).reshape(groups, n * h * wd, cg)
    taps = w.reshape(groups, cg, og * kh * kw)
    contributions = np.matmul(rows, taps).reshape(groups, n, h, wd, og, kh, kw) \
        .transpose(1, 0, 4, 5, 6, 2, 3).reshape(n, groups * og, kh, kw, h, wd)
    # Uncropped output, large enough for the cropped window [pt, pt + out_h) even
    # when outputPadding/outputSizes reach past the last contribution.
    full_h = max((h - 1) * sh + (kh - 1) * dh + 1, pt + out_h)
    full_w = max((wd - 1) * sw + (kw - 1) * dw + 1, pl + out_w)
    full = np.zeros((n, groups * og, full_h, full_w), dtype=ctype)
    for i in range(kh):
        for j in range(kw):
            full[:, :, i * dh:i * dh + (h - 1) * sh + 1:sh, j * dw:j * dw + (wd - 1) * sw + 1:sw] += \
                contributions[:, :, i, j]
    result = full[:, :, pt:pt + out_h, pl:pl + out_w]
    if bias is not None:
        result = result + bias.astype(ctype).reshape(1, -1, 1, 1)
    return [np.ascontiguousarray(from_nchw(result, layout)).astype(out_dtype, copy=False)]


register("convTranspose2d", build=build_conv_transpose2d, kernel=conv_transpose2d_kernel,
         limits={"input": FLOAT4, "filter": FLOAT4, "bias": BIAS, "output": FLOAT4})
