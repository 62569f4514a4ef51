"""The registry of the OpenVINO IR importer: which IR operation types load, and
why the others do not.

Read by tools/gen_loader_tables.py, which renders the README's OpenVINO table
from it (keep the names and shapes of these three objects stable):

  TRANSLATORS  IR type name (as in the .xml's `type` attribute) -> translate(translator, inputs) -> outputs;
               the types whose layers the importer turns into MLGraphBuilder calls.
  STRUCTURAL   IR type name -> what it becomes; the types the graph walk (translate.py, loop.py) handles itself.
  UNSUPPORTED  IR type name -> why it is not translated (one sentence); the other operation types of
               OpenVINO's opsets 1-15. load() names these reasons in its NotSupportedError.

`table()` gives the three together as rows (type, supported, note), sorted by type.
A type may be supported for some versions, attributes or shapes only; its
translator then fails load() with a NotSupportedError that names the layer
and the case.
"""
from __future__ import annotations

from . import (ops_activation, ops_attention, ops_color, ops_ctc, ops_einsum, ops_elementwise, ops_fourier, ops_index,
               ops_nn, ops_recurrent, ops_reduce, ops_resize, ops_shape)

TRANSLATORS: dict = {}
for _module in (ops_elementwise, ops_activation, ops_reduce, ops_nn, ops_resize, ops_shape, ops_index, ops_einsum,
                ops_attention, ops_recurrent, ops_color, ops_ctc, ops_fourier):
    TRANSLATORS.update(_module.TRANSLATORS)

STRUCTURAL = {
    "Parameter": "a graph input (MLGraphBuilder.input)",
    "Const": "a constant (MLGraphBuilder.constant), or a value folded at load time",
    "Result": "a model output",
    "Loop": "our builder extension `loop` (Loop-5)",
}

# Reasons shared by several types.
_NO_DYNAMIC = "its output shape depends on the input values; WebNN operands have static shapes"
_NO_OPERATOR = "WebNN has no operator that computes it"
_NOT_YET = "not translated yet"
_NMS = ("a non-maximum suppression: it sorts every candidate box and suppresses them one after another, which "
        "WebNN cannot express at a practical size")
_DFT = "expressible as products with constant cosine/sine matrices (as DFT, IDFT and RDFT are), not translated yet"

UNSUPPORTED = {
    # Output shapes decided by data.
    "NonZero": _NO_DYNAMIC, "Unique": _NO_DYNAMIC, "NonMaxSuppression": _NO_DYNAMIC,
    "MatrixNms": _NO_DYNAMIC, "MulticlassNms": _NO_DYNAMIC, "NMSRotated": _NO_DYNAMIC,
    # Non-maximum suppression with padded, static outputs.
    "ExperimentalDetectronDetectionOutput": _NMS,
    "ExperimentalDetectronGenerateProposalsSingleImage": _NMS, "GenerateProposals": _NMS,
    "Proposal": _NMS, "DetectionOutput": _NMS,
    # Functions WebNN's operators cannot compute exactly.
    "Asin": _NO_OPERATOR, "Acos": _NO_OPERATOR, "Atan": _NO_OPERATOR, "Asinh": _NO_OPERATOR,
    "Acosh": _NO_OPERATOR, "Atanh": _NO_OPERATOR,
    "IRDFT": _DFT, "STFT": _DFT,
    "Inverse": "WebNN has no matrix inverse (no loop-free way to pivot)",
    "RandomUniform": "WebNN has no random numbers (and Philox's exact sequence is needed to match OpenVINO)",
    "BitwiseLeftShift": "WebNN has no bitwise operators on integers",
    "BitwiseRightShift": "WebNN has no bitwise operators on integers",
    "StringTensorPack": "WebNN has no string tensors", "StringTensorUnpack": "WebNN has no string tensors",
    "ReadValue": "stateful variables are not part of a WebNN graph",
    "Assign": "stateful variables are not part of a WebNN graph",
    "If": "not translated yet (WebNN has no conditional; `loop` covers Loop only)",
    "TensorIterator": _NOT_YET + " (Loop is)",
    "BinaryConvolution": "WebNN has no 1-bit convolution",
    "DeformableConvolution": "WebNN has no convolution with per-position sampling offsets",
    "DeformablePSROIPooling": _NO_OPERATOR,
    "GridSample": "WebNN has no sampling at data-dependent coordinates",
    "ROIAlign": "WebNN has no sampling at data-dependent coordinates",
    "ROIAlignRotated": "WebNN has no sampling at data-dependent coordinates",
    "ROIPooling": "WebNN has no sampling at data-dependent coordinates",
    "PSROIPooling": "WebNN has no sampling at data-dependent coordinates",
    "ExperimentalDetectronROIFeatureExtractor": "WebNN has no sampling at data-dependent coordinates",
    "ExperimentalDetectronPriorGridGenerator": _NOT_YET,
    "ExperimentalDetectronTopKROIs": _NO_DYNAMIC,
    "CTCLoss": _NOT_YET,
    "GatherTree": "a backward data-dependent walk WebNN cannot express without control flow",
    "FakeConvert": "WebNN has no float8 types",
    "PriorBox": _NOT_YET, "PriorBoxClustered": _NOT_YET,
    "Multinomial": "WebNN has no random numbers",
}


def table() -> list[tuple[str, bool, str]]:
    """(IR type, supported, note) for every type of the three dictionaries, sorted by type."""
    rows = [(name, True, note) for name, note in STRUCTURAL.items()]
    rows += [(name, True, "") for name in TRANSLATORS]
    rows += [(name, False, reason) for name, reason in UNSUPPORTED.items()]
    return sorted(rows, key=lambda row: row[0].lower())
