"""MatMul, the 2-D convolutions (Convolution, GroupConvolution and their
BackpropData forms) and pooling (MaxPool, AvgPool, AdaptiveAvg/MaxPool) onto
WebNN's matmul, conv2d, convTranspose2d and pool2d operators."""
from __future__ import annotations

import math

import numpy as np


def _swap_last(t, x):
    rank = len(x.shape)
    order = list(range(rank - 2)) + [rank - 1, rank - 2]
    return t.b.transpose(x, {"permutation": order})


def matmul(t, inputs):
    t.arity(inputs, 2)
    a, b = (t.operand(v) for v in inputs)
    a_vector, b_vector = len(a.shape) == 1, len(b.shape) == 1
    # MatMul-1: transposes apply to 2-D+ inputs; a 1-D input is a row (a) or a
    # column (b) vector, and its unit dimension is dropped from the result.
    if a_vector:
        a = t.b.reshape(a, [1, a.shape[0]])
    elif t.attr_flag("transpose_a"):
        a = _swap_last(t, a)
    if b_vector:
        b = t.b.reshape(b, [b.shape[0], 1])
    elif t.attr_flag("transpose_b"):
        b = _swap_last(t, b)
    out = t.b.matmul(a, b)
    if a_vector or b_vector:
        shape = list(out.shape)
        if b_vector:
            shape.pop(-1)
        if a_vector:
            shape.pop(-2 if not b_vector else -1)
        out = t.b.reshape(out, shape)
    return [out]


def spatial_padding(t, sizes, kernels, strides, dilations, *, transposed=False) -> list[int]:
    """WebNN's [begin_h, end_h, begin_w, end_w] from the layer's auto_pad,
    pads_begin and pads_end (the convolution and pooling attributes). same_upper
    / same_lower give ceil(input / stride) outputs, the odd padding at the end
    (upper) or the beginning (lower); valid pads nothing."""
    n = len(sizes)
    begin = t.attr_ints("pads_begin", [0] * n)
    end = t.attr_ints("pads_end", [0] * n)
    if len(begin) != n or len(end) != n:
        raise t.malformed(f"pads_begin {begin} and pads_end {end} need {n} items each")
    auto_pad = t.layer.data.get("auto_pad", "explicit").lower()
    if auto_pad == "valid":
        begin, end = [0] * n, [0] * n
    elif auto_pad in ("same_upper", "same_lower") and not transposed:
        begin, end = [], []
        for size, kernel, stride, dilation in zip(sizes, kernels, strides, dilations):
            total = max((math.ceil(size / stride) - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
            small = total // 2
            begin.append(small if auto_pad == "same_upper" else total - small)
            end.append(total - begin[-1])
    elif auto_pad not in ("explicit", "notset", "same_upper", "same_lower"):
        raise t.malformed(f"auto_pad {auto_pad!r} is not one of explicit, valid, same_upper, same_lower")
    if any(v < 0 for v in begin + end):
        raise t.malformed(f"pads_begin {begin} / pads_end {end} are negative")
    return [v for pair in zip(begin, end) for v in pair]


def _window_attributes(t, rank: int):
    strides = t.attr_ints("strides", [1] * rank)
    dilations = t.attr_ints("dilations", [1] * rank)
    if len(strides) != rank or len(dilations) != rank:
        raise t.malformed(f"strides {strides} and dilations {dilations} need {rank} items each")
    return strides, dilations


def _filter(t, value, shape: list[int]):
    """A filter reshaped (folded when it is a constant)."""
    if isinstance(value, np.ndarray):
        return t.operand(value.reshape(shape))
    return t.b.reshape(t.operand(value), shape)


def _data_and_filter(t, inputs):
    """(x, filter operand, filter shape as WebNN sees it, groups): a Group*
    layer's filter [G, a, b, kH, kW] becomes [G a, b, kH, kW] with G groups."""
    x = t.operand(inputs[0])
    w_shape = list(t.shape(inputs[1]))
    groups = 1
    if t.layer.type.startswith("Group"):
        if len(w_shape) != 5:
            raise t.unsupported(f"only 2-D {t.layer.type} is supported (filter rank {len(w_shape)})")
        groups = w_shape[0]
        w_shape = [w_shape[0] * w_shape[1]] + w_shape[2:]
    if len(x.shape) != 4 or len(w_shape) != 4:
        raise t.unsupported(f"only 2-D {t.layer.type} is supported (input rank {len(x.shape)}, filter rank "
                            f"{len(w_shape)})")
    return x, _filter(t, inputs[1], w_shape), w_shape, groups


def convolution(t, inputs):
    """Convolution-1 (filter [C_out, C_in, kH, kW]) and GroupConvolution-1
    (filter [G, C_out/G, C_in/G, kH, kW], reshaped to WebNN's grouped oihw)."""
    t.arity(inputs, 2)
    x, w, w_shape, groups = _data_and_filter(t, inputs)
    strides, dilations = _window_attributes(t, 2)
    padding = spatial_padding(t, x.shape[2:], w_shape[2:], strides, dilations)
    return [t.b.conv2d(x, w, {"padding": padding, "strides": strides, "dilations": dilations, "groups": groups,
                              "inputLayout": "nchw", "filterLayout": "oihw"})]


def convolution_backprop_data(t, inputs):
    """ConvolutionBackpropData-1 (filter [C_in, C_out, kH, kW]) and
    GroupConvolutionBackpropData-1 ([G, C_in/G, C_out/G, kH, kW]) onto
    convTranspose2d (iohw). Output size s (in - 1) + (k - 1) d + 1 - pads +
    output_padding; with an output_shape input, the padding is what that size
    leaves over, split evenly; an odd one is cropped from the beginning,
    except with same_lower (at the end), as OpenVINO's CPU plugin does (the
    operation's text does not say)."""
    t.arity(inputs, 2, 3)
    x, w, w_shape, groups = _data_and_filter(t, inputs)
    strides, dilations = _window_attributes(t, 2)
    output_padding = t.attr_ints("output_padding", [0, 0])
    padding = spatial_padding(t, x.shape[2:], w_shape[2:], strides, dilations, transposed=True)
    options = {"strides": strides, "dilations": dilations, "groups": groups, "filterLayout": "iohw"}
    if len(inputs) == 3:
        sizes = t.ints(inputs[2], "output_shape")
        if len(sizes) != 2:
            raise t.malformed(f"output_shape {sizes} needs 2 items")
        lower = t.layer.data.get("auto_pad", "explicit").lower() == "same_lower"
        padding = []
        for i in range(2):
            full = strides[i] * (x.shape[2 + i] - 1) + (w_shape[2 + i] - 1) * dilations[i] + 1 + output_padding[i]
            total = full - sizes[i]
            if total < 0:
                raise t.unsupported(f"output_shape {sizes} is larger than the deconvolution produces")
            small = total // 2
            padding += [small, total - small] if lower else [total - small, small]
        options["outputSizes"] = sizes
    else:
        options["outputPadding"] = output_padding
    options["padding"] = padding
    return [t.b.convTranspose2d(x, w, options)]


# -- pooling ----------------------------------------------------------------------------------------

def _as_2d(t, x):
    """Pooling of a 3-D input (one spatial axis) runs as 2-D over [N, C, 1, W]."""
    rank = len(x.shape)
    if rank == 4:
        return x, lambda y: y, 2
    if rank == 3:
        n, c, w = x.shape
        return t.b.reshape(x, [n, c, 1, w]), lambda y: t.b.reshape(y, [y.shape[0], y.shape[1], y.shape[3]]), 1
    raise t.unsupported(f"only 1-D and 2-D pooling is supported (input rank {rank})")


def _pool_geometry(t, x, rank: int):
    """(window, strides, dilations, padding, output sizes) of MaxPool-1/8/14 and
    AvgPool-1/14 for the 2-D input x, in OpenVINO's terms: rounding_type floor,
    ceil, or ceil_torch (ceil, except that a window starting past the input and
    its beginning padding is dropped). `rank` is the layer's own number of
    spatial axes (1 when x is a 3-D input made 2-D)."""
    kernel = t.attr_ints("kernel")
    strides, dilations = _window_attributes(t, rank) if "dilations" in t.layer.data else \
        (t.attr_ints("strides", [1] * rank), [1] * rank)
    if len(kernel) != rank or len(strides) != rank:
        raise t.malformed(f"kernel {kernel} and strides {strides} need {rank} items each")
    if rank == 1:
        kernel, strides, dilations = [1] + kernel, [1] + strides, [1] + dilations
        pad_1d = spatial_padding(t, x.shape[3:], kernel[1:], strides[1:], dilations[1:])
        padding = [0, 0] + pad_1d
    else:
        padding = spatial_padding(t, x.shape[2:], kernel, strides, dilations)
    rounding = t.layer.data.get("rounding_type", "floor").lower()
    if rounding not in ("floor", "ceil", "ceil_torch"):
        raise t.malformed(f"rounding_type {rounding!r} is not floor, ceil or ceil_torch")
    sizes = []
    for i in range(2):
        size, begin, end = x.shape[2 + i], padding[2 * i], padding[2 * i + 1]
        span = size + begin + end - ((kernel[i] - 1) * dilations[i] + 1)
        if span < 0:
            raise t.malformed(f"the window {kernel} does not fit the padded input {list(x.shape)}")
        out = (-(-span // strides[i]) if rounding != "floor" else span // strides[i]) + 1
        if rounding == "ceil_torch" and (out - 1) * strides[i] >= size + begin:
            out -= 1
        sizes.append(out)
    return kernel, strides, dilations, padding, sizes


def _unused_output(t, index: int) -> None:
    """Fails when output port `index` of the layer feeds anything."""
    port = t.layer.outputs[index].id
    if any(source == (t.layer.id, port) for source in t.graph.sources.values()):
        raise t.unsupported(f"output {index} (the indices) is used; WebNN pooling does not give indices")


def max_pool(t, inputs):
    """MaxPool-1/8/14; the indices output of -8/-14 must be unused."""
    t.arity(inputs, 1)
    x, back, rank = _as_2d(t, t.operand(inputs[0]))
    window, strides, dilations, padding, sizes = _pool_geometry(t, x, rank)
    out = back(t.b.maxPool2d(x, {"windowDimensions": window, "strides": strides, "dilations": dilations,
                                 "padding": padding, "outputSizes": sizes}))
    if len(t.layer.outputs) > 1:
        _unused_output(t, 1)
        return [out] + [None] * (len(t.layer.outputs) - 1)
    return [out]


def avg_pool(t, inputs):
    """AvgPool-1/14: exclude-pad true is WebNN's averagePool2d (which divides by
    the taps inside the input); exclude-pad false divides every window by the
    kernel's size, so the input is padded with zeros first, far enough that
    every window (ceil rounding included) lies inside."""
    t.arity(inputs, 1)
    x, back, rank = _as_2d(t, t.operand(inputs[0]))
    window, strides, dilations, padding, sizes = _pool_geometry(t, x, rank)
    exclude = t.attr_flag("exclude-pad")
    if not exclude:
        ends = []
        for i in range(2):
            reach = (sizes[i] - 1) * strides[i] + window[i]
            ends.append(max(padding[2 * i + 1], reach - x.shape[2 + i] - padding[2 * i]))
        if any(padding[0::2]) or any(ends):
            x = t.b.pad(x, [0, 0, padding[0], padding[2]], [0, 0, ends[0], ends[1]])
        padding = [0, 0, 0, 0]
    return [back(t.b.averagePool2d(x, {"windowDimensions": window, "strides": strides, "padding": padding,
                                       "outputSizes": sizes}))]


def adaptive_pool(t, inputs):
    """AdaptiveAvgPool-8 / AdaptiveMaxPool-8. Bin i of an axis spans
    [floor(i in / out), ceil((i + 1) in / out)). Where every input size is a
    multiple of its output size the bins are one strided window; otherwise
    average pooling is a product with a constant averaging matrix per axis
    (bins of different sizes), and max pooling is not supported."""
    t.arity(inputs, 2)
    x, back, _ = _as_2d(t, t.operand(inputs[0]))
    wanted = t.ints(inputs[1], "output_shape")
    spatial = list(x.shape[2:])
    if len(wanted) == 1 and len(t.shape(inputs[0])) == 3:
        wanted = [1] + wanted
    if len(wanted) != 2:
        raise t.malformed(f"output_shape {wanted} does not match the input's spatial rank")
    if any(o < 1 for o in wanted):
        raise t.malformed(f"output_shape {wanted} has a size below 1")
    t.check_extent(list(x.shape[:2]) + wanted, "the output shape")
    if any(i % o for i, o in zip(spatial, wanted)) and t.layer.type == "AdaptiveAvgPool":
        return [back(_adaptive_average(t, x, spatial, wanted))]
    if any(i % o for i, o in zip(spatial, wanted)):
        raise t.unsupported(f"adaptive pooling of {spatial} to {wanted}: only sizes that divide the input's "
                            "are supported")
    window = [i // o for i, o in zip(spatial, wanted)]
    options = {"windowDimensions": window, "strides": window}
    if t.layer.type == "AdaptiveAvgPool":
        return [back(t.b.averagePool2d(x, options))]
    _unused_output(t, 1)
    return [back(t.b.maxPool2d(x, options)), None]


def _adaptive_average(t, x, spatial, wanted):
    """Adaptive average pooling of NCHW x: A_h @ x @ A_w^T, A's rows the bins' weights."""
    def bins(size, out):
        matrix = np.zeros((out, size), np.dtype(x.dataType))
        for i in range(out):
            low, high = (i * size) // out, -(-((i + 1) * size) // out)
            matrix[i, low:high] = 1 / (high - low)
        return matrix
    rows = t.b.matmul(t.operand(bins(spatial[0], wanted[0])), x)
    return t.b.matmul(rows, t.operand(np.ascontiguousarray(bins(spatial[1], wanted[1]).T)))


def extract_image_patches(t, inputs):
    """ExtractImagePatches-3: every sizes[0] x sizes[1] patch (strides, rates =
    dilations, auto_pad valid or same_*) as channels, in (row, column,
    channel) order: a grouped conv2d with one-hot filters (each output is one
    input element times 1 plus zeros: exact) gives (channel, row, column),
    which a reshape and transpose reorder."""
    t.arity(inputs, 1)
    x = t.operand(inputs[0])
    if len(x.shape) != 4 or x.dataType not in ("float32", "float16"):
        raise t.unsupported(f"ExtractImagePatches of a rank-{len(x.shape)} {x.dataType} tensor is not supported "
                            "(4-D floats)")
    sizes, strides, rates = t.attr_ints("sizes"), t.attr_ints("strides"), t.attr_ints("rates")
    if not len(sizes) == len(strides) == len(rates) == 2 or min(sizes + strides + rates) < 1:
        raise t.malformed(f"sizes {sizes}, strides {strides} and rates {rates} need 2 positive items each")
    n, c, h, w = x.shape
    patch = sizes[0] * sizes[1]
    t.check_extent([c * patch, 1] + sizes, "the patch filter")
    padding = spatial_padding(t, [h, w], sizes, strides, rates)
    filters = t.operand(_one_hot_patches(c, sizes, x.dataType))
    out = t.b.conv2d(x, filters, {"padding": padding, "strides": strides, "dilations": rates, "groups": c})
    oh, ow = out.shape[2:]
    moved = t.b.transpose(t.b.reshape(out, [n, c, patch, oh, ow]), {"permutation": [0, 2, 1, 3, 4]})
    return [t.b.reshape(moved, [n, patch * c, oh, ow])]


def _one_hot_patches(channels: int, kernel: list[int], dtype: str) -> np.ndarray:
    """Filters [channels * kh * kw, 1, kh, kw]: filter c * kh * kw + (i kw + j) picks tap (i, j)."""
    patch = kernel[0] * kernel[1]
    one_hot = np.zeros((channels, patch, 1, patch), np.dtype(dtype))
    one_hot[:, np.arange(patch), 0, np.arange(patch)] = 1
    return one_hot.reshape(channels * patch, 1, kernel[0], kernel[1])


def col2im(t, inputs):
    """Col2Im-15: the columns [N, C kh kw, L] of ExtractImagePatches' kind
    (torch's fold order: channel, then tap) summed back into [N, C, H, W]: a
    grouped convTranspose2d of the columns as [N, C kh kw, oh, ow] with the
    same one-hot filters."""
    t.arity(inputs, 3)
    x = t.operand(inputs[0])
    size, kernel = t.ints(inputs[1], "output_size"), t.ints(inputs[2], "kernel_size")
    batched = len(x.shape) == 3
    if len(x.shape) not in (2, 3) or len(size) != 2 or len(kernel) != 2 or min(size + kernel) < 1:
        raise t.malformed(f"data {list(x.shape)}, output_size {size} and kernel_size {kernel} do not fit")
    if x.dataType not in ("float32", "float16"):
        raise t.unsupported(f"Col2Im of {x.dataType} is not supported (floats only)")
    strides, dilations = _window_attributes(t, 2)
    padding = spatial_padding(t, size, kernel, strides, dilations)
    counts = [(size[k] + padding[2 * k] + padding[2 * k + 1] - (dilations[k] * (kernel[k] - 1) + 1)) // strides[k] + 1
              for k in range(2)]
    n = x.shape[0] if batched else 1
    rows, columns = x.shape[-2:]
    patch = kernel[0] * kernel[1]
    if rows % patch or columns != counts[0] * counts[1] or min(counts) < 1:
        raise t.malformed(f"data {list(x.shape)} is not C * {patch} rows of {counts[0]} x {counts[1]} blocks")
    t.check_extent([rows, 1] + kernel, "the patch filter")
    channels = rows // patch
    blocks = t.b.reshape(x, [n, rows, counts[0], counts[1]])
    out = t.b.convTranspose2d(blocks, t.operand(_one_hot_patches(channels, kernel, x.dataType)),
                              {"padding": padding, "strides": strides, "dilations": dilations, "groups": channels,
                               "outputSizes": size, "filterLayout": "iohw"})
    return [out if batched else t.b.reshape(out, [channels] + size)]


TRANSLATORS = {"MatMul": matmul, "Convolution": convolution, "GroupConvolution": convolution,
               "ConvolutionBackpropData": convolution_backprop_data,
               "GroupConvolutionBackpropData": convolution_backprop_data,
               "MaxPool": max_pool, "AvgPool": avg_pool, "AdaptiveAvgPool": adaptive_pool,
               "AdaptiveMaxPool": adaptive_pool, "ExtractImagePatches": extract_image_patches, "Col2Im": col2im}
