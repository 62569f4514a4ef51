"""Fusion: a float32 producer and the chain of element-wise operations that
alone consume its result become one step, e.g. conv2d + add(bias) + clamp
(MobileNet's conv, bias, relu6), matmul + add + gelu (a transformer's MLP),
add + relu, mul + add + sigmoid.

The fused step runs the producer's kernel, then applies each element-wise
operation to the producer's fresh result *in place* (numpy's `out=`), with the
same ufunc calls the operators' kernels make, so the values are bit for bit the
unfused ones; operations without an in-place form here call their registered
kernel. Only float32 is fused: for float16 every operator rounds its result,
and fusing would move those rounding points.

Where the producer is a float32 GEMM in the wasm kernel (matmul with a constant
b, a 1x1 or im2col conv2d in NHWC) or an NHWC depthwise conv2d in the C kernel
(wasm, or the native build on the host), the operations right after it -- a
constant bias add along the last axis, a residual add of the output's shape,
clamp/relu -- go into the kernel's epilogue instead (_into_epilogue): the same
float32 operations in the same order, without a numpy pass each (~10 ns an
element in Pyodide).

The fused step takes the place of the last operation of the chain (all the
chain's other operands are computed by then), and the intermediate values,
which nothing else reads, never exist as separate arrays.
"""
from __future__ import annotations

from types import GeneratorType
from typing import Callable, Mapping

import numpy as np

from ... import kernels
from ...ops import operator_kind
from ...ops.activations import clamp_into, gelu_into, relu_into
from ..ir import Node, Value

_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
           "max": np.maximum, "min": np.minimum}
# Element-wise operations with one operand whose registered kernel is applied as
# a stage (no in-place form needed: they are rarer or computed in float64).
_UNARY_GENERIC = {"gelu", "hardSwish", "elu", "leakyRelu", "hardSigmoid", "softplus", "softsign", "linear",
                  "exp", "log", "sqrt", "abs", "neg", "reciprocal", "erf", "sin", "cos", "tan", "floor",
                  "ceil", "roundEven", "sign", "identity"}
_UNARY_IN_PLACE = {"relu", "clamp", "sigmoid", "tanh"}
EPILOGUE_KINDS = set(_BINARY) | {"pow"} | _UNARY_GENERIC | _UNARY_IN_PLACE
# mul(y, sigmoid(y)) (SiLU / swish), taken as one unit reading y once (_silu_units).
SILU = "silu"
_FLOAT32 = np.dtype(np.float32)


class Unit:
    """One future step: the graph nodes it computes, its kernel, the values it
    reads and writes."""

    def __init__(self, node: Node, kernel: Callable):
        self.nodes = [node]
        self.kind = node.kind             # or SILU for a sigmoid + mul pair
        self.kernel = kernel
        self.inputs: list[Value | None] = list(node.inputs)
        self.outputs: list[Value] = list(node.outputs)
        # A GEMM kernel's epilogue factory (specialise.py), while only adds were taken into it.
        self.epilogue: Callable | None = getattr(kernel, "epilogue", None)
        self.bias: np.ndarray | None = None
        self.residual_at: int | None = None
        # The activation in the epilogue: (lo, hi) for clamp/relu or a kernels.Activation.
        self.clamp: tuple[float, float] | kernels.Activation | None = None

    @property
    def name(self) -> str:
        return "+".join(n.kind for n in self.nodes)


def fuse(units: list[Unit], outputs: Mapping[str, Value], constant_of: Callable) -> list[Unit]:
    graph_outputs = {id(v) for v in outputs.values()}
    units = _silu_units(units, _reads(units), graph_outputs)
    reads = _reads(units)

    result: list[Unit | None] = []
    producer_at: dict[int, int] = {}          # id(value) -> index in result of the unit computing it
    for unit in units:
        index = _view_point(unit, reads, graph_outputs, producer_at, result)
        parts = _concat_parts(unit, reads, graph_outputs, producer_at, result)
        if index is not None:
            unit, result[index] = _absorb_view(result[index], unit), None
        elif parts is not None:
            unit = _concat_in_place([result[i] for i in parts], unit)
            for i in parts:
                result[i] = None
        elif (position := _fusion_point(unit, reads, graph_outputs, producer_at, result)) is not None:
            index, operand = position
            merged = _into_epilogue(result[index], unit, operand, constant_of)
            unit = merged if merged is not None else _merge(result[index], unit, operand)
            result[index] = None
        result.append(unit)
        for value in unit.outputs:
            producer_at[id(value)] = len(result) - 1
    units = [unit for unit in result if unit is not None]
    units = _absorb_output_reshapes(units, graph_outputs)
    return _chain_small_steps(_absorb_input_reshapes(units, graph_outputs), graph_outputs)


# A step's result that is a vector of at most this many elements (one axis longer than 1),
# read once, is passed on inside a merged step.
SMALL_VALUE = 4096


# The steps whose small result is passed on: a pooling, a convolution, a product (the
# pieces of a squeeze-excitation block and of a classifier head).
_CHAIN_KINDS = {"averagePool2d", "conv2d", "gemm", "matmul"}


def _is_small_vector(value: Value) -> bool:
    shape = value.descriptor.shape
    return value.descriptor.element_count <= SMALL_VALUE and sum(d > 1 for d in shape) <= 1


def _absorb_input_reshapes(units: list[Unit], graph_outputs) -> list[Unit]:
    """Each reshape step whose result one other step alone reads disappears: that step
    reads the reshape's operand and re-views it itself (free for the contiguous arrays the
    steps pass; numpy copies otherwise, as the reshape step would have). One step fewer in
    every dispatch's walk (ORT's graphs put a reshape before and after each 2-D gemm).
    So does a transpose read alone by a step whose kernel reads its first operand through
    its strides (`strided_in`: a direct conv2d of an image, ops/convolution.py): the layout
    pass's NCHW -> NHWC copy of the image is then never made."""
    reads = _reads(units)
    producer_of = {id(v): unit for unit in units for v in unit.outputs}
    gone: set[int] = set()
    for unit in units:
        for position, value in enumerate(unit.inputs):
            producer = producer_of.get(id(value)) if value is not None else None
            if (producer is None or len(producer.nodes) != 1 or producer is unit
                    or reads.get(id(value)) != 1 or id(value) in graph_outputs):
                continue
            if producer.kind == "reshape":
                shape = value.descriptor.shape
                unit.kernel = _viewing_input(unit, position, lambda x, shape=shape: x.reshape(shape))
            elif producer.kind == "transpose" and position == 0 and getattr(unit.kernel, "strided_in", False):
                permutation = producer.nodes[0].attributes["permutation"]
                unit.kernel = _viewing_input(unit, position, lambda x, axes=permutation: x.transpose(axes))
            else:
                continue
            unit.inputs[position] = producer.inputs[0]
            unit.nodes = producer.nodes + unit.nodes
            gone.add(id(producer))
    return [unit for unit in units if id(unit) not in gone]


def _is_relabelling(unit: Unit) -> bool:
    """A reshape, or a transpose that moves only axes of size 1 (ORT's Squeeze / Unsqueeze
    spelled as either): the elements keep their order, so the result is the operand re-viewed
    in the output's shape (numpy's reshape: a view of a contiguous array, else the copy the
    operator's own kernel would make too)."""
    if len(unit.nodes) != 1 or unit.kind not in ("reshape", "transpose"):
        return False
    if unit.kind == "reshape":
        return True
    shape = unit.inputs[0].descriptor.shape
    kept = [axis for axis in unit.nodes[0].attributes["permutation"] if shape[axis] != 1]
    return kept == sorted(kept)


def _absorb_output_reshapes(units: list[Unit], graph_outputs) -> list[Unit]:
    """Each reshape (or size-1 transpose, _is_relabelling) whose operand is one output of an
    earlier step, read by nothing else and no graph output, disappears: the producing step
    re-views that output in the reshape's shape itself. What _view_point does for single-output
    producers writing into a plan buffer, here for the others, a graph output included: an lstm's
    or gru's sequence [steps, 1, batch, hidden] squeezed to [steps, batch, hidden] (ORT's graphs
    and the zoo's) costs no step of its own in each dispatch's walk."""
    reads = _reads(units)
    producer_of = {id(v): unit for unit in units for v in unit.outputs}
    gone: set[int] = set()
    for unit in units:
        value = unit.inputs[0] if unit.inputs else None
        producer = producer_of.get(id(value)) if value is not None else None
        if (producer is None or not _is_relabelling(unit) or reads.get(id(value)) != 1
                or id(value) in graph_outputs or getattr(producer.kernel, "writes_into", False)):
            continue
        position = next(i for i, v in enumerate(producer.outputs) if v is value)
        producer.kernel = _reshaping_output(producer, position, unit.outputs[0].descriptor.shape)
        producer.outputs[position] = unit.outputs[0]
        producer.nodes = producer.nodes + unit.nodes
        producer_of[id(unit.outputs[0])] = producer
        gone.add(id(unit))
    return [unit for unit in units if id(unit) not in gone]


def _reshaping_output(unit: Unit, position: int, shape: tuple) -> Callable:
    """unit's kernel with its result `position` re-viewed as `shape`, called with the
    attributes and descriptors the plan gives the unit's own first node (a kernel may read
    its outputs' shapes); a kernel returning a generator (loop) is driven through."""
    kernel, attributes, descriptors = unit.kernel, unit.nodes[0].attributes, [v.descriptor for v in unit.outputs]

    def reshaped(results):
        results = list(results)
        results[position] = results[position].reshape(shape)
        return results

    def drive(generator):
        return reshaped((yield from generator))

    def kernel_reshaping(inputs, _attributes, _outputs):
        results = kernel(inputs, attributes, descriptors)
        return drive(results) if isinstance(results, GeneratorType) else reshaped(results)
    return kernel_reshaping


def _viewing_input(unit: Unit, position: int, view: Callable) -> Callable:
    """unit's kernel with its operand `position` re-viewed by `view` first (a reshape or a
    transpose), called with the attributes and descriptors the plan gives the unit's own
    first node."""
    kernel, attributes, descriptors = unit.kernel, unit.nodes[0].attributes, [v.descriptor for v in unit.outputs]

    def reshaped(inputs, _attributes, _outputs, **out):
        inputs = list(inputs)
        inputs[position] = view(inputs[position])
        return kernel(inputs, attributes, descriptors, **out)
    for flag in ("writes_into", "rows_out", "strided_out", "replayable"):
        if getattr(kernel, flag, False):
            setattr(reshaped, flag, True)
    return reshaped


def _chain_small_steps(units: list[Unit], graph_outputs) -> list[Unit]:
    """A step whose result is a small vector (SMALL_VALUE elements at most: a
    squeeze-excitation's pooled channels [1, 1, 1, C] and its two 1x1 convolutions on them,
    a classifier head's [1, N]), read by one later step alone and
    no graph output, runs inside that later step: the kernels are the same, called one
    after the other with the value passed on, and the walk has one step fewer (a
    squeeze-excitation block becomes one step instead of four)."""
    reads = _reads(units)
    consumer_of: dict[int, Unit] = {}
    for unit in units:
        for value in unit.inputs:
            if value is not None:
                consumer_of[id(value)] = unit
    merged_into: dict[int, Unit] = {}          # id(unit) -> the unit that now runs it
    result: list[Unit] = []
    for unit in units:
        current = merged_into.pop(id(unit), unit)          # with the steps already merged into it
        if (len(unit.outputs) == 1 and _is_small_vector(unit.outputs[0])
                and reads.get(id(unit.outputs[0])) == 1 and id(unit.outputs[0]) not in graph_outputs
                and any(node.kind in _CHAIN_KINDS for node in current.nodes) and id(unit.outputs[0]) in consumer_of):
            consumer = consumer_of[id(unit.outputs[0])]
            merged_into[id(consumer)] = _prefixed(current, merged_into.get(id(consumer), consumer))
            continue
        result.append(current)
    return result


def _prefixed(first: Unit, then: Unit) -> Unit:
    """One unit running `first`, then `then` (which may already carry earlier steps) with
    first's result in place of the operand it reads."""
    position = next(i for i, v in enumerate(then.inputs) if v is first.outputs[0])
    count = len(first.inputs)
    run_first, run_then = first.kernel, then.kernel
    first_descriptors = [v.descriptor for v in first.outputs]
    # What the plan would give each: its first node's attributes, its outputs' descriptors.
    first_attributes, then_attributes = first.nodes[0].attributes, then.nodes[0].attributes
    then_descriptors = [v.descriptor for v in then.outputs]

    # first's small result goes into an array of the unit's own where first writes into one:
    # the same memory every run (runtime/replay.py replays such a unit's calls).
    into_own = getattr(run_first, "writes_into", False)
    own = np.empty(first_descriptors[0].shape, first_descriptors[0].type.numpy) if into_own else None

    def kernel(inputs, _attributes, _outputs, **out):
        if own is None:
            value = run_first(inputs[:count], first_attributes, first_descriptors)[0]
        else:
            value = run_first(inputs[:count], first_attributes, first_descriptors, out=own)[0]
        rest = list(inputs[count:])
        rest.insert(position, value)
        return run_then(rest, then_attributes, then_descriptors, **out)
    if getattr(run_then, "writes_into", False):
        kernel.writes_into = True
    kernel.replayable = into_own and getattr(run_first, "replayable", False) and getattr(run_then, "replayable", False)
    merged = Unit(first.nodes[0], kernel)
    merged.kind = then.kind
    merged.nodes = first.nodes + then.nodes
    merged.inputs = list(first.inputs) + [v for i, v in enumerate(then.inputs) if i != position]
    merged.outputs = list(then.outputs)
    return merged


def _reads(units: list[Unit]) -> dict[int, int]:
    reads: dict[int, int] = {}
    for unit in units:
        for value in unit.inputs:
            if value is not None:
                reads[id(value)] = reads.get(id(value), 0) + 1
    return reads


def _silu_units(units: list[Unit], reads, graph_outputs) -> list[Unit]:
    """Each float32 mul(y, sigmoid(y)) (or mul(sigmoid(y), y)) whose sigmoid result nothing
    else reads becomes one SILU unit reading y once, in the mul's place: y's producer can
    then take it as its epilogue (EfficientNet's convolutions). Alone, the unit computes
    what the two operators do: the sigmoid kernel's result, then the float32 product."""
    index_of = {id(v): i for i, unit in enumerate(units) for v in unit.outputs}
    result: list[Unit | None] = list(units)
    for i, unit in enumerate(units):
        node = unit.nodes[0]
        if len(unit.nodes) != 1 or node.kind != "mul" or not _is_float32(node.outputs[0]):
            continue
        for y, s in (node.inputs, node.inputs[::-1]):
            j = index_of.get(id(s))
            if j is None or result[j] is None or reads.get(id(s)) != 1 or id(s) in graph_outputs:
                continue
            sigmoid = result[j].nodes[0]
            if (len(result[j].nodes) != 1 or sigmoid.kind != "sigmoid" or sigmoid.inputs[0] is not y
                    or y.descriptor.shape != node.outputs[0].descriptor.shape):
                continue
            silu = Unit(node, _silu_kernel(sigmoid))
            silu.kind, silu.nodes, silu.inputs = SILU, [sigmoid, node], [y]
            result[i], result[j] = silu, None
            break
    return [unit for unit in result if unit is not None]


def _silu_kernel(sigmoid: Node) -> Callable:
    stage = _silu_stage(sigmoid)

    def kernel(inputs, _attributes, _outputs):
        return [stage(np.array(inputs[0], copy=True), [])]
    return kernel


def _silu_stage(sigmoid: Node) -> Callable:
    """y * sigmoid(y) into y: the sigmoid operator's kernel, then the product (commutative:
    mul(y, s) and mul(s, y) are the same float32 values)."""
    registered = operator_kind("sigmoid").kernel
    attributes = sigmoid.attributes
    descriptors = [v.descriptor for v in sigmoid.outputs]

    def stage(y, _others):
        s = registered([y], attributes, descriptors)[0]
        return np.multiply(y, s, out=y)
    stage.in_place = True
    return stage


def _is_float32(value: Value) -> bool:
    return value.descriptor.type.numpy == _FLOAT32


def _fusion_point(unit: Unit, reads, graph_outputs, producer_at, result) -> tuple[int, int] | None:
    """(index of the producer unit, operand position) if `unit` can be appended to a producer."""
    if unit.kind != SILU and (len(unit.nodes) != 1 or unit.kind not in EPILOGUE_KINDS):
        return None
    out = unit.outputs[0]
    if not _is_float32(out):
        return None
    for operand, value in enumerate(unit.inputs):
        if value is None or reads.get(id(value)) != 1 or id(value) in graph_outputs:
            continue
        if value.descriptor.shape != out.descriptor.shape or not _is_float32(value):
            continue
        index = producer_at.get(id(value))
        if index is None or result[index] is None:
            continue
        producer = result[index]
        if len(producer.outputs) != 1 or producer.nodes[0].kind == "loop":
            continue
        return index, operand
    return None


def _view_point(unit: Unit, reads, graph_outputs, producer_at, result) -> int | None:
    """The index of the producer unit whose result `unit` (a reshape, or a transpose that
    keeps the last axis) only re-views, where the producer can write the view's layout
    itself (_absorb_view), else None."""
    if len(unit.nodes) != 1 or unit.kind not in ("reshape", "transpose"):
        return None
    value = unit.inputs[0]
    index = producer_at.get(id(value))
    if (index is None or result[index] is None or reads.get(id(value)) != 1 or id(value) in graph_outputs
            or not _is_float32(value)):
        return None
    producer = result[index]
    if len(producer.outputs) != 1 or not getattr(producer.kernel, "writes_into", False):
        return None
    if unit.kind == "transpose":
        permutation = unit.nodes[0].attributes["permutation"]
        if not getattr(producer.kernel, "strided_out", False) or permutation[-1] != len(permutation) - 1:
            return None
    return index


def _absorb_view(producer: Unit, view: Unit) -> Unit:
    """`producer` computing `view`'s output directly, in the plan's buffer of that shape:
    for a reshape the buffer re-viewed in the producer's shape (free: buffers are
    contiguous), for a transpose the producer's output written through the inverse
    permutation of the buffer (a GEMM writing rows ldc apart, Kernels.gemm), so the
    transposed value is contiguous and what reads it (reshape, a GEMM) takes no copy:
    attention's heads written straight into [tokens, heads, d]. The values are the
    producer's; only where they are stored changes. A GEMM's epilogue stays open behind a
    reshape that keeps the rows (the last axis)."""
    inner, shape = producer.kernel, view.outputs[0].descriptor.shape
    produced = producer.outputs[0].descriptor.shape
    if view.kind == "reshape":
        def place(out):
            return out.reshape(produced)

        def result_of(y, _out):
            return y.reshape(shape)
    else:
        permutation = view.nodes[0].attributes["permutation"]
        inverse = tuple(int(i) for i in np.argsort(permutation))

        def place(out):
            return out.transpose(inverse)

        def result_of(_y, out):
            return out

    def wrap(kernel):
        def absorbed(inputs, attributes, outputs, out=None):
            if out is None:
                out = np.empty(shape, _FLOAT32)
            return [result_of(kernel(inputs, attributes, outputs, out=place(out))[0], out)]
        absorbed.writes_into = True
        absorbed.replayable = getattr(kernel, "replayable", False)
        return absorbed

    merged = Unit(producer.nodes[0], wrap(inner))
    merged.nodes = producer.nodes + view.nodes
    merged.inputs = list(producer.inputs)
    merged.outputs = list(view.outputs)
    keeps_rows = view.kind == "reshape" and shape and produced and shape[-1] == produced[-1]
    if producer.epilogue is not None and keeps_rows and getattr(inner, "rows_out", False):
        def epilogue(bias, residual_at, clamp=None):
            kernel = producer.epilogue(bias, residual_at, clamp)
            if kernel is None:
                return None
            wrapped = wrap(kernel)
            wrapped.rows_out = True
            return wrapped
        merged.epilogue = epilogue
        merged.kernel.rows_out = True
    else:
        merged.epilogue = None
    merged.bias, merged.residual_at, merged.clamp = producer.bias, producer.residual_at, producer.clamp
    return merged


def _concat_parts(unit: Unit, reads, graph_outputs, producer_at, result) -> list[int] | None:
    """The indices of the producer units of a float32 concat along its last axis (channels,
    in a channels-last stack: a fire module's two expands) when each part is computed by its
    own unit that nothing else reads and that can write a channel slice of a wider buffer
    (`strided_out`, without a residual), else None."""
    if len(unit.nodes) != 1 or unit.kind != "concat" or not _is_float32(unit.outputs[0]):
        return None
    if unit.nodes[0].attributes["axis"] != unit.outputs[0].descriptor.rank - 1:
        return None
    indices = []
    for value in unit.inputs:
        index = producer_at.get(id(value))
        if (index is None or result[index] is None or index in indices or reads.get(id(value)) != 1
                or id(value) in graph_outputs or value.descriptor.element_count == 0):
            return None
        producer = result[index]
        if (len(producer.outputs) != 1 or producer.residual_at is not None
                or not getattr(producer.kernel, "strided_out", False)):
            return None
        indices.append(index)
    return indices


def _concat_in_place(producers: list[Unit], concat: Unit) -> Unit:
    """§8.9.9 concat written by its parts' producers: each writes its channels' slice of the
    concat's buffer (rows ldc apart), one after the other, so the parts never exist apart and
    nothing is copied; the values are the producers' own."""
    shape = concat.outputs[0].descriptor.shape
    pieces, offset, start = [], 0, 0
    for producer in producers:
        width = producer.outputs[0].descriptor.shape[-1]
        pieces.append((producer.kernel, producer.nodes[0].attributes, [v.descriptor for v in producer.outputs],
                       offset, len(producer.inputs), start, width))
        offset += len(producer.inputs)
        start += width

    def kernel(inputs, _attributes, _outputs, out=None):
        out = np.empty(shape, _FLOAT32) if out is None else out
        for run, attributes, descriptors, first, count, channel, width in pieces:
            run(inputs[first:first + count], attributes, descriptors, out=out[..., channel:channel + width])
        return [out]
    kernel.writes_into = True
    kernel.replayable = all(getattr(piece[0], "replayable", False) for piece in pieces)
    merged = Unit(producers[0].nodes[0], kernel)
    merged.nodes = [node for producer in producers for node in producer.nodes] + concat.nodes
    merged.inputs = [v for producer in producers for v in producer.inputs]
    merged.outputs = list(concat.outputs)
    merged.epilogue = None
    return merged


def _epilogue_activation(consumer: Unit):
    """The C epilogue's form of `consumer`'s activation ((lo, hi) for clamp/relu, else a
    kernels.Activation), or None if it is not one the epilogue has."""
    node, kind = consumer.nodes[-1], consumer.kind
    if kind == "clamp":
        return node.attributes["minValue"], node.attributes["maxValue"]
    if kind == "relu":
        return 0.0, float("inf")
    if kind == "hardSigmoid":
        return kernels.hard_sigmoid(node.attributes["alpha"], node.attributes["beta"])
    return {"hardSwish": kernels.HARD_SWISH, "sigmoid": kernels.SIGMOID, SILU: kernels.SILU}.get(kind)


def _into_epilogue(producer: Unit, consumer: Unit, operand: int, constant_of: Callable) -> Unit | None:
    """A float32 GEMM's or depthwise conv's following operations taken into the C
    kernel's epilogue instead of a numpy pass each: first a constant bias add along
    the last axis, then a residual add of the output's shape, then one activation
    (clamp/relu, hardSwish, hardSigmoid: the same float32 operations; sigmoid and
    SiLU: within 3 ULP of the exact sigmoid, see kernels.c activate4), in the graph's
    order ((y + bias) + residual, then the activation), which is the order the epilogue
    applies them in (kernels.c). The producer's factory declines (None) what its
    kernel cannot take."""
    node = consumer.nodes[-1]
    if producer.epilogue is None or producer.clamp is not None:
        return None
    bias, residual_at, clamp = producer.bias, producer.residual_at, None
    activation = _epilogue_activation(consumer)
    other = node.inputs[1 - operand] if len(node.inputs) == 2 else None
    factor = constant_of(other) if node.kind == "mul" and other is not None else None
    if activation is not None:
        clamp = activation
        other = None
    elif factor is not None and factor.size == 1 and factor.dtype == _FLOAT32:
        # A product by one constant float32 value: the epilogue's last operation, as the graph's.
        clamp = kernels.scale(factor.reshape(()))
        other = None
    elif node.kind == "add":
        shape = node.outputs[0].descriptor.shape
        constant = constant_of(other)
        if constant is not None:
            if bias is not None or residual_at is not None or constant.dtype != _FLOAT32 or not shape:
                return None
            if constant.ndim == 0 or constant.shape[-1] != shape[-1] or constant.size != shape[-1]:
                return None
            bias = constant
        else:
            if residual_at is not None or other.descriptor.shape != shape or not _is_float32(other):
                return None
            residual_at = len(producer.inputs)
    else:
        return None
    kernel = producer.epilogue(bias, residual_at, clamp)
    if kernel is None:          # this producer's kernel cannot take that operation
        return None
    merged = Unit(producer.nodes[0], kernel)
    merged.nodes = producer.nodes + consumer.nodes
    merged.inputs = producer.inputs + ([other] if other is not None else [])
    merged.outputs = list(consumer.outputs)
    merged.epilogue, merged.bias, merged.residual_at, merged.clamp = producer.epilogue, bias, residual_at, clamp
    return merged


def _merge(producer: Unit, consumer: Unit, operand: int) -> Unit:
    extra = [v for i, v in enumerate(consumer.inputs) if i != operand]
    stage = _silu_stage(consumer.nodes[0]) if consumer.kind == SILU else _stage(consumer.nodes[0], operand)
    first_count = len(producer.inputs)
    base = producer.kernel if len(producer.nodes) > 1 else _fresh(producer.kernel, producer.nodes[0])
    extra_count = len(extra)

    if getattr(producer.kernel, "writes_into", False) and getattr(stage, "in_place", False):
        # The producer writes the plan's buffer and the stage works in place on it.
        def kernel(inputs, _attributes, _outputs, out=None):
            if out is None:
                y = base(inputs[:first_count], None, None)[0]
            else:
                y = producer.kernel(inputs[:first_count], None, None, out=out)[0]
            return [stage(y, inputs[first_count:first_count + extra_count])]
        kernel.writes_into = True
        kernel.replayable = getattr(producer.kernel, "replayable", False) and getattr(stage, "replayable", False)
    else:
        def kernel(inputs, _attributes, _outputs):
            y = base(inputs[:first_count], None, None)[0]
            return [stage(y, inputs[first_count:first_count + extra_count])]

    merged = Unit(producer.nodes[0], kernel)
    merged.nodes = producer.nodes + consumer.nodes
    merged.inputs = producer.inputs + extra
    merged.outputs = list(consumer.outputs)
    return merged


def _fresh(kernel: Callable, node: Node) -> Callable:
    """The producer's kernel, returning an array the stages may overwrite: its own
    result, or a copy when it is read-only or shares memory with an operand (a view)."""
    attributes = node.attributes
    descriptors = [v.descriptor for v in node.outputs]

    def run(inputs, _attributes, _outputs):
        y = kernel(inputs, attributes, descriptors)[0]
        if not y.flags.writeable or any(a is not None and np.may_share_memory(y, a) for a in inputs):
            y = np.array(y, copy=True)
        return [y]
    return run


def _stage(node: Node, operand: int) -> Callable[[np.ndarray, list], np.ndarray]:
    """The element-wise operation `node` applied to `y` (its operand number `operand`);
    `in_place` marks the stages that write their result into y itself."""
    stage = _stage_function(node, operand)
    stage.in_place = node.kind in _BINARY or node.kind in _UNARY_IN_PLACE or node.kind == "gelu"
    # gelu_into's only work is the C kernel's call (its numpy path refuses a recording).
    stage.replayable = node.kind == "gelu"
    return stage


def _stage_function(node: Node, operand: int) -> Callable[[np.ndarray, list], np.ndarray]:
    kind = node.kind
    if kind in _BINARY:
        ufunc = _BINARY[kind]

        if operand == 0:
            def binary(y, others):
                with np.errstate(all="ignore"):
                    return ufunc(y, others[0], out=y)
        else:
            def binary(y, others):
                with np.errstate(all="ignore"):
                    return ufunc(others[0], y, out=y)
        return binary
    if kind == "relu":
        return lambda y, _: relu_into(y, y)
    if kind == "clamp":
        lower, upper = node.attributes["minValue"], node.attributes["maxValue"]
        return lambda y, _: clamp_into(y, lower, upper, y)
    if kind == "sigmoid":
        def sigmoid(y, _):
            # The kernel's 1 / (exp(-x) + 1), one operation at a time, in float32.
            with np.errstate(all="ignore"):
                np.negative(y, out=y)
                np.exp(y, out=y)
                np.add(y, _FLOAT32.type(1), out=y)
                return np.divide(_FLOAT32.type(1), y, out=y)
        return sigmoid
    if kind == "tanh":
        return lambda y, _: np.tanh(y, out=y)
    if kind == "gelu":
        return lambda y, _: gelu_into(y, y)
    # Anything else: the operator's own kernel (a fresh result).
    registered = operator_kind(kind).kernel
    attributes = node.attributes
    descriptors = [v.descriptor for v in node.outputs]

    def generic(y, others):
        arrays = list(others)
        arrays.insert(operand, y)
        return registered(arrays, attributes, descriptors)[0]
    return generic
