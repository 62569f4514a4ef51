"""ONNX graphs → MLGraphBuilder calls, for the benchmark zoo's host side (bench only).

The zoo's ONNX files run in the browser through ONNX Runtime Web's WebNN EP; on the
host there is no such EP, so this translates the same graphs into builder calls
itself: the operators the zoo's exports contain, each to the WebNN operator ORT's
WebNN EP uses for it. Shapes are static (the exporter fixes them); shape operands
(Reshape's shape, Split's sizes, Squeeze's axes, Clip's bounds) must be constants.
Anything else raises NotSupported naming the node.
"""
from __future__ import annotations

import numpy as np


class NotSupported(Exception):
    pass


def _attributes(node) -> dict:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _pads(pads, rank=2):
    """ONNX [x1_begin, x2_begin, x1_end, x2_end] → WebNN [x1_begin, x1_end, x2_begin, x2_end]."""
    pads = list(pads or [0] * 2 * rank)
    return [v for i in range(rank) for v in (pads[i], pads[i + rank])]


def emit_onnx(path, builder) -> dict:
    """Record every node of the ONNX file at `path` on `builder`; returns {output name: MLOperand}."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path)).graph
    constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    values: dict = {}
    for tensor in graph.input:
        if tensor.name in constants:
            continue
        shape = [d.dim_value for d in tensor.type.tensor_type.shape.dim]
        values[tensor.name] = builder.input(tensor.name, {"dataType": "float32", "shape": shape})

    def const(name):
        if name not in constants:
            raise NotSupported(f"{name} must be a constant")
        return constants[name]

    def operand(name):
        if name not in values:
            array = np.ascontiguousarray(const(name), np.float32)
            values[name] = builder.constant({"dataType": "float32", "shape": list(array.shape)}, array)
        return values[name]

    for node in graph.node:
        a = _attributes(node)
        ins = list(node.input)
        label = {"label": node.name or node.op_type}
        kind = node.op_type
        if kind == "Constant":
            constants[node.output[0]] = numpy_helper.to_array(a["value"])
            continue
        out = _translate(kind, a, ins, node, builder, operand, const, label)
        if not isinstance(out, (list, tuple)):
            out = [out]
        for name, value in zip(node.output, out):
            if name:
                values[name] = value
    return {o.name: values[o.name] for o in graph.output}


_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div"}
_UNARY = {"Relu": "relu", "Sigmoid": "sigmoid", "Erf": "erf", "HardSwish": "hardSwish", "Tanh": "tanh",
          "Identity": "identity"}


def _translate(kind, a, ins, node, builder, operand, const, label):
    if kind in _BINARY:
        return getattr(builder, _BINARY[kind])(operand(ins[0]), operand(ins[1]), label)
    if kind in _UNARY:
        return getattr(builder, _UNARY[kind])(operand(ins[0]), label)
    if kind == "Conv":
        options = {**label, "strides": a.get("strides", [1, 1]), "dilations": a.get("dilations", [1, 1]),
                   "padding": _pads(a.get("pads")), "groups": a.get("group", 1)}
        if len(ins) > 2 and ins[2]:
            options["bias"] = operand(ins[2])
        return builder.conv2d(operand(ins[0]), operand(ins[1]), options)
    if kind == "Clip":
        low = float(const(ins[1])) if len(ins) > 1 and ins[1] else float("-inf")
        high = float(const(ins[2])) if len(ins) > 2 and ins[2] else float("inf")
        return builder.clamp(operand(ins[0]), {**label, "minValue": low, "maxValue": high})
    if kind == "HardSigmoid":
        return builder.hardSigmoid(operand(ins[0]), {**label, "alpha": a.get("alpha", 0.2), "beta": a.get("beta", 0.5)})
    if kind == "GlobalAveragePool":
        return builder.averagePool2d(operand(ins[0]), label)
    if kind == "MaxPool":
        return builder.maxPool2d(operand(ins[0]), {
            **label, "windowDimensions": a["kernel_shape"], "strides": a.get("strides", [1, 1]),
            "dilations": a.get("dilations", [1, 1]), "padding": _pads(a.get("pads")),
            "outputShapeRounding": "ceil" if a.get("ceil_mode") else "floor"})
    if kind in ("Flatten", "Reshape", "Squeeze"):
        x = operand(ins[0])
        shape = list(x.shape)
        if kind == "Flatten":
            axis = a.get("axis", 1)
            target = [int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))]
        elif kind == "Squeeze":
            axes = [ax % len(shape) for ax in const(ins[1]).tolist()]
            target = [d for i, d in enumerate(shape) if i not in axes]
        else:
            target = [shape[i] if d == 0 else int(d) for i, d in enumerate(const(ins[1]).tolist())]
            if -1 in target:
                known = int(np.prod([d for d in target if d != -1]))
                target[target.index(-1)] = int(np.prod(shape)) // known
        return builder.reshape(x, target, label)
    if kind == "Transpose":
        return builder.transpose(operand(ins[0]), {**label, "permutation": list(a["perm"])})
    if kind == "Concat":
        return builder.concat([operand(i) for i in ins], a["axis"] % len(operand(ins[0]).shape), label)
    if kind == "Split":
        x = operand(ins[0])
        axis = a.get("axis", 0) % len(x.shape)
        sizes = [int(s) for s in const(ins[1])] if len(ins) > 1 and ins[1] else len(node.output)
        return builder.split(x, sizes, {**label, "axis": axis})
    if kind == "Softmax":
        x = operand(ins[0])
        return builder.softmax(x, a.get("axis", -1) % len(x.shape), label)
    if kind == "MatMul":
        return builder.matmul(operand(ins[0]), operand(ins[1]), label)
    if kind == "Gemm":
        options = {**label, "alpha": a.get("alpha", 1.0), "beta": a.get("beta", 1.0),
                   "aTranspose": bool(a.get("transA", 0)), "bTranspose": bool(a.get("transB", 0))}
        if len(ins) > 2 and ins[2]:
            options["c"] = operand(ins[2])
        return builder.gemm(operand(ins[0]), operand(ins[1]), options)
    if kind == "LayerNormalization":
        x = operand(ins[0])
        axis = a.get("axis", -1) % len(x.shape)
        options = {**label, "axes": list(range(axis, len(x.shape))), "epsilon": a.get("epsilon", 1e-5),
                   "scale": operand(ins[1])}
        if len(ins) > 2 and ins[2]:
            options["bias"] = operand(ins[2])
        return builder.layerNormalization(x, options)
    if kind in ("LSTM", "GRU"):
        return _recurrent(kind, a, ins, node, builder, operand, const, label)
    raise NotSupported(f"ONNX {kind} ({node.name}) has no translation here")


def _recurrent(kind, a, ins, node, builder, operand, const, label):
    """ONNX LSTM (gates i o f c) / GRU (gates z r h) → WebNN lstm ("iofg") / gru ("zrn");
    ONNX's B is [W_b, R_b] along its last axis: WebNN's bias and recurrentBias."""
    gates = 4 if kind == "LSTM" else 3
    hidden = a["hidden_size"]
    onnx_direction = a.get("direction", b"forward")
    if isinstance(onnx_direction, bytes):
        onnx_direction = onnx_direction.decode()
    direction = {"forward": "forward", "reverse": "backward", "bidirectional": "both"}[onnx_direction]
    x = operand(ins[0])
    steps = x.shape[0]
    options = {**label, "direction": direction, "returnSequence": True}
    if len(ins) > 3 and ins[3]:
        b = const(ins[3])
        options["bias"] = builder.constant({"dataType": "float32", "shape": [b.shape[0], gates * hidden]},
                                           np.ascontiguousarray(b[:, :gates * hidden], np.float32))
        options["recurrentBias"] = builder.constant({"dataType": "float32", "shape": [b.shape[0], gates * hidden]},
                                                    np.ascontiguousarray(b[:, gates * hidden:], np.float32))
    if len(ins) > 4 and ins[4]:
        raise NotSupported(f"{node.name}: sequence_lens")
    if len(ins) > 5 and ins[5]:
        options["initialHiddenState"] = operand(ins[5])
    if kind == "LSTM":
        if len(ins) > 6 and ins[6]:
            options["initialCellState"] = operand(ins[6])
        if len(ins) > 7 and ins[7]:
            options["peepholeWeight"] = operand(ins[7])
        hidden_state, cell, sequence = builder.lstm(x, operand(ins[1]), operand(ins[2]), steps, hidden,
                                                    {**options, "layout": "iofg"})
        return [sequence, hidden_state, cell]
    options.update(layout="zrn", resetAfter=bool(a.get("linear_before_reset", 0)))
    hidden_state, sequence = builder.gru(x, operand(ins[1]), operand(ins[2]), steps, hidden, options)
    return [sequence, hidden_state]
