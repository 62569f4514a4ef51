"""The TFLite importer: a bounds-checked flatbuffer reader (flatbuffer.py), the
schema subset (schema.py), one translation function per operator (ops_*.py),
which emit ordinary MLGraphBuilder calls (importer.py), and the registry of every
builtin operator code: translated, or why not (builtins.py).

Translation is a coroutine: a WHILE loop's body is an MLGraph of its own
(ops_control.py), and MLGraphBuilder.build() is asynchronous."""
from __future__ import annotations

from ...base.errors import DataError, NotSupportedError
from .builtins import TRANSLATORS, unsupported
from .importer import Importer, IOInfo, Session
from .schema import Model, parse
from .state import ModelState


def select(model: Model, signature: str | None):
    """(subgraph, {input tensor index: name}, {output tensor index: name}) of the
    signature asked for; by default the first signature, or the first subgraph
    with its tensors' names when the model has no signatures."""
    if signature is not None or model.signatures:
        if signature is None:
            chosen = model.signatures[0]
        else:
            matches = [s for s in model.signatures if s.key == signature]
            if not matches:
                keys = ", ".join(repr(s.key) for s in model.signatures) or "none"
                raise NotSupportedError(f"load: the model has no signature {signature!r} (it has {keys})")
            chosen = matches[0]
        graph = model.subgraphs[chosen.subgraph]
        return graph, {i: n for n, i in chosen.inputs.items()}, {i: n for n, i in chosen.outputs.items()}
    graph = model.subgraphs[0]
    return graph, _names(graph, graph.inputs), _names(graph, graph.outputs)


def _names(graph, indices) -> dict[int, str]:
    out: dict[int, str] = {}
    used: set[str] = set()
    for i in indices:
        if i in out:
            continue
        name = graph.tensors[i].name
        if name in used:
            name = f"{name}:{i}"
        used.add(name)
        out[i] = name
    return out


async def translate(builder, data: bytes, signature: str | None = None, *, max_iterations: int | None = None):
    """Parse `data` and emit its graph into `builder` (only the selected
    subgraph; the others only where a WHILE calls them).

    `max_iterations` bounds every WHILE loop (MLLoopOptions.maxIterations of the
    `loop` it becomes; None: that option's default).
    Returns (inputs, outputs, graph_outputs, state): IOInfo lists, the operands to
    build, and the state.StatePlan of a model that keeps state (else None)."""
    model = parse(data)
    graph, input_names, output_names = select(model, signature)
    if not output_names:
        raise DataError("load: the model has no outputs")
    unsupported(model, graph.index)
    importer = Importer(builder, model, graph, Session(model, TRANSLATORS, max_iterations))
    try:
        return await importer.run(input_names, output_names, TRANSLATORS)
    except TypeError as exc:
        # A builder method rejected what an operator asked for: the model's
        # shapes or attributes are inconsistent (or beyond what WebNN expresses).
        where = (f"operator {importer.op.index} ({importer.op.opcode.name})" if importer.op else "the model")
        raise DataError(f"load: {where}: {exc}") from None
