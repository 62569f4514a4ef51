"""ScaledDotProductAttention-13 spelled out in WebNN operators:
softmax(Q K^T scale + mask) V over the last two axes.

  * scale: the optional fifth input, else 1 / sqrt(E) (E: the last dimension of Q);
  * attention_mask (fourth input): boolean (false positions get -inf) or
    added to the scores;
  * causal: positions j > i of each [L, S] block get -inf (the lower triangle
    of ones(L, S), diagonal included, is kept), and the mask input is ignored.
"""
from __future__ import annotations

import math

import numpy as np


def _minus_infinity(t, like):
    return t.operand(np.array(-np.inf, dtype=np.dtype(like.dataType)))


def scaled_dot_product_attention(t, inputs):
    t.arity(inputs, 3, 4, 5)
    q, k, v = (t.operand(x) for x in inputs[:3])
    if q.dataType not in ("float32", "float16") or len(q.shape) < 2 or len(k.shape) < 2:
        raise t.unsupported(f"attention over {q.dataType} of rank {len(q.shape)} is not supported (floats, rank >= 2)")
    rank = len(k.shape)
    k_t = t.b.transpose(k, {"permutation": list(range(rank - 2)) + [rank - 1, rank - 2]})
    scores = t.b.matmul(q, k_t)
    if len(inputs) == 5:
        scale = t.operand(inputs[4])
    else:
        scale = t.operand(np.array(1 / math.sqrt(q.shape[-1]), dtype=np.dtype(q.dataType)))
    scores = t.b.mul(scores, scale)
    causal = t.attr_flag("causal")
    length, source = scores.shape[-2], scores.shape[-1]
    if causal:
        keep = t.operand(np.tril(np.ones((length, source), np.uint8)))
        scores = t.b.where(keep, scores, _minus_infinity(t, scores))
    elif len(inputs) >= 4:
        mask = inputs[3]
        if t.data_type(mask) == "uint8":            # boolean: true keeps the position
            scores = t.b.where(t.operand(mask), scores, _minus_infinity(t, scores))
        else:
            scores = t.b.add(scores, t.operand(mask))
    weights = t.b.softmax(scores, len(scores.shape) - 1)
    return [t.b.matmul(weights, v)]


TRANSLATORS = {"ScaledDotProductAttention": scaled_dot_product_attention}
