"""WPT's precision budgets for webnn conformance results, written from the rules its
`webnn/resources/utils.js` and conformance files state (our own implementation, no WPT code):

* results are compared in ULP of the output type: the distance between the IEEE bit
  patterns read as sign-magnitude integers (`tests.portable.expect.ulp_distance`), after
  an exact-equality shortcut (so +0 and -0 agree);
* a graph's budget is the SUM of its operators' budgets (subgraph tests): a fixed number
  per element-wise operator (table below; operators it does not list, e.g. add, count 0),
  and for the reductions a count of the lossy operations:
    conv2d / convTranspose2d   filterHeight * filterWidth * (inputChannels / groups) * 2
    gemm                       width * 2, +1 for alpha != 1, +1 for c (and +1 more for beta != 1)
    matmul                     K * 2 (the last dimension of a)
    softmax                    size of the softmax axis * 3 + 3
    layerNormalization         14 (layer_normalization.https.any.js)
    instanceNormalization      840 for float32, 8400 for float16

Portable: runs on CPython and inside Pyodide (numpy only).
"""
from __future__ import annotations

# Fixed budgets per element-wise operator, (float32, float16).
FIXED_ULP = {
    "batchNormalization": (6, 6), "clamp": (0, 0), "elu": (18, 18), "gelu": (18, 18),
    "hardSigmoid": (2, 2), "hardSwish": (4, 4), "leakyRelu": (1, 2), "linear": (2, 2),
    "prelu": (1, 1), "relu": (0, 0), "reshape": (0, 0), "sigmoid": (34, 10), "softplus": (18, 18),
    "softsign": (3, 3), "layerNormalization": (14, 14), "instanceNormalization": (840, 8400),
}


def fixed(op: str, data_type: str = "float32") -> int:
    """An element-wise operator's budget; 0 for operators WPT's table leaves out."""
    pair = FIXED_ULP.get(op)
    return 0 if pair is None else pair[0 if data_type == "float32" else 1]


def conv2d(filter_height: int, filter_width: int, input_channels: int, groups: int = 1) -> int:
    return filter_height * filter_width * (input_channels // groups) * 2


def gemm(width: int, alpha: float = 1.0, c: bool = False, beta: float = 1.0) -> int:
    budget = width * 2
    if alpha != 1.0:
        budget += 1
    if c and beta != 0.0:
        budget += 1 + (beta != 1.0)
    return budget


def matmul(k: int) -> int:
    return k * 2


def softmax(axis_size: int) -> int:
    return axis_size * 3 + 3
