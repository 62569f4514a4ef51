"""A loaded IR model and how it runs: specialisations built per concrete input
shapes and Loop iteration counts, cached.

WebNN graphs have static shapes; an IR model need not: a Parameter may have
dynamic dimensions, and a Loop's concatenated output has one slice per
iteration, which a while loop decides at run time. So a model is translated
(translate.py) into one MLGraph per *specialisation*: the concrete input
shapes, plus the iteration count of every Loop whose concatenated outputs the
builder cannot type statically. compute() then

  1. translates for the input shapes; if a Loop needs its count (NeedCount),
  2. runs a counting graph: the model up to that Loop, whose body carries an
     extra counter (loop.py), giving the number of iterations for these inputs;
  3. repeats 1 with that count known (the Loop is emitted with a constant trip
     count, so everything after it is typed for the resulting shapes), until
     the translation completes, and runs the final graph.

Graphs are cached (at most CACHE_SIZE, least recently used dropped), so a
model with static shapes is translated once, at load time, and runs one
graph per compute(); a while loop costs one extra run of the graph up to it.
A Loop that runs zero times with a concatenated output gives an empty result
(dimensions with a 0), which compute() returns as it is.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ...api.builder import MLGraphBuilder
from ...base.datatypes import DATA_TYPES
from ...base.errors import DataError, NotSupportedError, OperationError
from . import ir
from .registry import STRUCTURAL, UNSUPPORTED
from .translate import NUMPY_TO_WEBNN, Counted, Empty, NeedCount, Session, Translator

CACHE_SIZE = 16


@dataclass
class Spec:
    need: str | None = None          # a Loop key whose count must be found first
    graph: object = None             # MLGraph, or None when every output is known without running
    inputs: dict | None = None       # graph input name -> MLTensor
    outputs: dict | None = None      # graph output name -> MLTensor
    fixed: dict | None = None        # model output name -> Empty or np.ndarray known at translation
    result_names: dict | None = None  # model output name -> graph output name


class IRModel:
    def __init__(self, context, xml: bytes, weights: bytes, translators: dict, max_iterations: int | None):
        self.context = context
        self.translators = translators
        self.max_iterations = max_iterations
        self.graph = ir.parse(xml, weights)
        unknown = sorted(_unknown_types(self.graph, set(translators) | set(STRUCTURAL)))
        if unknown:
            reasons = [f"{name} ({UNSUPPORTED[name]})" if name in UNSUPPORTED else name for name in unknown]
            raise NotSupportedError(f"load: the OpenVINO IR uses operation types this importer does not support: "
                                    f"{', '.join(reasons)}")
        layers = self.graph.layers
        self.parameters = [layers[i] for i in sorted(layers) if layers[i].type == "Parameter"]
        self.results = [layers[i] for i in sorted(layers) if layers[i].type == "Result"]
        if not self.results:
            raise DataError("load: the OpenVINO IR has no Result")
        self.input_names = _unique([(p.outputs[0].names[0] if p.outputs and p.outputs[0].names else p.name) or
                                    f"input{p.id}" for p in self.parameters])
        names = []
        for r in self.results:
            declared = [n for n in (r.element.get("output_names") or "").split(",") if n]
            source = self.graph.sources[(r.id, r.inputs[0].id)] if r.inputs else None
            port_names = next((p.names for p in layers[source[0]].outputs if p.id == source[1]), ()) if source else ()
            names.append((declared or list(port_names) or [r.name or f"output{r.id}"])[0])
        self.output_names = _unique(names)
        self.input_shapes = [ir.shape_attribute(p) for p in self.parameters]
        self.input_types = [ir.ELEMENT_TYPES[ir.element_type(p)][1] for p in self.parameters]
        self._cache: OrderedDict = OrderedDict()
        self.output_info = None

    # -- what compute() checks and reports ---------------------------------------------------

    def inputs(self) -> list[dict]:
        # A dynamic dimension is reported as 0: MLTensorInfo cannot say "any".
        return [{"name": n, "type": t, "dimensions": [max(d, 0) for d in s]}
                for n, t, s in zip(self.input_names, self.input_types, self.input_shapes)]

    def outputs(self) -> list[dict]:
        if self.output_info is not None:
            return [dict(i) for i in self.output_info]
        info = []
        for name, r in zip(self.output_names, self.results):
            dims = r.inputs[0].dims if r.inputs and r.inputs[0].dims is not None else ()
            info.append({"name": name, "type": _precision_type(r.inputs[0].precision if r.inputs else ""),
                         "dimensions": [max(d, 0) for d in dims]})
        return info

    def check_input(self, name: str, data_type: str, dims: list[int]) -> None:
        index = self.input_names.index(name)
        declared, wanted = self.input_shapes[index], self.input_types[index]
        if data_type != wanted:
            raise TypeError(f"compute: input {name!r} is {data_type}, the model's Parameter is {wanted}")
        if len(dims) != len(declared) or any(d != w and w != -1 for d, w in zip(dims, declared)) or 0 in dims:
            shown = ["?" if d == -1 else d for d in declared]
            raise TypeError(f"compute: input {name!r} has dimensions {list(dims)}, the model expects {shown} "
                            "(? is any positive size)")

    # -- load and compute --------------------------------------------------------------------

    async def prepare(self) -> None:
        """At load: translate for the declared shapes when they are static, so that
        a model the builder rejects fails load(), not the first compute()."""
        if any(-1 in s for s in self.input_shapes):
            return
        spec = await self._specialise(tuple(self.input_shapes), {}, None)
        if spec.need is None:
            self.output_info = [{"name": n, "type": dt, "dimensions": list(shape)}
                                for n, (dt, shape) in zip(self.output_names, self._shapes(spec))]

    async def run(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        shapes = tuple(tuple(arrays[n].shape) for n in self.input_names)
        counts: dict[str, int] = {}
        while True:
            spec = await self._specialise_now(shapes, counts, None)
            if spec.need is None:
                break
            counter = await self._specialise_now(shapes, counts, spec.need)
            found = await self._execute(counter, arrays)
            counts[spec.need] = int(found["count"].reshape(-1)[0])
        return await self._execute(spec, arrays)

    async def _specialise_now(self, shapes, counts: dict, target: str | None) -> Spec:
        """_specialise from compute(): the shapes or counts it meets only now may be
        ones the model cannot handle; say so as compute's error."""
        try:
            return await self._specialise(shapes, counts, target)
        except (DataError, NotSupportedError) as exc:
            message = str(exc)
            raise type(exc)("compute: " + message.removeprefix("load: ")) from None

    def _shapes(self, spec: Spec):
        out = []
        for name in self.output_names:
            if name in spec.fixed:
                value = spec.fixed[name]
                dt = value.data_type if isinstance(value, Empty) else NUMPY_TO_WEBNN[value.dtype]
                out.append((dt, tuple(value.shape)))
            else:
                desc = spec.graph._output_descriptors[spec.result_names[name]]
                out.append((desc.data_type, tuple(desc.shape)))
        return out

    async def _specialise(self, shapes, counts: dict, target: str | None) -> Spec:
        key = (shapes, tuple(sorted(counts.items())), target)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        builder = MLGraphBuilder(self.context)
        session = Session(self.translators, dict(counts), target, self.max_iterations)
        params = {}
        for layer, name, shape, dt in zip(self.parameters, self.input_names, shapes, self.input_types):
            try:
                params[layer.id] = builder.input(name, {"dataType": dt, "shape": list(shape)})
            except TypeError as exc:
                raise DataError(f"load: {layer.where}: {exc}") from None
        translator = Translator(builder, self.graph, session)
        spec = Spec(fixed={}, result_names={})
        outputs = {}
        try:
            results = await translator.run(params)
        except NeedCount as need:
            spec.need = need.key
            results = None
        except Counted as counted:
            outputs["count"] = builder.identity(counted.operand)
            results = None
        if results is not None:
            for index, (name, layer) in enumerate(zip(self.output_names, self.results)):
                value = results[layer.id]
                if isinstance(value, (Empty, np.ndarray)):
                    spec.fixed[name] = value
                else:
                    graph_name = f"output{index}"
                    spec.result_names[name] = graph_name
                    outputs[graph_name] = builder.identity(value)
        if outputs:
            spec.graph = await builder.build(outputs)
            spec.inputs = {}
            for name, desc in spec.graph._input_descriptors.items():
                spec.inputs[name] = await self.context.createTensor(
                    {"dataType": desc.data_type, "shape": list(desc.shape), "writable": True})
            spec.outputs = {}
            for name, desc in spec.graph._output_descriptors.items():
                spec.outputs[name] = await self.context.createTensor(
                    {"dataType": desc.data_type, "shape": list(desc.shape), "readable": True})
        self._cache[key] = spec
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return spec

    async def _execute(self, spec: Spec, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        context = self.context
        results: dict[str, np.ndarray] = {}
        if spec.graph is not None:
            for name, tensor in spec.inputs.items():
                context.writeTensor(tensor, np.ascontiguousarray(arrays[name]))
            failures: list = []
            context._enqueue_dispatch(spec.graph, dict(spec.inputs), dict(spec.outputs), on_failure=failures.append)
            pending = {name: context.readTensor(tensor) for name, tensor in spec.outputs.items()}
            read = {}
            for name, promise in pending.items():
                desc = spec.graph._output_descriptors[name]
                read[name] = np.frombuffer(bytes(await promise), dtype=DATA_TYPES[desc.data_type].numpy) \
                    .reshape(desc.shape).copy()
            if failures:
                exc = failures[0]
                if isinstance(exc, OperationError):
                    raise exc
                raise OperationError(f"compute: running the model failed: {exc}")
            if "count" in read:
                return read
            for name, graph_name in spec.result_names.items():
                results[name] = read[graph_name]
        for name, value in spec.fixed.items():
            if isinstance(value, Empty):
                results[name] = np.zeros(value.shape, dtype=DATA_TYPES[value.data_type].numpy)
            else:
                results[name] = np.array(value, copy=True)
        return results


def _precision_type(precision: str) -> str:
    return {"FP32": "float32", "FP16": "float16", "I32": "int32", "I64": "int64", "U8": "uint8",
            "BOOL": "uint8", "BOOLEAN": "uint8"}.get(precision.upper(), "unknown")


def _unique(names: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for i, name in enumerate(names):
        if name in seen:
            name = f"{name}:{i}"
        seen.add(name)
        out.append(name)
    return out


def _unknown_types(graph: ir.Graph, known: set) -> set:
    found = set()
    for layer in graph.layers.values():
        if layer.type not in known:
            found.add(layer.type)
        if layer.body is not None:
            found |= _unknown_types(layer.body, known)
    return found
