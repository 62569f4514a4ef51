"""The OpenVINO IR importer: an IR v10/v11 model (.xml with its .bin weights)
translated into ordinary MLGraphBuilder calls.

  ir.py               the safe XML reader: layers, edges, bounds-checked constants
  translate.py        the walk over a graph, values (operand / constant / empty)
  ops_elementwise.py  arithmetic, comparisons, logic, Select, Relu/Sigmoid/Tanh, Convert, Softmax
  ops_activation.py   unary math and the other activations (Gelu, HSwish, Mish, Clamp, PRelu, ...)
  ops_reduce.py       Reduce*, MVN, BatchNormInference, NormalizeL2, LRN, CumSum, TopK (k = 1)
  ops_nn.py           MatMul, the convolutions and deconvolutions, pooling
  ops_resize.py       Interpolate-4/11
  ops_shape.py        Concat, Reshape, Squeeze, Unsqueeze, Transpose, Gather, (Strided)Slice, Pad,
                      Broadcast, Tile, Split, DepthToSpace, SpaceToDepth; ShapeOf and Range folded
  ops_index.py        GatherND, GatherElements, ScatterUpdate, ScatterNDUpdate, ScatterElementsUpdate
  ops_einsum.py       Einsum as transpose / reduceSum / matmul
  ops_attention.py    ScaledDotProductAttention spelled out (matmul, softmax, masks)
  ops_recurrent.py    LSTMSequence, GRUSequence, LSTMCell, GRUCell onto lstm / gru and their cells; RNN unrolled
  ops_color.py        NV12/I420 to RGB/BGR
  ops_ctc.py          CTCGreedyDecoder(SeqLen): argMax, keep rules, packed by a scatter
  ops_fourier.py      DFT, IDFT, RDFT as products with constant cosine/sine matrices
  loop.py             Loop-5 onto the builder's `loop`
  model.py            specialisation per input shapes and Loop iteration counts, and running
  registry.py         which IR types are translated (TRANSLATORS), handled by the walk
                      (STRUCTURAL) or refused and why (UNSUPPORTED); read by tools/gen_loader_tables.py
"""
from __future__ import annotations

from .model import IRModel
from .registry import TRANSLATORS


def looks_like_ir(data: bytes) -> bool:
    """An IR .xml starts (after an optional UTF-8 byte order mark and white space)
    with '<'; a TFLite flatbuffer starts with a 4-byte offset, never with that."""
    head = data[:64]
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    return head.lstrip(b" \t\r\n").startswith(b"<")


async def load(context, xml: bytes, weights: bytes, max_iterations: int | None = None) -> IRModel:
    model = IRModel(context, xml, weights, TRANSLATORS, max_iterations)
    await model.prepare()
    return model
