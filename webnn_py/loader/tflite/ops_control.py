"""Control flow: WHILE, IF and STABLEHLO_CASE, onto our `loop` builder extension,
and STABLEHLO_COMPOSITE (its decomposition subgraph, inline) (idl/extensions.idl;
semantics: OpenVINO Loop-5, ../shared/spec/003_ea60059f0e025f60.txt).

TFLite's WHILE (WhileOptions: cond_subgraph_index, body_subgraph_index) runs

    vars = inputs;  while cond(vars): vars = body(vars);  outputs = vars

where cond maps the loop variables to one boolean and body maps them to their
next values. Loop-5 checks its condition before each iteration too, but takes
the first one from outside the body and every later one from a body output, so:

  * the initial execution condition is cond(inputs), translated inline into the
    outer graph;
  * the body MLGraph (its own MLGraphBuilder on the same context) has one input
    per loop variable, `var_k`, and outputs `next_k` = body(vars)[k] and
    `cond` = cond(next vars), the condition of the following iteration;
  * a back edge next_k -> var_k carries every variable, the trip count is -1
    (no limit; Loop-5's "while" form), and the outputs are the next_k of the
    last iteration. After zero iterations Loop-5 gives a back-edged output its
    input's initial value, which is WHILE's result too.

WebNN operands have static shapes: a loop variable whose shape (or type)
changes across an iteration is rejected with NotSupportedError naming WHILE and
the variable's tensor. A variable the body graph never reads (its next value
does not depend on it) is not an input of the body graph and carries no back
edge; its result is where(initial condition, last next value, initial value).

IF (IfOptions: then_subgraph_index, else_subgraph_index; input 0 the boolean,
the rest the branch's inputs) becomes two loops of trip count 1, each branch's
subgraph a body graph run when its condition holds (Loop-5 runs zero iterations
when the execution condition is false), and where(condition, then, else) per
output. So only the branch taken runs, as in LiteRT: a branch that would fail
or never end (a WHILE in it) costs nothing when not taken. Both branches must
give each output the same type and shape.
"""
from __future__ import annotations

import numpy as np

from ...api.builder import MLGraphBuilder
from .importer import BOOL

IF_OPTIONS, WHILE_OPTIONS = 92, 93     # BuiltinOptions.IfOptions, .WhileOptions (schema.fbs)


async def while_(ctx):
    op = ctx.op
    if op.options is None or op.options_type != WHILE_OPTIONS:
        raise ctx.malformed("it has no WhileOptions")
    # WhileOptions: cond_subgraph_index (field 0), body_subgraph_index (field 1).
    cond_index = op.options.scalar(0, "i32")
    body_index = op.options.scalar(1, "i32")
    n = len(op.inputs)
    if len(op.outputs) != n:
        raise ctx.malformed(f"it has {n} inputs but {len(op.outputs)} outputs; WHILE's outputs are its "
                            "loop variables' final values, one per input")
    initial = [ctx.input(k) for k in range(n)]
    names = [ctx.output_tensor(k).name for k in range(n)]

    # Both indices and output counts are checked before either subgraph is translated,
    # so a bad body index is reported as such even when the cond subgraph is broken too.
    model = ctx.model
    for role, index, outputs in (("cond", cond_index, 1), ("body", body_index, n)):
        if not 0 <= index < len(model.subgraphs):
            raise ctx.malformed(f"its {role} subgraph index {index} is out of range (the model has "
                                f"{len(model.subgraphs)} subgraphs)")
        if len(model.subgraphs[index].outputs) != outputs:
            raise ctx.malformed(f"its {role} subgraph {index} has {len(model.subgraphs[index].outputs)} outputs, "
                                f"it must have {outputs}")
    cond_tensor = model.subgraphs[cond_index].tensors[model.subgraphs[cond_index].outputs[0]]
    if cond_tensor.type_code != BOOL:
        raise ctx.malformed(f"its cond subgraph {cond_index}'s output {cond_tensor.name!r} is "
                            f"{cond_tensor.type_name}, not BOOL")

    # The first condition: cond(initial values), in the outer graph.
    condition = _condition(ctx, (await ctx.call(cond_index, ctx.b, initial, "cond"))[0], ctx.b, cond_tensor)

    # The body graph: next values, then the condition of the next iteration.
    body_builder = MLGraphBuilder(ctx.b._context)
    inputs = [body_builder.input(f"var_{k}", {"dataType": v.dataType, "shape": list(v.shape)})
              for k, v in enumerate(initial)]
    nexts = await ctx.call(body_index, body_builder, inputs, "body")
    for k, (before, after) in enumerate(zip(initial, nexts)):
        if after.dataType != before.dataType or tuple(after.shape) != tuple(before.shape):
            raise ctx.fail(f"loop variable {k} (tensor {names[k]!r}) is {before.dataType} {list(before.shape)} "
                           f"before an iteration and {after.dataType} {list(after.shape)} after it; a loop "
                           "variable whose shape or type changes across iterations cannot be typed statically "
                           "in WebNN")
    next_condition = _condition(ctx, (await ctx.call(cond_index, body_builder, nexts, "cond"))[0],
                                body_builder, cond_tensor)
    body = await _build(body_builder, [*((f"next_{k}", v) for k, v in enumerate(nexts)), ("cond", next_condition)])

    read = body._input_descriptors       # the inputs the body graph actually reads
    carried = [k for k in range(n) if f"var_{k}" in read]
    options = {"backEdges": [{"from": f"next_{k}", "to": f"var_{k}"} for k in carried],
               "label": f"WHILE (operator {op.index})"}
    if ctx.session.max_iterations is not None:
        options["maxIterations"] = ctx.session.max_iterations
    trip_count = ctx.constant_operand(np.array(-1, np.int32))
    results = ctx.b.loop(trip_count, condition, body, "cond",
                         [{"bodyInput": f"var_{k}", "value": initial[k]} for k in carried],
                         [{"bodyOutput": f"next_{k}"} for k in range(n)], options)
    for k in range(n):
        value = results[k]
        if k not in carried:
            value = ctx.b.where(condition, value, initial[k])
        ctx.set_output(k, value)


async def if_(ctx):
    op = ctx.op
    if op.options is None or op.options_type != IF_OPTIONS:
        raise ctx.malformed("it has no IfOptions")
    # IfOptions: then_subgraph_index (field 0), else_subgraph_index (field 1).
    branches = (("then", op.options.scalar(0, "i32")), ("else", op.options.scalar(1, "i32")))
    for role, index in branches:
        _check_called(ctx, role, index)
    if ctx.input_tensor(0).type_code != BOOL:
        raise ctx.malformed(f"its condition {ctx.input_tensor(0).name!r} is {ctx.input_tensor(0).type_name}, not BOOL")
    condition = _condition(ctx, ctx.input(0), ctx.b, ctx.input_tensor(0))
    operands = [ctx.input(k) for k in range(1, len(op.inputs))]
    taken = {"then": condition, "else": ctx.b.logicalNot(condition)}
    results = {}
    for role, index in branches:
        results[role] = await _run_if(ctx, role, index, taken[role], operands)
    for k, (then, other) in enumerate(zip(results["then"], results["else"])):
        if then.dataType != other.dataType or tuple(then.shape) != tuple(other.shape):
            raise ctx.fail(f"output {k} (tensor {ctx.output_tensor(k).name!r}) is {then.dataType} "
                           f"{list(then.shape)} from the then branch and {other.dataType} {list(other.shape)} "
                           "from the else branch; WebNN operands need one static type and shape")
        ctx.set_output(k, ctx.b.where(condition, then, other))


def _check_called(ctx, role: str, index: int) -> None:
    """A subgraph the operator runs in its place (IF's and STABLEHLO_CASE's branches,
    a composite's decomposition) exists and has the operator's number of outputs."""
    model = ctx.model
    if not 0 <= index < len(model.subgraphs):
        raise ctx.malformed(f"its {role} subgraph index {index} is out of range (the model has "
                            f"{len(model.subgraphs)} subgraphs)")
    if len(model.subgraphs[index].outputs) != len(ctx.op.outputs):
        raise ctx.malformed(f"its {role} subgraph {index} has {len(model.subgraphs[index].outputs)} outputs, "
                            f"{ctx.op.opcode.name} has {len(ctx.op.outputs)}")


async def _run_if(ctx, role: str, index: int, condition, operands: list) -> list:
    """Subgraph `index` on `operands`, run only when `condition` holds: a loop of
    trip count 1 whose execution condition is `condition` (after zero iterations
    its outputs are zeros, which where() then ignores)."""
    builder = MLGraphBuilder(ctx.b._context)
    inputs = [builder.input(f"in_{k}", {"dataType": v.dataType, "shape": list(v.shape)})
              for k, v in enumerate(operands)]
    outputs = await ctx.call(index, builder, inputs, role)
    stop = builder.constant({"dataType": "uint8", "shape": []}, np.zeros((), np.uint8))
    body = await _build(builder, [*((f"out_{k}", v) for k, v in enumerate(outputs)), ("cond", stop)])
    read = body._input_descriptors
    return ctx.b.loop(ctx.constant_operand(np.array(1, np.int32)), condition, body, "cond",
                      [{"bodyInput": f"in_{k}", "value": v} for k, v in enumerate(operands) if f"in_{k}" in read],
                      [{"bodyOutput": f"out_{k}"} for k in range(len(outputs))],
                      {"label": f"{ctx.op.opcode.name} (operator {ctx.op.index}) {role} subgraph"})


async def _build(builder, named: list):
    """build() a body graph from (name, operand) pairs. build() takes no graph input
    or constant as an output, and each output needs its own operand: identity() where needed."""
    outputs, seen = {}, set()
    for name, operand in named:
        if operand._value.is_input or operand._value.is_constant or id(operand._value) in seen:
            operand = builder.identity(operand)
        seen.add(id(operand._value))
        outputs[name] = operand
    return await builder.build(outputs)


def _condition(ctx, operand, builder, tensor):
    """A one-element boolean as a uint8 scalar (loop() takes a scalar or a
    1-element 1-D condition; LiteRT reads the single element)."""
    if operand.dataType != "uint8" or int(np.prod(operand.shape, dtype=np.int64)) != 1:
        raise ctx.malformed(f"the condition {tensor.name!r} is {operand.dataType} {list(operand.shape)}, "
                            "not a single boolean")
    return operand if tuple(operand.shape) == () else builder.reshape(operand, [])


async def stablehlo_case(ctx):
    """STABLEHLO_CASE: input 0 an int32 index, the rest the branches' inputs;
    StablehloCaseOptions (builtin_options_2): branch_subgraph_indices 0. As IF with
    N branches: branch k runs when the index is k, an index out of range takes the
    last branch (the StableHLO specification; LiteRT does the same), and each output
    is the taken branch's, chosen by where()."""
    table = ctx.op.options_2
    branches = [] if table is None else table.ints(0, "branch_subgraph_indices")
    if not branches:
        raise ctx.malformed("it has no branch subgraphs")
    for k, index in enumerate(branches):
        _check_called(ctx, f"branch {k}", index)
    b = ctx.b
    selector = ctx.input(0)
    if selector.dataType != "int32" or int(np.prod(selector.shape, dtype=np.int64)) != 1:
        raise ctx.malformed(f"its index is {selector.dataType} {list(selector.shape)}, not one int32")
    selector = b.reshape(selector, [])
    last = len(branches) - 1
    inside = b.logicalAnd(b.greaterOrEqual(selector, ctx.constant_operand(np.array(0, np.int32))),
                          b.lesserOrEqual(selector, ctx.constant_operand(np.array(last, np.int32))))
    selector = b.where(inside, selector, ctx.constant_operand(np.array(last, np.int32)))
    operands = [ctx.input(k) for k in range(1, len(ctx.op.inputs))]
    taken, results = [], []
    for k, index in enumerate(branches):
        condition = b.equal(selector, ctx.constant_operand(np.array(k, np.int32)))
        taken.append(condition)
        results.append(await _run_if(ctx, f"branch {k}", index, condition, operands))
    for out in range(len(ctx.op.outputs)):
        value = results[last][out]
        for k in range(last - 1, -1, -1):
            other = results[k][out]
            if other.dataType != value.dataType or tuple(other.shape) != tuple(value.shape):
                raise ctx.fail(f"output {out} is {other.dataType} {list(other.shape)} from branch {k} and "
                               f"{value.dataType} {list(value.shape)} from another; WebNN operands need one "
                               "static type and shape")
            value = b.where(taken[k], other, value)
        ctx.set_output(out, value)


async def stablehlo_composite(ctx):
    """A named composite whose meaning is its decomposition subgraph
    (StableHLOCompositeOptions in builtin_options_2: name 0,
    decomposition_subgraph_index 1): translated inline, as LiteRT runs it."""
    table = ctx.op.options_2
    if table is None:
        raise ctx.malformed("it has no StableHLOCompositeOptions")
    index = table.scalar(1, "i32")
    _check_called(ctx, "decomposition", index)
    operands = [ctx.input(k) for k in range(len(ctx.op.inputs))]
    results = await ctx.call(index, ctx.b, operands, "decomposition", state=ctx.state)
    for k, value in enumerate(results):
        ctx.set_output(k, value)


TRANSLATORS = {
    "WHILE": while_,
    "IF": if_,
    "STABLEHLO_COMPOSITE": stablehlo_composite,
    "STABLEHLO_CASE": stablehlo_case,
}
