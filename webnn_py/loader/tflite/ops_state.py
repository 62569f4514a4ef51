"""Resource variables: VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, and CALL_ONCE,
which runs their initialisation subgraph once. How the values persist between
compute() calls is state.py's concern; here each operator only says which
variable it reads or writes."""
from __future__ import annotations

from ...api.builder import MLGraphBuilder
from . import state
from .importer import Importer

CALL_ONCE_OPTIONS = 103       # BuiltinOptions.CallOnceOptions (schema.fbs)


def var_handle(ctx):
    """VarHandleOptions: container 0, shared_name 1. Handles with the same names are
    the same variable (LiteRT keys its resources by them), across subgraphs too."""
    table = ctx.op.options
    container = (table.string(0, "container") if table is not None else None) or ""
    name = (table.string(1, "shared_name") if table is not None else None) or ""
    ctx.set_resource(ctx.op.outputs[0], ("resource", container, name))


def _label(key) -> str:
    _, container, name = key
    return f"resource variable {(container + '/' if container else '') + name!r}"


def read_variable(ctx):
    key = ctx.resource(0)
    t = ctx.output_tensor(0)
    var = state.variable(ctx, key, _label(key), t, t.shape)
    ctx.set_output(0, state.read(ctx, key, var))


def assign_variable(ctx):
    key = ctx.resource(0)
    value = ctx.input(1)
    var = state.variable(ctx, key, _label(key), ctx.input_tensor(1), value.shape)
    state.write(ctx, key, var, value)


assign_variable.without_outputs = True


async def call_once(ctx):
    """CallOnceOptions: init_subgraph_index 0. The subgraph becomes the model's
    initialisation graph (state.py runs it at load() and resetState())."""
    op = ctx.op
    if ctx.state is None or ctx.session.stack != [ctx.graph.index]:
        raise ctx.fail("CALL_ONCE is only supported in the main subgraph")
    if ctx.session.init is not None:
        raise ctx.fail("the subgraph has more than one CALL_ONCE")
    if op.options is None or op.options_type != CALL_ONCE_OPTIONS:
        raise ctx.malformed("it has no CallOnceOptions")
    index = op.options.scalar(0, "i32")
    builder = MLGraphBuilder(ctx.b._context)
    scope = state.StateScope(builder)
    await ctx.call(index, builder, [], "init", state=scope)
    # The outputs' quantizeLinear/identity go into the initialisation graph's builder.
    emitter = Importer(builder, ctx.model, ctx.graph, ctx.session)
    emitter.op = ctx.op
    graph_outputs, reads, writes = state.outputs(emitter, scope, ctx.session.states)
    if graph_outputs:
        ctx.session.init = (await builder.build(graph_outputs), reads, writes)


call_once.without_outputs = True

TRANSLATORS = {
    "VAR_HANDLE": var_handle,
    "READ_VARIABLE": read_variable,
    "ASSIGN_VARIABLE": assign_variable,
    "CALL_ONCE": call_once,
}
