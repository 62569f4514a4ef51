"""The subset of the TFLite schema (tensorflow/lite/schema/schema.fbs) we read,
parsed eagerly into plain objects so that the translation never touches raw bytes.

Field slot numbers are the fields' positions in schema.fbs (a union takes two
slots: its type, then its value).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...base.errors import NotSupportedError
from .flatbuffer import Buffer, Table

FILE_IDENTIFIER = b"TFL3"

# TensorType -> (MLOperandDataType or None, numpy dtype or None, name)
TENSOR_TYPES = {
    0: ("float32", np.float32, "FLOAT32"), 1: ("float16", np.float16, "FLOAT16"),
    2: ("int32", np.int32, "INT32"), 3: ("uint8", np.uint8, "UINT8"), 4: ("int64", np.int64, "INT64"),
    5: (None, None, "STRING"), 6: (None, np.bool_, "BOOL"), 7: (None, np.int16, "INT16"),
    8: (None, None, "COMPLEX64"), 9: ("int8", np.int8, "INT8"), 10: (None, np.float64, "FLOAT64"),
    11: (None, None, "COMPLEX128"), 12: ("uint64", np.uint64, "UINT64"), 13: (None, None, "RESOURCE"),
    14: (None, None, "VARIANT"), 15: ("uint32", np.uint32, "UINT32"), 16: (None, np.uint16, "UINT16"),
    17: (None, None, "INT4"),
}

# BuiltinOperator values (schema.fbs).
BUILTIN_NAMES = {
    0: "ADD", 1: "AVERAGE_POOL_2D", 2: "CONCATENATION", 3: "CONV_2D", 4: "DEPTHWISE_CONV_2D",
    5: "DEPTH_TO_SPACE", 6: "DEQUANTIZE", 7: "EMBEDDING_LOOKUP", 8: "FLOOR", 9: "FULLY_CONNECTED",
    10: "HASHTABLE_LOOKUP", 11: "L2_NORMALIZATION", 12: "L2_POOL_2D", 13: "LOCAL_RESPONSE_NORMALIZATION",
    14: "LOGISTIC", 15: "LSH_PROJECTION", 16: "LSTM", 17: "MAX_POOL_2D", 18: "MUL", 19: "RELU",
    20: "RELU_N1_TO_1", 21: "RELU6", 22: "RESHAPE", 23: "RESIZE_BILINEAR", 24: "RNN", 25: "SOFTMAX",
    26: "SPACE_TO_DEPTH", 27: "SVDF", 28: "TANH", 29: "CONCAT_EMBEDDINGS", 30: "SKIP_GRAM", 31: "CALL",
    32: "CUSTOM", 33: "EMBEDDING_LOOKUP_SPARSE", 34: "PAD", 35: "UNIDIRECTIONAL_SEQUENCE_RNN",
    36: "GATHER", 37: "BATCH_TO_SPACE_ND", 38: "SPACE_TO_BATCH_ND", 39: "TRANSPOSE", 40: "MEAN",
    41: "SUB", 42: "DIV", 43: "SQUEEZE", 44: "UNIDIRECTIONAL_SEQUENCE_LSTM", 45: "STRIDED_SLICE",
    46: "BIDIRECTIONAL_SEQUENCE_RNN", 47: "EXP", 48: "TOPK_V2", 49: "SPLIT", 50: "LOG_SOFTMAX",
    51: "DELEGATE", 52: "BIDIRECTIONAL_SEQUENCE_LSTM", 53: "CAST", 54: "PRELU", 55: "MAXIMUM",
    56: "ARG_MAX", 57: "MINIMUM", 58: "LESS", 59: "NEG", 60: "PADV2", 61: "GREATER",
    62: "GREATER_EQUAL", 63: "LESS_EQUAL", 64: "SELECT", 65: "SLICE", 66: "SIN", 67: "TRANSPOSE_CONV",
    68: "SPARSE_TO_DENSE", 69: "TILE", 70: "EXPAND_DIMS", 71: "EQUAL", 72: "NOT_EQUAL", 73: "LOG",
    74: "SUM", 75: "SQRT", 76: "RSQRT", 77: "SHAPE", 78: "POW", 79: "ARG_MIN", 80: "FAKE_QUANT",
    81: "REDUCE_PROD", 82: "REDUCE_MAX", 83: "PACK", 84: "LOGICAL_OR", 85: "ONE_HOT",
    86: "LOGICAL_AND", 87: "LOGICAL_NOT", 88: "UNPACK", 89: "REDUCE_MIN", 90: "FLOOR_DIV",
    91: "REDUCE_ANY", 92: "SQUARE", 93: "ZEROS_LIKE", 94: "FILL", 95: "FLOOR_MOD", 96: "RANGE",
    97: "RESIZE_NEAREST_NEIGHBOR", 98: "LEAKY_RELU",
    99: "SQUARED_DIFFERENCE", 100: "MIRROR_PAD", 101: "ABS", 102: "SPLIT_V", 103: "UNIQUE",
    104: "CEIL", 105: "REVERSE_V2", 106: "ADD_N", 107: "GATHER_ND", 108: "COS", 109: "WHERE",
    110: "RANK", 111: "ELU", 112: "REVERSE_SEQUENCE", 113: "MATRIX_DIAG", 114: "QUANTIZE",
    115: "MATRIX_SET_DIAG", 116: "ROUND", 117: "HARD_SWISH", 118: "IF", 119: "WHILE",
    120: "NON_MAX_SUPPRESSION_V4", 121: "NON_MAX_SUPPRESSION_V5", 122: "SCATTER_ND",
    123: "SELECT_V2", 124: "DENSIFY", 125: "SEGMENT_SUM", 126: "BATCH_MATMUL",
    # Codes above 126 exist only in builtin_code (deprecated_builtin_code holds 127).
    128: "CUMSUM", 129: "CALL_ONCE", 130: "BROADCAST_TO", 131: "RFFT2D", 132: "CONV_3D", 133: "IMAG",
    134: "REAL", 135: "COMPLEX_ABS", 136: "HASHTABLE", 137: "HASHTABLE_FIND", 138: "HASHTABLE_IMPORT",
    139: "HASHTABLE_SIZE", 140: "REDUCE_ALL", 141: "CONV_3D_TRANSPOSE", 142: "VAR_HANDLE",
    143: "READ_VARIABLE", 144: "ASSIGN_VARIABLE", 145: "BROADCAST_ARGS", 146: "RANDOM_STANDARD_NORMAL",
    147: "BUCKETIZE", 148: "RANDOM_UNIFORM", 149: "MULTINOMIAL", 150: "GELU", 151: "DYNAMIC_UPDATE_SLICE",
    152: "RELU_0_TO_1", 153: "UNSORTED_SEGMENT_PROD", 154: "UNSORTED_SEGMENT_MAX", 155: "UNSORTED_SEGMENT_SUM",
    156: "ATAN2", 157: "UNSORTED_SEGMENT_MIN", 158: "SIGN", 159: "BITCAST", 160: "BITWISE_XOR",
    161: "RIGHT_SHIFT", 162: "STABLEHLO_LOGISTIC", 163: "STABLEHLO_ADD", 164: "STABLEHLO_DIVIDE",
    165: "STABLEHLO_MULTIPLY", 166: "STABLEHLO_MAXIMUM", 167: "STABLEHLO_RESHAPE", 168: "STABLEHLO_CLAMP",
    169: "STABLEHLO_CONCATENATE", 170: "STABLEHLO_BROADCAST_IN_DIM", 171: "STABLEHLO_CONVOLUTION",
    172: "STABLEHLO_SLICE", 173: "STABLEHLO_CUSTOM_CALL", 174: "STABLEHLO_REDUCE", 175: "STABLEHLO_ABS",
    176: "STABLEHLO_AND", 177: "STABLEHLO_COSINE", 178: "STABLEHLO_EXPONENTIAL", 179: "STABLEHLO_FLOOR",
    180: "STABLEHLO_LOG", 181: "STABLEHLO_MINIMUM", 182: "STABLEHLO_NEGATE", 183: "STABLEHLO_OR",
    184: "STABLEHLO_POWER", 185: "STABLEHLO_REMAINDER", 186: "STABLEHLO_RSQRT", 187: "STABLEHLO_SELECT",
    188: "STABLEHLO_SUBTRACT", 189: "STABLEHLO_TANH", 190: "STABLEHLO_SCATTER", 191: "STABLEHLO_COMPARE",
    192: "STABLEHLO_CONVERT", 193: "STABLEHLO_DYNAMIC_SLICE", 194: "STABLEHLO_DYNAMIC_UPDATE_SLICE",
    195: "STABLEHLO_PAD", 196: "STABLEHLO_IOTA", 197: "STABLEHLO_DOT_GENERAL", 198: "STABLEHLO_REDUCE_WINDOW",
    199: "STABLEHLO_SORT", 200: "STABLEHLO_WHILE", 201: "STABLEHLO_GATHER", 202: "STABLEHLO_TRANSPOSE",
    203: "DILATE", 204: "STABLEHLO_RNG_BIT_GENERATOR", 205: "REDUCE_WINDOW", 206: "STABLEHLO_COMPOSITE",
    207: "STABLEHLO_SHIFT_LEFT", 208: "STABLEHLO_CBRT", 209: "STABLEHLO_CASE",
}
# 127 is PLACEHOLDER_FOR_GREATER_OP_CODES, a marker in deprecated_builtin_code, not an operator.

# Hard limits that keep a hostile file from making the importer do unbounded work.
MAX_RANK = 8


@dataclass
class Quantization:
    scale: np.ndarray            # float32, one per channel (or one)
    zero_point: np.ndarray       # int64, same length
    axis: int


@dataclass
class DimensionMetadata:
    dense: bool
    dense_size: int
    segments: np.ndarray | None
    indices: np.ndarray | None


@dataclass
class Sparsity:
    traversal_order: list[int]
    block_map: list[int]
    dims: list[DimensionMetadata]


@dataclass
class Tensor:
    index: int
    name: str
    shape: tuple[int, ...]
    type_code: int
    buffer: int
    quantization: Quantization | None
    sparsity: Sparsity | None
    shape_signature: tuple[int, ...] | None
    is_variable: bool = False      # state the interpreter keeps between invocations (RNN/LSTM states)

    @property
    def type_name(self) -> str:
        return TENSOR_TYPES.get(self.type_code, (None, None, f"type {self.type_code}"))[2]

    @property
    def ml_type(self) -> str | None:
        return TENSOR_TYPES.get(self.type_code, (None,))[0]

    @property
    def numpy_type(self):
        return TENSOR_TYPES.get(self.type_code, (None, None))[1]


@dataclass
class Operator:
    index: int
    opcode: "OperatorCode"
    inputs: list[int]
    outputs: list[int]
    options: Table | None          # the builtin options table, read by the op's translator
    options_type: int
    custom_options: bytes | None
    options_2: Table | None = None  # builtin_options_2: the newer operators' options (StableHLO, REDUCE_WINDOW)


@dataclass
class OperatorCode:
    builtin: int
    custom: str | None
    version: int

    @property
    def name(self) -> str:
        if self.builtin == 32:
            return self.custom or "CUSTOM"
        return BUILTIN_NAMES.get(self.builtin, f"builtin operator {self.builtin}")


@dataclass
class SubGraph:
    index: int
    name: str
    tensors: list[Tensor]
    inputs: list[int]
    outputs: list[int]
    operators: list[Operator]


@dataclass
class Signature:
    key: str
    subgraph: int
    inputs: dict[str, int]       # signature name -> tensor index
    outputs: dict[str, int]


@dataclass
class Model:
    version: int
    subgraphs: list[SubGraph]
    buffers: list[memoryview | None]
    signatures: list[Signature] = field(default_factory=list)


def parse(data: bytes) -> Model:
    """Parse a .tflite file; DataError (FlatBufferError) for malformed bytes."""
    buf = Buffer(data)
    root = buf.root(FILE_IDENTIFIER)
    version = root.scalar(0, "u32")
    if version != 3:
        raise NotSupportedError(f"load: TFLite schema version {version} is not supported (only version 3)")
    codes = [_operator_code(t) for t in root.tables(1, "operator_codes")]
    buffers = [_buffer(buf, t) for t in root.tables(4, "buffers")]
    subgraphs = [_subgraph(i, t, codes, len(buffers)) for i, t in enumerate(root.tables(2, "subgraphs"))]
    if not subgraphs:
        raise buf.fail("it has no subgraph")
    signatures = [_signature(t, subgraphs, buf) for t in root.tables(7, "signature_defs")]
    return Model(version, subgraphs, buffers, signatures)


def _operator_code(t: Table) -> OperatorCode:
    deprecated = t.scalar(0, "i8")
    builtin = t.scalar(3, "i32")
    # Files written before builtin_code existed only set deprecated_builtin_code (< 127).
    code = max(builtin, deprecated)
    return OperatorCode(code, t.string(1, "custom_code"), t.scalar(2, "i32", 1))


def _buffer(buf: Buffer, t: Table) -> memoryview | None:
    data = t.bytes(0, "buffer data")
    if data is not None and len(data):
        return data
    offset, size = t.scalar(1, "u64"), t.scalar(2, "u64")
    if offset > 1:
        # Models over 2 GB keep buffers after the flatbuffer, addressed from the file's start.
        if offset + size > buf.size:
            raise buf.fail(f"a buffer at byte {offset} (+{size}) lies outside the file")
        return buf.data[offset:offset + size]
    return None


def _subgraph(index: int, t: Table, codes: list[OperatorCode], buffer_count: int) -> SubGraph:
    buf = t.buf
    what = f"subgraph {index}"
    tensors = [_tensor(i, tt, buffer_count) for i, tt in enumerate(t.tables(0, f"{what} tensors"))]
    n = len(tensors)

    def indices(values: list[int], where: str, optional_ok: bool) -> list[int]:
        for v in values:
            if not (0 <= v < n or (optional_ok and v == -1)):
                raise buf.fail(f"{where} refers to tensor {v}, but {what} has {n} tensors")
        return values

    operators = []
    for i, ot in enumerate(t.tables(3, f"{what} operators")):
        opcode_index = ot.scalar(0, "u32")
        if opcode_index >= len(codes):
            raise buf.fail(f"{what} operator {i} uses operator code {opcode_index}, the model has {len(codes)}")
        custom = ot.bytes(5, "custom_options")
        operators.append(Operator(
            i, codes[opcode_index],
            indices(ot.ints(1, "operator inputs"), f"{what} operator {i}'s inputs", True),
            indices(ot.ints(2, "operator outputs"), f"{what} operator {i}'s outputs", False),
            ot.table(4, "builtin_options"), ot.scalar(3, "u8"),
            None if custom is None else bytes(custom), ot.table(12, "builtin_options_2")))
    return SubGraph(index, t.string(4, "subgraph name") or "",
                    tensors,
                    indices(t.ints(1, f"{what} inputs"), f"{what} inputs", False),
                    indices(t.ints(2, f"{what} outputs"), f"{what} outputs", False),
                    operators)


def _tensor(index: int, t: Table, buffer_count: int) -> Tensor:
    buf = t.buf
    shape = tuple(t.ints(0, "tensor shape"))
    if len(shape) > MAX_RANK:
        raise NotSupportedError(f"load: tensor {index} has rank {len(shape)}; at most {MAX_RANK} is supported")
    buffer = t.scalar(2, "u32")
    if buffer >= max(buffer_count, 1) and buffer != 0:
        raise buf.fail(f"tensor {index} uses buffer {buffer}, the model has {buffer_count}")
    signature = t.array(7, "i32", "shape_signature")
    return Tensor(index, t.string(3, "tensor name") or f"tensor_{index}", shape, t.scalar(1, "i8"), buffer,
                  _quantization(t.table(4, "quantization")), _sparsity(t.table(6, "sparsity")),
                  None if signature is None else tuple(int(v) for v in signature), bool(t.scalar(5, "bool", False)))


def _quantization(t: Table | None) -> Quantization | None:
    if t is None:
        return None
    scale = t.array(2, "f32", "quantization scale")
    zero = t.array(3, "i64", "quantization zero_point")
    if scale is None or len(scale) == 0:
        return None
    if zero is None or len(zero) == 0:
        zero = np.zeros(len(scale), np.int64)
    if len(zero) != len(scale):
        raise t.buf.fail(f"quantization has {len(scale)} scales but {len(zero)} zero points")
    return Quantization(np.array(scale, np.float32), np.array(zero, np.int64), t.scalar(6, "i32"))


def _sparsity(t: Table | None) -> Sparsity | None:
    if t is None:
        return None
    dims = []
    for d in t.tables(2, "dim_metadata"):
        dense = d.scalar(0, "i8") == 0
        dims.append(DimensionMetadata(dense, d.scalar(1, "i32"),
                                      None if dense else _index_vector(d, 2, "array_segments"),
                                      None if dense else _index_vector(d, 4, "array_indices")))
    return Sparsity(t.ints(0, "traversal_order"), t.ints(1, "block_map"), dims)


def _index_vector(t: Table, type_slot: int, what: str) -> np.ndarray:
    kind = {1: "i32", 2: "u16", 3: "u8"}.get(t.scalar(type_slot, "u8"))
    inner = t.table(type_slot + 1, what)
    if kind is None or inner is None:
        raise t.buf.fail(f"sparsity {what} is missing")
    values = inner.array(0, kind, what)
    return np.zeros(0, np.int64) if values is None else values.astype(np.int64)


def _signature(t: Table, subgraphs: list[SubGraph], buf: Buffer) -> Signature:
    index = t.scalar(4, "u32")
    if index >= len(subgraphs):
        raise buf.fail(f"a signature refers to subgraph {index}, the model has {len(subgraphs)}")
    n = len(subgraphs[index].tensors)

    def maps(slot: int, what: str) -> dict[str, int]:
        out = {}
        for m in t.tables(slot, what):
            tensor = m.scalar(1, "u32")
            if tensor >= n:
                raise buf.fail(f"signature {what} refers to tensor {tensor}, subgraph {index} has {n}")
            out[m.string(0, "signature tensor name") or f"{what}_{len(out)}"] = tensor
        return out

    return Signature(t.string(2, "signature_key") or f"signature_{index}", index,
                     maps(0, "inputs"), maps(1, "outputs"))
