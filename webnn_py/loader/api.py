"""The Model Loader API (../shared/spec/002, §2): MLModelLoader and MLModel.

A loaded model is an ordinary MLGraph: the importer emits MLGraphBuilder calls,
so models get the builder's validation and the same runtime. compute() is
writeTensor / dispatch / readTensor on the model's context, so it is ordered on
the context's timeline with everything else.

Where the draft is loose or contradicts itself we chose (see idl/model_loader.idl):
  * load() takes an ArrayBuffer or any view of one (the draft's IDL says
    ArrayBuffer; its prose only says "from an ArrayBuffer"), and a second,
    optional MLModelLoadOptions: {signature: "key"} picks a TFLite signature
    (default: the first); {weights: bin} gives an OpenVINO IR's .bin (any
    BufferSource: an ArrayBuffer or typed array in a page, bytes / a numpy
    array / a memoryview on the host); {maxIterations: n} bounds every loop in
    the model (TFLite WHILE, OpenVINO Loop): compute() rejects with an
    OperationError when a loop would run more (default: MLLoopOptions'
    1,000,000);
  * the format is told by the content, not by the context's modelFormat (a
    context option the draft gives, which we accept with "tflite" and
    "openvino" but which a context does not need): an OpenVINO IR .xml starts
    with "<" (after an optional byte order mark and white space), anything
    else is read as a TFLite flatbuffer;
  * OpenVINO IR models may have dynamic shapes (dynamic Parameter dimensions,
    Loops whose concatenated outputs depend on run-time data): they are built
    per concrete input shapes and loop iteration counts, and cached
    (loader/openvino/model.py). inputs()/outputs() report a dimension that
    is not known until compute() as 0; compute()'s results carry the real
    dimensions, which may include 0 (a loop that ran zero times concatenates
    nothing). Boolean IR tensors are uint8 0/1 data (WebNN has no boolean);
  * compute() rejects with the failure's error (an OperationError for a
    runaway loop) when running the graph fails, where dispatch() can only log;
  * a TFLite model's state (resource variables with CALL_ONCE initialisation,
    the variable tensors of LSTM/RNN operators) persists from one compute() to
    the next, as between LiteRT invocations (tflite/state.py); resetState(),
    our extension, puts it back to its value after load(). Each load() picks one
    signature, and each MLModel has its own state;
  * compute(inputs) takes a record by input name, or, when the model has one
    input, that input's {data, dimensions} alone (§3 example 1);
  * compute(inputs, outputs) (§3 example 3) fills the caller's output buffers
    in place and resolves to undefined; `outputs` is a record by output name,
    or one {data, dimensions} when the model has one output;
  * results are {data, dimensions}, `data` a typed array of the output's type
    (a 1-D numpy array on the host); with one output compute resolves to that
    tensor, otherwise to a record by output name (§3, after example 3).
"""
from __future__ import annotations

import time

import numpy as np

from ..api.builder import MLGraphBuilder
from ..api.context import MLContext
from ..api.idl import operation, register_interface
from ..base.datatypes import DATA_TYPES
from ..base.errors import InvalidStateError, OperationError
from ..bindings import convert, convert_dictionary, js_kind
from . import openvino, tflite

# TFLite tensor type name -> MLDataType (the draft's enum).
_MODEL_DATA_TYPES = {
    "FLOAT32": "float32", "FLOAT16": "float16", "FLOAT64": "float64", "INT64": "int64", "UINT64": "uint64",
    "INT32": "int32", "UINT32": "uint32", "INT16": "int16", "UINT16": "uint16", "INT8": "int8",
    "UINT8": "uint8", "BOOL": "bool",
}


class MLModelLoader:
    @operation("MLModelLoader", "constructor")
    def __init__(self, context: MLContext):
        """new MLModelLoader(context)."""
        if context._is_lost:
            raise InvalidStateError("MLModelLoader: the context is lost")
        self._context = context

    async def load(self, model_buffer=None, options=None):
        """load(modelBuffer): parse, translate into a graph, build it; resolves to an MLModel."""
        started = time.perf_counter()
        source = convert(model_buffer, "BufferSource", "load: modelBuffer")
        extra = convert_dictionary("MLModelLoadOptions", options, "load: options")
        signature = extra.get("signature")
        max_iterations = extra.get("maxIterations")
        context = self._context
        if context._is_lost:
            raise InvalidStateError("load: the context is lost")
        data = source.to_bytes()
        if openvino.looks_like_ir(data):
            weights = extra.get("weights")
            ir_model = await openvino.load(context, data, weights.to_bytes() if weights is not None else b"",
                                           max_iterations)
            model = MLModel(context, None, [], [], {}, {}, runner=ir_model)
            model._load_seconds = time.perf_counter() - started
            return model
        builder = MLGraphBuilder(context)
        inputs, outputs, graph_outputs, plan = await tflite.translate(builder, data, signature,
                                                                      max_iterations=max_iterations)
        graph = await builder.build(graph_outputs)
        input_tensors = {}
        for info in inputs:
            input_tensors[info.graph_name] = await context.createTensor(
                {"dataType": info.data_type, "shape": list(info.shape), "writable": True})
        output_tensors = {}
        for info in outputs:
            output_tensors[info.graph_name] = await context.createTensor(
                {"dataType": info.data_type, "shape": list(info.shape), "readable": True})
        state = await tflite.ModelState.create(context, plan) if plan is not None else None
        model = MLModel(context, graph, inputs, outputs, input_tensors, output_tensors, state=state)
        model._load_seconds = time.perf_counter() - started
        return model


class MLModel:
    def __init__(self, context, graph, inputs, outputs, input_tensors, output_tensors, runner=None, state=None):
        self._context = context
        self._runner = runner        # an openvino.IRModel, which builds and runs its own graphs
        self._state = state          # a tflite.ModelState: what the model keeps between compute() calls
        self._graph = graph
        self._inputs = inputs
        self._outputs = outputs
        self._input_tensors = input_tensors
        self._output_tensors = output_tensors

    @operation("MLModel")
    def inputs(self) -> list[dict]:
        if self._runner is not None:
            return self._runner.inputs()
        return [_info(i) for i in self._inputs]

    @operation("MLModel")
    def outputs(self) -> list[dict]:
        if self._runner is not None:
            return self._runner.outputs()
        return [_info(o) for o in self._outputs]

    @operation("MLModel")
    def resetState(self) -> None:
        """Our extension (idl/model_loader.idl): every state variable of the model
        (TFLite resource variables and variable tensors) back to its value after
        load(), CALL_ONCE initialisation included. Ordered on the context's
        timeline: computes called before it see the old state, later ones the new."""
        if self._context._is_lost:
            raise InvalidStateError("resetState: the model's context is lost")
        if self._state is not None:
            self._state.reset()

    async def compute(self, inputs=None, outputs=None):
        """compute(inputs) and compute(inputs, outputs); see the module docstring."""
        if self._runner is not None:
            return await self._compute_runner(inputs, outputs)
        if self._context._is_lost or self._graph._is_destroyed:
            raise InvalidStateError("compute: the model's context is lost")
        given = _tensors_by_name("inputs", inputs, self._inputs)
        for info in self._inputs:
            _check_tensor("compute", f"input {info.name!r}", given[info.name], info)
        into = None
        if outputs is not None and js_kind(outputs) != "undefined":
            into = _tensors_by_name("outputs", outputs, self._outputs)
            for info in self._outputs:
                _check_tensor("compute", f"output {info.name!r}", into[info.name], info)

        context = self._context
        used = self._graph._input_descriptors
        for info in self._inputs:
            if info.graph_name in used:
                context.writeTensor(self._input_tensors[info.graph_name], given[info.name]["data"].source)
        # The model's own tensors match its graph by construction, so dispatch's
        # checks are skipped; unlike dispatch(), which can only log a failure
        # (WebNN issue #778), compute() is told of it and rejects.
        failures: list = []
        feeds = {k: v for k, v in self._input_tensors.items() if k in used}
        results_into = dict(self._output_tensors)
        if self._state is not None:
            state_in, state_out = self._state.main_tensors(self._graph)
            feeds.update(state_in)
            results_into.update(state_out)
        context._enqueue_dispatch(self._graph, feeds, results_into, on_failure=failures.append)
        if self._state is not None:
            self._state.main_done()
        if into is not None:
            pending = [context.readTensor(self._output_tensors[o.graph_name], into[o.name]["data"].source)
                       for o in self._outputs]
            for promise in pending:
                await promise
            _raise_failure(failures)
            return None
        pending = [(o, context.readTensor(self._output_tensors[o.graph_name])) for o in self._outputs]
        results = {}
        for info, promise in pending:
            data = np.frombuffer(bytes(await promise), dtype=DATA_TYPES[info.data_type].numpy).copy()
            results[info.name] = {"data": data, "dimensions": list(info.shape)}
        _raise_failure(failures)
        if len(results) == 1:
            return next(iter(results.values()))
        return results

    async def _compute_runner(self, inputs, outputs):
        """compute() of a model that builds its graphs per input shapes (OpenVINO IR)."""
        if self._context._is_lost:
            raise InvalidStateError("compute: the model's context is lost")
        runner = self._runner
        in_infos, out_infos = runner.inputs(), runner.outputs()
        given = _tensors_by_name("inputs", inputs, [_Named(i["name"]) for i in in_infos])
        arrays = {}
        for info in in_infos:
            tensor = given[info["name"]]
            data_type = _data_type_of(tensor["data"], info["type"])
            dims = [int(d) for d in tensor["dimensions"]]
            runner.check_input(info["name"], data_type, dims)
            dt = DATA_TYPES[data_type]
            expected = int(np.prod(dims, dtype=np.int64)) * dt.byte_size
            if tensor["data"].byte_length != expected:
                raise TypeError(f"compute: input {info['name']!r} holds {tensor['data'].byte_length} bytes, "
                                f"{dims} {data_type} needs {expected}")
            arrays[info["name"]] = np.frombuffer(tensor["data"].to_bytes(), dtype=dt.numpy).reshape(dims)
        into = None
        if outputs is not None and js_kind(outputs) != "undefined":
            into = _tensors_by_name("outputs", outputs, [_Named(o["name"]) for o in out_infos])
        results = await runner.run(arrays)
        if into is not None:
            for name, array in results.items():
                target = into[name]
                if list(target["dimensions"]) != list(array.shape) or target["data"].byte_length != array.nbytes:
                    raise TypeError(f"compute: output {name!r} is {list(array.shape)} ({array.nbytes} bytes); the "
                                    f"buffer given is {list(target['dimensions'])} ({target['data'].byte_length} "
                                    "bytes)")
            for name, array in results.items():
                into[name]["data"].copy_from(np.ascontiguousarray(array))
            return None
        out = {name: {"data": array.reshape(-1), "dimensions": list(array.shape)} for name, array in results.items()}
        if len(out) == 1:
            return next(iter(out.values()))
        return out


class _Named:
    def __init__(self, name):
        self.name = name


def _data_type_of(data, expected: str) -> str:
    """The MLOperandDataType of a typed array (Uint16Array is float16 where float16 is expected)."""
    if expected == "float16" and data.element_type == "Uint16Array":
        return "float16"
    for name, dt in DATA_TYPES.items():
        if dt.view_type == data.element_type:
            return name
    return str(data.element_type)


def _raise_failure(failures: list) -> None:
    if failures:
        exc = failures[0]
        if isinstance(exc, OperationError):
            raise exc
        raise OperationError(f"compute: running the model failed: {exc}")


def _info(info) -> dict:
    return {"name": info.name, "type": _MODEL_DATA_TYPES.get(info.tensor.type_name, "unknown"),
            "dimensions": list(info.shape)}


def _tensors_by_name(what: str, value, infos) -> dict:
    """A record<DOMString, MLModelTensor>, or one MLModelTensor when there is one tensor."""
    if len(infos) == 1:
        try:
            single = convert_dictionary("MLModelTensor", value, f"compute: {what}")
        except TypeError:
            single = None
        if single is not None:
            return {infos[0].name: single}
    record = convert(value, "record<DOMString, MLModelTensor>", f"compute: {what}")
    names = [i.name for i in infos]
    for name in record:
        if name not in names:
            raise TypeError(f"compute: the model has no {what[:-1]} named {name!r} (it has {', '.join(names)})")
    for name in names:
        if name not in record:
            raise TypeError(f"compute: {what} lacks {name!r}")
    return record


def _check_tensor(method: str, what: str, tensor: dict, info) -> None:
    dims = list(tensor["dimensions"])
    if dims != list(info.shape):
        raise TypeError(f"{method}: {what} has dimensions {dims}, the model expects {list(info.shape)}")
    data = tensor["data"]
    dt = DATA_TYPES[info.data_type]
    allowed = {dt.view_type} | ({"Uint16Array"} if info.data_type == "float16" else set())
    if data.element_type not in allowed:
        raise TypeError(f"{method}: {what} is a {data.element_type}, the model's {info.data_type} data "
                        f"needs a {dt.view_type}")
    expected = int(np.prod(info.shape, dtype=np.int64)) * dt.byte_size
    if data.byte_length != expected:
        raise TypeError(f"{method}: {what} holds {data.byte_length} bytes, {list(info.shape)} {info.data_type} "
                        f"needs {expected}")


register_interface("MLModelLoader", MLModelLoader)
register_interface("MLModel", MLModel)
