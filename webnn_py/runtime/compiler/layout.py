"""Layout, decided once: channels-last inside convolutional stacks.

WebNN's default layout is NCHW, and models arrive in it (ONNX-style exports,
bench/models.py). numpy computes a depthwise convolution much faster on NHWC
data: each of the kh*kw taps multiplies rows whose innermost axis is the long,
contiguous channel axis, where NCHW gives short strided rows (7 or 14 elements
deep in a MobileNet). Pointwise convolutions are one GEMM either way.

The C kernels (webnn_py.kernels) have the same preference: their im2col and
depthwise paths, and the epilogues that take a convolution's bias, residual add and
activation, are NHWC only.

So, when a graph has a depthwise, grouped or spatial (im2col) conv2d in NCHW, this pass
rewrites it, any other conv2d whose input is no larger than its output (a stem
convolution), and everything layout-agnostic downstream of them to NHWC: conv2d
(inputLayout "nhwc"; the filter keeps its layout, specialise.py lays it out once),
pooling (layout "nhwc"), element-wise operations whose operands are NHWC values (of
the output's shape or broadcast to it, as a squeeze-excitation block's per-channel
scale), single elements or constants (re-laid out once, here), and concat of NHWC
values (along the permuted axis: SqueezeNet's fire modules). A transpose to NHWC is inserted where a rewritten
conv2d reads an NCHW value, and a transpose back wherever anything else (reshape,
gemm, a graph output, ...) reads an NHWC value, so every operator still sees the
values its node describes. The nodes are new ones: the builder's graph is not
modified. Values are the same numbers in another order; only a convolution's
summation order changes, as with any choice of kernel.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ...base.datatypes import DATA_TYPES
from ...base.descriptor import OperandDescriptor
from ..ir import Node, Value
from .fusion import EPILOGUE_KINDS

_TO_NHWC = (0, 2, 3, 1)
_TO_NCHW = (0, 3, 1, 2)
_POOLS = {"averagePool2d", "maxPool2d", "l2Pool2d"}
_UNARY = EPILOGUE_KINDS - {"add", "sub", "mul", "div", "max", "min", "pow"}
_BINARY = {"add", "sub", "mul", "div", "max", "min", "pow"}


def _is_depthwise_nchw(node: Node) -> bool:
    if node.kind != "conv2d" or node.attributes["inputLayout"] != "nchw":
        return False
    channels = node.inputs[0].descriptor.shape[1]
    return node.attributes["groups"] == channels == node.outputs[0].descriptor.shape[1] and channels > 1


def _is_spatial_nchw(node: Node) -> bool:
    """An NCHW conv2d on the im2col paths: a grouped one (not depthwise), or groups 1 with a
    kernel or stride beyond 1x1."""
    if node.kind != "conv2d" or node.attributes["inputLayout"] != "nchw" or _is_depthwise_nchw(node):
        return False
    if node.attributes["groups"] != 1:
        return True
    shape = node.inputs[1].descriptor.shape
    at = {"oihw": 2, "hwio": 0, "ohwi": 1, "ihwo": 1}[node.attributes["filterLayout"]]
    return tuple(shape[at:at + 2]) != (1, 1) or list(node.attributes["strides"]) != [1, 1]


def _cheaper_in_nhwc(node: Node) -> bool:
    """A conv2d (e.g. a stem: 3 channels in, 32 out) whose input is no larger than its
    output: transposing that input costs less than transposing the output for what
    follows in NHWC, and the NHWC conv itself runs in the C kernels' im2col path."""
    return node.inputs[0].descriptor.element_count <= node.outputs[0].descriptor.element_count


def channels_last(order: list[Node], outputs: Mapping[str, Value], constant_of) -> tuple[list[Node], dict[str, Value]]:
    """The rewritten node list and graph outputs (unchanged when the pass does not apply)."""
    if not any(_is_depthwise_nchw(node) or _is_spatial_nchw(node) for node in order):
        return order, dict(outputs)

    nhwc: dict[int, Value] = {}        # id(original value) -> its NHWC twin
    current: dict[int, Value] = {}     # id(original value) -> the value now carrying it in its own layout
    back: dict[int, Value] = {}        # id(original value) -> a transpose of its NHWC twin back to NCHW
    result: list[Node] = []

    def plain(value: Value | None) -> Value | None:
        """`value` in its own (original) layout."""
        if value is None:
            return None
        if id(value) in nhwc:
            if id(value) not in back:
                back[id(value)] = _transpose(result, nhwc[id(value)], _TO_NCHW, value.descriptor)
            return back[id(value)]
        return current.get(id(value), value)

    for node in order:
        kind = node.kind
        first = node.inputs[0] if node.inputs else None
        converted = first is not None and id(first) in nhwc
        if kind == "conv2d" and node.attributes["inputLayout"] == "nchw" and (
                converted or _is_depthwise_nchw(node) or _cheaper_in_nhwc(node)):
            x = nhwc[id(first)] if converted else _transpose(result, plain(first), _TO_NHWC)
            result.append(_rewritten(node, [x] + [plain(v) for v in node.inputs[1:]],
                                     dict(node.attributes, inputLayout="nhwc"), nhwc))
        elif kind in _POOLS and node.attributes["layout"] == "nchw" and converted:
            result.append(_rewritten(node, [nhwc[id(first)]], dict(node.attributes, layout="nhwc"), nhwc))
        elif kind in _UNARY and converted and len(node.inputs) == 1:
            result.append(_rewritten(node, [nhwc[id(first)]], node.attributes, nhwc))
        elif kind == "concat" and all(id(v) in nhwc for v in node.inputs):
            axis = _TO_NHWC.index(node.attributes["axis"])
            result.append(_rewritten(node, [nhwc[id(v)] for v in node.inputs], dict(node.attributes, axis=axis), nhwc))
        elif kind in _BINARY and _binary_in_nhwc(node, nhwc, constant_of):
            inputs = [nhwc[id(v)] if id(v) in nhwc else
                      plain(v) if v.descriptor.element_count == 1 else _constant_nhwc(constant_of(v))
                      for v in node.inputs]
            result.append(_rewritten(node, inputs, node.attributes, nhwc))
        else:
            inputs = [plain(v) for v in node.inputs]
            if all(a is b for a, b in zip(inputs, node.inputs)):
                result.append(node)
            else:
                copy = Node(kind, inputs, node.attributes, node.label)
                copy.outputs = [Value(v.descriptor, producer=copy) for v in node.outputs]
                for old, new in zip(node.outputs, copy.outputs):
                    current[id(old)] = new
                result.append(copy)
    return result, {name: plain(value) for name, value in outputs.items()}


def _binary_in_nhwc(node: Node, nhwc: dict, constant_of) -> bool:
    """Every operand an NHWC value (rank 4 like the output: of its shape or broadcast to it,
    e.g. [1, C, 1, 1] scaling [1, C, H, W], which broadcasts the same way permuted), a
    single element, or a constant (e.g. a per-channel bias of shape [C, 1, 1]), which is
    re-laid out at build."""
    out_shape = node.outputs[0].descriptor.shape
    if len(out_shape) != 4 or not any(id(v) in nhwc for v in node.inputs):
        return False
    return all(id(v) in nhwc or v.descriptor.element_count == 1 or constant_of(v) is not None
               for v in node.inputs)


def _constant_nhwc(array) -> Value:
    """A constant operand of an NCHW broadcast, as the operand of the NHWC one: right-aligned
    to rank 4 (broadcasting aligns shapes on the right), then permuted like the data."""
    array = array.reshape((1,) * (4 - array.ndim) + array.shape)
    array = np.ascontiguousarray(array.transpose(_TO_NHWC))
    array.setflags(write=False)
    data_type = next(name for name, t in DATA_TYPES.items() if t.numpy == array.dtype)
    return Value(OperandDescriptor(data_type, array.shape), constant=array)


def _permuted(desc: OperandDescriptor, permutation) -> OperandDescriptor:
    return OperandDescriptor(desc.data_type, tuple(desc.shape[p] for p in permutation))


def _transpose(result: list[Node], value: Value, permutation, descriptor: OperandDescriptor | None = None) -> Value:
    node = Node("transpose", [value], {"permutation": permutation}, "(layout)")
    node.outputs = [Value(descriptor or _permuted(value.descriptor, permutation), producer=node)]
    result.append(node)
    return node.outputs[0]


def _rewritten(node: Node, inputs: list, attributes: dict, nhwc: dict) -> Node:
    copy = Node(node.kind, inputs, attributes, node.label)
    copy.outputs = [Value(_permuted(node.outputs[0].descriptor, _TO_NHWC), producer=copy)]
    nhwc[id(node.outputs[0])] = copy.outputs[0]
    return copy
