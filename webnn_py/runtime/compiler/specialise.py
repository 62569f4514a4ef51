"""Kernels specialised to a node's constant operands ("layout decided once").

conv2d gets a kernel holding its filter already re-laid out as the GEMM matrix
(or per-channel taps) its path needs; gemm and matmul get their constant `b`
transposed and converted to the compute type once; a loop stepping an lstmCell or
gruCell over a sequence becomes one lstm/gru sequence run (recurrent_loop.py).
Everything else uses the operator's registered kernel as it is.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ... import kernels
from ...ops import operator_kind
from ...ops.convolution import conv2d_filter_oihw, conv2d_prepare
from ...ops.matmul import batched_gemm, gemm
from ...ops.recurrent import gru_runner, lstm_runner
from ...ops.registry import compute_type
from ..ir import Node
from .recurrent_loop import fused_recurrent_loop

_F32 = np.dtype(np.float32)


def specialise(node: Node, constant_of: Callable) -> Callable:
    make = _SPECIALISERS.get(node.kind)
    if make is not None:
        kernel = make(node, constant_of)
        if kernel is not None:
            return kernel
    return operator_kind(node.kind).kernel


def _conv2d(node: Node, constant_of):
    x, w, _ = node.inputs
    grouped = _grouped_conv2d_nhwc(node, constant_of)
    if grouped is not None:
        return grouped
    return conv2d_prepare(x.descriptor, constant_of(w), node.attributes, node.outputs[0].descriptor)


def _grouped_conv2d_nhwc(node: Node, constant_of):
    """§8.9.10 conv2d with 1 < groups (not depthwise: that has its own C kernel) on one NHWC
    float32 image with a constant filter, in the C kernels: per group, its channels' im2col
    then a GEMM with the group's filter matrix (packed once, here), bias, residual and
    activation in the GEMM's epilogue, the group's output columns copied into place. The
    numpy path is one batched matmul over every group's windows."""
    attributes = node.attributes
    x, w, _ = node.inputs
    groups = attributes["groups"]
    if groups == 1 or attributes["inputLayout"] != "nhwc" or x.descriptor.type.numpy != _F32:
        return None
    batches, _, _, _ = x.descriptor.shape
    filter_array = constant_of(w)
    fast = kernels.simd()
    if batches != 1 or filter_array is None or fast is None:
        return None
    w_oihw = conv2d_filter_oihw(filter_array, attributes["filterLayout"]).astype(_F32, copy=False)
    out_channels, cg, kh, kw = w_oihw.shape
    if cg == 1 and out_channels == groups:
        return None
    og = out_channels // groups
    matrices = [np.ascontiguousarray(w_oihw[g * og:(g + 1) * og].transpose(2, 3, 1, 0).reshape(kh * kw * cg, og))
                for g in range(groups)]
    packed = [fast.pack_b(m) for m in matrices]
    shape = node.outputs[0].descriptor.shape
    _, out_h, out_w, _ = shape
    pads = (attributes["padding"][0], attributes["padding"][2])
    # Laid out once here rather than at every dispatch: the patch matrix (one group's at a
    # time; a plan runs one dispatch at a time) and a constant bias's per-group slices.
    cols = np.empty((out_h * out_w, kh * kw * cg), _F32)
    bias_constant = constant_of(node.inputs[2]) if node.inputs[2] is not None else None
    bias_slices = (None if bias_constant is None else
                   [np.ascontiguousarray(bias_constant[g * og:(g + 1) * og], _F32) for g in range(groups)])

    def run(x, bias, residual, clamp, out):
        out = np.empty(shape, _F32) if out is None else out
        rows_out = out.reshape(out_h * out_w, out_channels)
        residual_rows = None if residual is None else np.ascontiguousarray(residual).reshape(out_h * out_w,
                                                                                              out_channels)
        for g in range(groups):
            group = slice(g * og, (g + 1) * og)
            fast.im2col_nhwc(np.ascontiguousarray(x[0, :, :, g * cg:(g + 1) * cg]), (kh, kw), attributes["strides"],
                             attributes["dilations"], pads, range(out_h), out_w, cols)
            if bias is None:
                group_bias = None
            elif bias_slices is not None:
                group_bias = bias_slices[g]
            else:
                group_bias = np.ascontiguousarray(bias[group], _F32)
            # The group's output columns written in place: rows out_channels apart.
            fast.gemm(cols, matrices[g], bias_n=group_bias,
                      residual=None if residual_rows is None else residual_rows[:, group],
                      clamp=clamp, packed_b=packed[g], out=rows_out[:, group])
        return out

    def kernel(inputs, _attributes, _outputs, out=None):
        return [run(inputs[0], inputs[2], None, None, out)]
    kernel.writes_into = True

    def epilogue(extra_bias, residual_at, clamp):
        """For fusion.py, as conv2d_prepare's: a residual add and an activation into each
        group's GEMM epilogue (a second bias is declined)."""
        if extra_bias is not None:
            return None

        def fused(inputs, _attributes, _outputs, out=None):
            return [run(inputs[0], inputs[2], None if residual_at is None else inputs[residual_at], clamp, out)]
        fused.writes_into = True
        return fused
    kernel.epilogue = epilogue
    return kernel


def _gemm(node: Node, constant_of):
    """§8.9.24 with a constant b (a model's weights): b^T resolved and made contiguous
    in the compute type at build; beta * c too when c is constant. The arithmetic
    is the registered kernel's: alpha * (a b), then + beta * c. In float32 with the C
    kernels, alpha 1 and a constant c that is one value per column, per row or a
    single value (a fully connected layer's bias): the C GEMM with b packed once and
    beta * c in its epilogue (_rows_gemm)."""
    a_value, b_value, c_value = node.inputs
    b = constant_of(b_value)
    if b is None:
        return None
    attributes = node.attributes
    out_dtype = a_value.descriptor.type.numpy
    work = compute_type(out_dtype)
    b = b.astype(work)
    b = np.ascontiguousarray(b.T if attributes["bTranspose"] else b)
    alpha = work.type(attributes["alpha"])
    c_fixed = constant_of(c_value) if c_value is not None else None
    if c_fixed is not None:
        with np.errstate(all="ignore"):
            c_fixed = c_fixed.astype(work)
            if attributes["beta"] != 1.0:
                c_fixed = c_fixed * work.type(attributes["beta"])
    beta = work.type(attributes["beta"])
    fast = kernels.simd() if out_dtype == _F32 and alpha == 1.0 else None
    if fast is not None and (c_value is None or c_fixed is not None):
        biases = _gemm_biases(c_fixed, node.outputs[0].descriptor.shape)
        if biases is not None:
            take_a = (lambda a: a.T) if attributes["aTranspose"] else (lambda a: a)
            make = _rows_gemm(fast, b, fast.pack_b(b), node.outputs[0].descriptor.shape, take_a, *biases)
            kernel = make(None, None)
            kernel.epilogue = make
            return kernel

    def kernel(inputs, _attributes, outputs):
        a, _, c = inputs
        a = a.astype(work, copy=False)
        if attributes["aTranspose"]:
            a = a.T
        with np.errstate(all="ignore"):
            result = gemm(a, b)
            if alpha != 1.0:
                result *= alpha
            if c is not None:
                if c_fixed is not None:
                    c = c_fixed
                else:
                    c = c.astype(work, copy=False)
                    if beta != 1.0:
                        c = c * beta
                result += c
        return [result.astype(out_dtype, copy=False)]
    return kernel


def _gemm_biases(c: np.ndarray | None, shape: tuple) -> tuple | None:
    """gemm's constant beta * c (float32, unidirectionally broadcast to [m, n]) as the C
    epilogue's (bias_m, bias_n) vectors: c of one value per column ([n], [1, n]), per row
    ([m, 1]) or a single value (any rank, broadcast over [n]); None for a full [m, n] c."""
    if c is None:
        return None, None
    m, n = shape
    if c.size == 1:
        return None, np.full(n, c.reshape(()), _F32)
    if c.ndim == 2 and c.shape == (m, 1):
        return np.ascontiguousarray(c.reshape(m)), None
    if c.shape[-1] == n and c.size == n:
        return None, np.ascontiguousarray(c.reshape(n))
    return None


def _rows_gemm(fast, b: np.ndarray, packed, out_shape: tuple, take_a: Callable, bias_m=None, bias_n=None):
    """The epilogue factory of a float32 GEMM with a constant b (matmul, gemm, for
    fusion.py): make(bias, residual_at, clamp) gives a kernel computing
    (((take_a(a) b + bias_m) + bias_n or bias) + residual), then the activation `clamp`
    (kernels.c sgemm's epilogue: each a float32 operation as the separate operators round
    it), with b packed once; `residual_at` indexes the step's inputs. The kernels write
    the plan's buffer: any array of out_shape's element count whose rows are n long (a
    reshape keeping the last axis is free, fusion.py _absorb_reshape)."""
    n = b.shape[1]
    run = fast.bind_gemm(b, packed)           # b's checks and addresses once, not every dispatch

    def make(bias: np.ndarray | None, residual_at: int | None, clamp=None):
        if bias is not None and bias_n is not None:
            return None                       # one column bias in the epilogue
        bias_cols = bias_n if bias is None else np.ascontiguousarray(bias.reshape(n), _F32)

        def kernel(inputs, _attributes, _outputs, out=None):
            residual = None if residual_at is None else np.ascontiguousarray(inputs[residual_at].reshape(-1, n))
            result = run(take_a(inputs[0]), np.empty(out_shape, _F32) if out is None else out, bias_m, bias_cols,
                         residual, clamp)
            return [result.reshape(out_shape)]
        kernel.writes_into = kernel.replayable = True
        kernel.rows_out = True
        return kernel
    return make


def _matmul(node: Node, constant_of):
    a_value, b_value = node.inputs
    b = constant_of(b_value)
    if b is None:
        return _matmul_computed(node)
    out_dtype = a_value.descriptor.type.numpy
    b = np.ascontiguousarray(b.astype(compute_type(out_dtype)))
    work = b.dtype
    if a_value.descriptor.rank >= 2 and b.ndim == 2:
        # A stack of matrices times one matrix is one GEMM on the stacked rows.
        fast = kernels.simd() if out_dtype == _F32 else None
        if fast is not None:
            # The C GEMM's packed layout of b, made once here rather than at every call.
            # bind_gemm takes a C-contiguous stack of matrices as its rows as it is.
            make = _rows_gemm(fast, b, fast.pack_b(b), node.outputs[0].descriptor.shape,
                              lambda a: a if a.ndim == 2 or a.flags.c_contiguous else a.reshape(-1, a.shape[-1]))
            kernel = make(None, None)
            kernel.epilogue = make
            return kernel
        rows = a_value.descriptor.shape[:-1]

        def kernel(inputs, _attributes, outputs):
            a = inputs[0].astype(work, copy=False)
            with np.errstate(all="ignore"):
                result = gemm(a.reshape(-1, a.shape[-1]), b)
            return [result.reshape(*rows, b.shape[1]).astype(out_dtype, copy=False)]
        return kernel

    def kernel(inputs, _attributes, outputs):
        with np.errstate(all="ignore"):
            result = batched_gemm(inputs[0].astype(work, copy=False), b)
        return [result.astype(out_dtype, copy=False)]
    return kernel


def _matmul_computed(node: Node):
    """§8.9.35 matmul of two float32 values computed at run time (attention's q kᵀ and
    p v) in the C kernels: every matrix of the broadcast batch (every head) in one call
    (kernels gemm_batch: one GEMM per matrix, in C), into the plan's buffer, with an
    activation (e.g. attention's scale, fusion.py) in the epilogue. A right operand whose
    rows are not contiguous (kᵀ, a transpose of a view) is laid out per matrix by the C
    strided copy (kernels.c copy_2d) instead of numpy's. The output may be given
    transposed (`out` any view with unit column stride: a following transpose that keeps
    the last axis is then free, fusion.py)."""
    a_value, b_value = node.inputs
    out_desc = node.outputs[0].descriptor
    fast = kernels.simd()
    if out_desc.type.numpy != _F32 or fast is None or out_desc.element_count == 0:
        return None
    shape = out_desc.shape
    batch = shape[:-2]

    def run(a, b, out, clamp):
        if a.shape[:-2] != batch:
            a = np.broadcast_to(a, batch + a.shape[-2:])
        if b.shape[:-2] != batch:
            b = np.broadcast_to(b, batch + b.shape[-2:])
        return fast.gemm_batch(a, b, out, clamp)

    def make(bias, residual_at, clamp=None):
        if bias is not None or residual_at is not None:
            return None

        def kernel(inputs, _attributes, _outputs, out=None):
            out = np.empty(shape, _F32) if out is None else out
            return [run(inputs[0], inputs[1], out, clamp)]
        kernel.writes_into = kernel.replayable = True
        kernel.strided_out = True
        return kernel
    kernel = make(None, None)
    kernel.epilogue = make
    return kernel


def _constants(values, constant_of):
    """The arrays of `values` (None stays None), or None if one of them is not a constant."""
    arrays = []
    for value in values:
        array = None if value is None else constant_of(value)
        if value is not None and array is None:
            return None
        arrays.append(array)
    return arrays


def _recurrent(runner: Callable, states: int):
    """§8.9.33 lstm (runner lstm_runner, 2 states) / §8.9.25 gru (gru_runner, 1 state) with
    constant weights, biases and peepholes: laid out for the C sequence loop once; the
    initial states (the node's last operands) may be graph inputs. The runner returns views of
    its own memory, which its next run overwrites: a plan's step results are read within the
    run, and every output the plan hands out is copied (into dispatch()'s tensors, or by
    execute()'s _results, which copies views); a fused stage working in place on one (a gru's
    only output) changes memory that every run writes in full again."""
    def make(node: Node, constant_of):
        x, parameters = node.inputs[0], node.inputs[1:len(node.inputs) - states]
        arrays = _constants(parameters, constant_of)
        if arrays is None or x.descriptor.type.numpy != _F32:
            return None
        run = runner(*arrays, node.attributes, views=True)
        if run is None:
            return None
        first_state = len(node.inputs) - states
        return lambda inputs, _attributes, _outputs: run(inputs[0], *inputs[first_state:])
    return make


def _into_buffer(shape: tuple, compute: Callable) -> Callable:
    """A float32 kernel whose result `compute(inputs, out)` writes into `out`: the plan's buffer,
    or a fresh array of `shape` without one. Marked `replayable`: the specialisations built on it
    make only C kernel calls on their inputs, `out` and arrays they hold (a numpy branch calls
    kernels.untraceable()), so runtime/replay.py may bind them."""
    def kernel(inputs, _attributes, _outputs, out=None):
        return [compute(inputs, np.empty(shape, _F32) if out is None else out)]
    kernel.writes_into = kernel.replayable = True
    return kernel


def _pool_nhwc(node: Node):
    """(the C kernels, input shape) for a float32 NHWC pooling node, else None."""
    x = node.inputs[0].descriptor
    if node.attributes["layout"] != "nhwc" or x.type.numpy != _F32 or x.element_count == 0:
        return None
    fast = kernels.simd()
    return None if fast is None else (fast, x.shape)


def _max_pool(node: Node, constant_of):
    """§8.9.37 maxPool2d on NHWC float32 (the layout pass's channels-last stacks) in one C
    pass (kernels.c maxpool_nhwc), the numpy kernel's maxima in its order, into the plan's
    buffer; the numpy kernel goes through NCHW, a padded copy and back."""
    found = _pool_nhwc(node)
    if found is None:
        return None
    fast, _ = found
    attributes = node.attributes
    shape = node.outputs[0].descriptor.shape
    pads = (attributes["padding"][0], attributes["padding"][2])

    return _into_buffer(shape, lambda inputs, out: fast.maxpool_nhwc(
        np.ascontiguousarray(inputs[0]), attributes["windowDimensions"], attributes["strides"],
        attributes["dilations"], pads, out))


def _average_pool(node: Node, constant_of):
    """Global averagePool2d on NHWC float32 (a classifier's head, a squeeze-excitation's
    squeeze) in one C pass: the rows summed in numpy's order, divided once."""
    found = _pool_nhwc(node)
    if found is None:
        return None
    fast, (_, h, w, _) = found
    attributes = node.attributes
    if (list(attributes["windowDimensions"]) != [h, w] or any(attributes["padding"])
            or list(attributes["outputSizes"]) != [1, 1]):
        return None
    shape = node.outputs[0].descriptor.shape

    return _into_buffer(shape, lambda inputs, out: fast.global_avgpool_nhwc(np.ascontiguousarray(inputs[0]), out))


def _channel_scale(node: Node, constant_of):
    """mul (§8.9.13, element-wise binary) of a float32 [n, h, w, c] value by a computed [n, 1, 1, c] one (either side;
    a squeeze-excitation block's scale in a channels-last stack) in one C pass
    (kernels.c scale_channels_f32: the same float32 products numpy's broadcast makes)."""
    a, b = node.inputs
    out = node.outputs[0].descriptor
    if out.type.numpy != _F32 or out.rank != 4 or constant_of(a) is not None or constant_of(b) is not None:
        return None
    n, _, _, c = out.shape
    big = next((i for i, v in enumerate((a, b)) if v.descriptor.shape == out.shape), None)
    if big is None or (a, b)[1 - big].descriptor.shape != (n, 1, 1, c) or out.shape[1] * out.shape[2] == 1:
        return None
    fast = kernels.simd()
    if fast is None:
        return None

    return _into_buffer(out.shape, lambda inputs, into: fast.scale_channels(
        np.ascontiguousarray(inputs[big]), np.ascontiguousarray(inputs[1 - big]).reshape(n, c), into))


def _transpose(node: Node, constant_of):
    """§8.9.54 transpose of a float32 rank-4 value between NCHW and NHWC (the layout
    pass's borders: a CNN's input image; attention's kᵀ, [1, s, h, d] → [1, h, d, s]) into
    the plan's buffer by one C pass per batch (kernels.c copy_2d: for batch 1 these are the
    2-D transposes [C, H W] ↔ [H W, C]), where numpy's strided copy of the view, made later
    by whatever needs it contiguous, costs ~10 ns an element in Pyodide. A value whose
    merged axes are not evenly strided is copied by numpy."""
    permutation = tuple(node.attributes["permutation"])
    x = node.inputs[0].descriptor
    fast = kernels.simd()
    if (x.type.numpy != _F32 or x.rank != 4 or permutation not in ((0, 2, 3, 1), (0, 3, 1, 2))
            or x.element_count == 0 or fast is None):
        return None
    batches, d1, d2, d3 = x.shape
    to_last = permutation == (0, 2, 3, 1)
    rows, cols = (d1, d2 * d3) if to_last else (d1 * d2, d3)
    shape = node.outputs[0].descriptor.shape

    def matrix(part):
        """part [d1, d2, d3] as the [rows, cols] view the permutation transposes, or None."""
        s1, s2, s3 = part.strides
        if to_last and s2 == d3 * s3:
            return np.lib.stride_tricks.as_strided(part, (rows, cols), (s1, s3))
        if not to_last and s1 == d2 * s2:
            return np.lib.stride_tricks.as_strided(part, (rows, cols), (s2, s3))
        return None

    def transposed(inputs, out):
        x = inputs[0]
        for n in range(batches):
            source = matrix(x[n])
            if source is None:
                kernels.untraceable()
                out[n] = x[n].transpose(np.subtract(permutation[1:], 1))
            else:
                fast.copy_2d(source.T, out[n].reshape(cols, rows))
        return out
    return _into_buffer(shape, transposed)


def _softmax(node: Node, constant_of):
    """§8.9.48 softmax of float32 along the last axis (attention's scores) by the C row kernel
    (kernels.c softmax_rows_f32: the registered kernel's float64 method) into the plan's buffer,
    its working row in the kernels' scratch: nothing allocated per run, so a plan's replay
    can make the call again (runtime/replay.py)."""
    x = node.inputs[0].descriptor
    fast = kernels.simd()
    if x.type.numpy != _F32 or node.attributes["axis"] not in (-1, x.rank - 1) or fast is None:
        return None
    return _into_buffer(node.outputs[0].descriptor.shape,
                        lambda inputs, out: fast.softmax_rows(np.ascontiguousarray(inputs[0]), out))


def _layer_normalization(node: Node, constant_of):
    """§8.9.30 layerNormalization of float32 over the last axis with constant (or no) scale
    and bias (a transformer's) by the C row kernel (kernels.c layernorm_rows_f32: the
    registered kernel's float64 method), scale and bias laid out once, into the plan's buffer."""
    x, scale, bias = node.inputs
    attributes = node.attributes
    fast = kernels.simd()
    if (x.descriptor.type.numpy != _F32 or x.descriptor.rank == 0 or tuple(attributes["axes"]) != (x.descriptor.rank - 1,)
            or fast is None):
        return None
    vectors = _constants((scale, bias), constant_of)
    if vectors is None:
        return None
    scale_vector, bias_vector = (None if v is None else np.ascontiguousarray(v, _F32) for v in vectors)
    epsilon = float(np.float32(attributes["epsilon"]))
    return _into_buffer(node.outputs[0].descriptor.shape, lambda inputs, out: fast.layernorm_rows(
        np.ascontiguousarray(inputs[0]), scale_vector, bias_vector, epsilon, out))


_SPECIALISERS = {"conv2d": _conv2d, "transpose": _transpose, "gemm": _gemm, "matmul": _matmul, "lstm": _recurrent(lstm_runner, 2),
                 "gru": _recurrent(gru_runner, 1), "loop": fused_recurrent_loop,
                 "maxPool2d": _max_pool, "averagePool2d": _average_pool, "mul": _channel_scale,
                 "softmax": _softmax, "layerNormalization": _layer_normalization}
