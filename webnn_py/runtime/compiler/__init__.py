"""The graph compiler, run once in build() (§8.9.4 build() step 18, "compile"):
turns the recorded graph (runtime/ir.py) into the executor's list of steps.

Passes, in order:
  1. order     the nodes the outputs need, topologically (build() step 9's walk);
  2. folding   nodes whose operands are all constants run now; their results
               become constants (folding.py);
  3. patterns  gelu, layerNormalization and softmax spelled out in smaller
               operators (older ONNX exports) become the operator (patterns.py);
  4. layout    stacks of convolutions with a depthwise one run channels-last,
               with transposes only at the stack's borders (layout.py);
  5. kernels   each remaining node gets its kernel, specialised where constants
               allow: constant conv2d filters and gemm/matmul operands are re-laid
               out into the matrices the computation uses (specialise.py);
  6. fusion    float32 chains of a producer (conv2d, gemm, matmul, an element-wise
               operation) and its single-consumer element-wise successors become
               one step that works in place on the producer's fresh result
               (fusion.py); with the C GEMM (wasm, or BLAS + a C epilogue on the
               host), a bias add, a residual add and clamp
               after matmul / a 1x1 or im2col conv2d go into its epilogue;
  7. slots     every value gets a slot; each step lists the slots nobody reads
               after it, which the executor drops (liveness); the C kernels'
               steps get result buffers shared by values whose lifetimes do not
               overlap and reused by every dispatch (_buffers).
The passes never change what a kernel computes or where float16 is rounded:
folding runs the same kernels, layout and specialisation only move data, and
fusion is limited to float32, where the in-place operations are the kernels' own.
Patterns, also float32 only, are the exception: the operator rounds its result
once where the spelled-out chain rounded after every step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ...ops import operator_kind
from ..ir import Node, Value
from ..plan import Step
from .folding import fold_constants
from .fusion import Unit, fuse
from .layout import channels_last
from .patterns import recognise
from .specialise import specialise


@dataclass
class CompiledGraph:
    steps: list[Step]
    constants: dict[int, np.ndarray]
    input_slots: dict[str, int]
    output_slots: dict[str, int]
    slot_count: int
    folded_nodes: list[Node]
    buffers: list[tuple]          # (shape, dtype) of each reusable result buffer


def compile_graph(outputs: Mapping[str, Value], optimize: bool = True) -> CompiledGraph:
    order = topological_order(outputs.values())
    folded: dict[int, np.ndarray] = {}
    folded_nodes: list[Node] = []
    if optimize:
        folded, folded_nodes = fold_constants(order, outputs)
        done = {id(n) for n in folded_nodes}
        order = [n for n in order if id(n) not in done]

    def constant_of(value: Value | None) -> np.ndarray | None:
        if value is None:
            return None
        if value.is_constant:
            return value.constant
        return folded.get(id(value))

    if optimize:
        order, outputs = recognise(order, outputs, constant_of)
        order, outputs = channels_last(order, outputs, constant_of)

    units = [Unit(node, specialise(node, constant_of) if optimize else operator_kind(node.kind).kernel)
             for node in order]
    if optimize:
        units = fuse(units, outputs, constant_of)
    return _assign_slots(units, outputs, constant_of, folded_nodes)


def _assign_slots(units: list[Unit], outputs: Mapping[str, Value], constant_of, folded_nodes) -> CompiledGraph:
    slots: dict[int, int] = {}
    constants: dict[int, np.ndarray] = {}
    input_slots: dict[str, int] = {}

    def slot(value: Value) -> int:
        key = id(value)
        if key not in slots:
            number = slots[key] = len(slots)
            constant = constant_of(value)
            if constant is not None:
                constants[number] = constant
            elif value.is_input:
                input_slots[value.input_name] = number
        return slots[key]

    raw = []
    for unit in units:
        raw.append((unit, tuple(-1 if v is None else slot(v) for v in unit.inputs),
                    tuple(slot(v) for v in unit.outputs)))
    output_slots = {name: slot(v) for name, v in outputs.items()}

    # Liveness: the last step reading each computed slot may drop it, unless it is an output.
    kept = set(output_slots.values()) | set(constants) | set(input_slots.values())
    last_reader: dict[int, int] = {}
    for index, (_, ins, outs) in enumerate(raw):
        for s in ins + outs:
            if s >= 0 and s not in kept:
                last_reader[s] = index
    release: dict[int, list[int]] = {}
    for s, index in last_reader.items():
        release.setdefault(index, []).append(s)

    buffers, buffer_of = _buffers(raw, last_reader, kept)
    steps = [Step(unit.nodes[0], unit.kernel, ins, outs, tuple(v.descriptor for v in unit.outputs),
                  unit.name, tuple(unit.nodes), tuple(sorted(release.get(index, ()))), buffer_of.get(index, -1))
             for index, (unit, ins, outs) in enumerate(raw)]
    return CompiledGraph(steps, constants, input_slots, output_slots, len(slots), folded_nodes, buffers)


def _buffers(raw, last_reader: dict[int, int], kept: set[int]):
    """Buffers for the results of steps whose kernels write into a given array
    (`writes_into`: the C GEMM, convolution and gelu paths, fused or not), reused
    from step to step and from dispatch to dispatch: a buffer is free again once
    every value that may share its memory has had its last reader. A step whose
    kernel does not promise fresh memory (reshape, transpose, slice... return views)
    may alias its inputs, so its results extend their buffers' lives; a buffer that
    reaches a graph output is held to the end (the plan copies outputs that are
    views). Graph outputs themselves are never in buffers: callers keep them.
    Returns ([(shape, dtype)] per buffer, step index -> buffer)."""
    end = len(raw)
    owners: dict[int, set[int]] = {}          # slot -> buffers its memory may be part of
    life: dict[int, int] = {}                 # buffer -> last step that may read it
    shapes: list[tuple] = []
    free: dict[tuple, list[int]] = {}         # (shape, dtype) -> buffers free for reuse
    busy: list[tuple[int, int]] = []          # (buffer, until step)
    buffer_of: dict[int, int] = {}
    for index, (unit, ins, outs) in enumerate(raw):
        for buffer, until in [b for b in busy if b[1] < index]:
            busy.remove((buffer, until))
            free.setdefault(shapes[buffer], []).append(buffer)
        inherited = set().union(*(owners.get(s, set()) for s in ins if s >= 0))
        desc = unit.outputs[0].descriptor if len(outs) == 1 else None
        if (getattr(unit.kernel, "writes_into", False) and desc is not None and outs[0] not in kept
                and desc.element_count):
            key = (tuple(desc.shape), desc.type.numpy)
            buffer = free[key].pop() if free.get(key) else None
            if buffer is None:
                buffer = len(shapes)
                shapes.append(key)
            buffer_of[index] = buffer
            owners[outs[0]] = {buffer}
            life[buffer] = index
            busy.append((buffer, index))
        else:
            for s in outs:
                owners[s] = inherited
        for s in outs:
            reach = end if s in kept else last_reader.get(s, index)
            for buffer in owners[s]:
                life[buffer] = max(life[buffer], reach)
        busy = [(b, life[b]) for b, _ in busy]
    return shapes, buffer_of


def topological_order(outputs) -> list[Node]:
    order: list[Node] = []
    seen: set[int] = set()
    # Iterative post-order DFS: deep graphs must not hit Python's recursion limit.
    stack: list[tuple[Value, bool]] = [(v, False) for v in outputs]
    while stack:
        value, expanded = stack.pop()
        node = value.producer
        if node is None:
            continue
        if expanded:
            if id(node) not in seen:
                seen.add(id(node))
                order.append(node)
            continue
        if id(node) in seen:
            continue
        stack.append((value, True))
        stack.extend((v, False) for v in reversed(node.inputs) if v is not None)
    return order
