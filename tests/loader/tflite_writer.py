"""Test-only: write small .tflite models with LiteRT's own generated schema
classes (ai_edge_litert.schema_py_generated + flatbuffers), so the models the
importer is tested on come from the reference implementation's writer, not ours."""
from __future__ import annotations

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema

TYPES = {np.dtype(np.float32): schema.TensorType.FLOAT32, np.dtype(np.float16): schema.TensorType.FLOAT16,
         np.dtype(np.int32): schema.TensorType.INT32, np.dtype(np.int64): schema.TensorType.INT64,
         np.dtype(np.int8): schema.TensorType.INT8, np.dtype(np.uint8): schema.TensorType.UINT8,
         np.dtype(np.bool_): schema.TensorType.BOOL}


# Operators whose LiteRT kernel is registered from a version above 1 only.
MIN_VERSIONS = {"BROADCAST_TO": 2}


class SubGraph:
    def __init__(self, model: "ModelWriter", name: str = ""):
        self.model = model
        self.graph = schema.SubGraphT()
        self.graph.name = name
        self.graph.tensors, self.graph.operators = [], []

    def tensor(self, shape, dtype=np.float32, data=None, name=None, scale=None, zero_point=None,
               axis=0, sparsity=None, variable=False) -> int:
        """A tensor; variable=True makes it a variable tensor (state the interpreter keeps)."""
        t = schema.TensorT()
        t.shape = list(shape)
        t.isVariable = variable
        t.type = TYPES[np.dtype(dtype)]
        t.name = name or f"t{len(self.graph.tensors)}"
        if data is not None:
            t.buffer = self.model.buffer(np.asarray(data, dtype=dtype).tobytes())
        if sparsity is not None:
            t.sparsity = sparsity
        if scale is not None:
            q = schema.QuantizationParametersT()
            q.scale = list(np.atleast_1d(scale).astype(float))
            q.zeroPoint = list(np.atleast_1d(zero_point if zero_point is not None else 0).astype(int))
            q.quantizedDimension = axis
            t.quantization = q
        self.graph.tensors.append(t)
        return len(self.graph.tensors) - 1

    def const(self, value, dtype=None, **kw) -> int:
        value = np.asarray(value, dtype=dtype)
        return self.tensor(value.shape, value.dtype, value, **kw)

    def op(self, code, inputs, outputs, options=None, custom_options: bytes | None = None, custom: str | None = None):
        o = schema.OperatorT()
        o.opcodeIndex = self.model.opcode(code, custom)
        o.inputs, o.outputs = list(inputs), list(outputs)
        if options is not None:
            kind = type(options).__name__[:-1]
            if hasattr(schema.BuiltinOptions, kind):
                o.builtinOptionsType, o.builtinOptions = getattr(schema.BuiltinOptions, kind), options
            else:       # the newer operators' options (StableHLO, REDUCE_WINDOW) are a second union
                o.builtinOptions2Type, o.builtinOptions2 = getattr(schema.BuiltinOptions2, kind), options
        if custom_options is not None:
            o.customOptions = list(custom_options)
        self.graph.operators.append(o)

    def io(self, inputs, outputs):
        self.graph.inputs, self.graph.outputs = list(inputs), list(outputs)


class ModelWriter:
    def __init__(self):
        self.model = schema.ModelT()
        self.model.version = 3
        self.model.buffers = [schema.BufferT()]
        self.model.operatorCodes, self.model.subgraphs = [], []
        self.model.signatureDefs = []

    def subgraph(self, name: str = "") -> SubGraph:
        """A new subgraph; its index is `.index` (the first is the main graph,
        the others e.g. a WHILE's cond and body)."""
        g = SubGraph(self, name)
        g.index = len(self.model.subgraphs)
        self.model.subgraphs.append(g.graph)
        return g

    def buffer(self, data: bytes) -> int:
        b = schema.BufferT()
        b.data = np.frombuffer(data, np.uint8).copy()
        self.model.buffers.append(b)
        return len(self.model.buffers) - 1

    def opcode(self, code, custom=None) -> int:
        if isinstance(code, str):
            code = getattr(schema.BuiltinOperator, code)
        for i, c in enumerate(self.model.operatorCodes):
            if c.builtinCode == code and c.customCode == custom:
                return i
        c = schema.OperatorCodeT()
        c.builtinCode = code
        c.deprecatedBuiltinCode = min(code, 127)
        c.customCode = custom
        c.version = MIN_VERSIONS.get(next((k for k, v in vars(schema.BuiltinOperator).items() if v == code), ""), 1)
        self.model.operatorCodes.append(c)
        return len(self.model.operatorCodes) - 1

    def signature(self, key: str, subgraph: int, inputs: dict, outputs: dict):
        s = schema.SignatureDefT()
        s.signatureKey, s.subgraphIndex = key, subgraph
        s.inputs, s.outputs = [], []
        for target, items in ((s.inputs, inputs), (s.outputs, outputs)):
            for name, index in items.items():
                m = schema.TensorMapT()
                m.name, m.tensorIndex = name, index
                target.append(m)
        self.model.signatureDefs.append(s)

    def finish(self) -> bytes:
        builder = flatbuffers.Builder(1024)
        builder.Finish(self.model.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())


def options(name: str, **fields):
    o = getattr(schema, f"{name}T")()
    for key, value in fields.items():
        setattr(o, key, value)
    return o
