"""A small BERT-style encoder layer in the form litert-torch writes one (the
operators issue 18's BERT needed: EMBEDDING_LOOKUP, SQUARED_DIFFERENCE in the
layer norm, BATCH_MATMUL attention, GELU), whole, against LiteRT."""
from __future__ import annotations

import numpy as np

from .helpers import litert_run, relative_error, webnn_run
from .tflite_writer import ModelWriter, options

RNG = np.random.default_rng(2018)
F32, I32 = np.float32, np.int32
TOKENS, WIDTH, VOCAB = 6, 8, 30


def rand(*shape, scale=0.5):
    return RNG.uniform(-scale, scale, shape).astype(F32)


def encoder_layer() -> bytes:
    w = ModelWriter()
    g = w.subgraph()

    def t(shape, dtype=F32, name=None):
        return g.tensor(shape, dtype, name=name)

    def op(code, inputs, shape, opts=None, dtype=F32, name=None):
        out = t(shape, dtype, name)
        g.op(code, inputs, [out], opts)
        return out

    axis2 = g.const(np.array([2], I32))
    ids = t([TOKENS], I32, "input_ids")
    embedded = op("EMBEDDING_LOOKUP", [ids, g.const(rand(VOCAB, WIDTH, scale=1.0))], [TOKENS, WIDTH])
    x = op("RESHAPE", [embedded, g.const(np.array([1, TOKENS, WIDTH], I32))], [1, TOKENS, WIDTH])
    x = op("ADD", [x, g.const(rand(1, TOKENS, WIDTH))], [1, TOKENS, WIDTH], options("AddOptions"))

    def layer_norm(v):
        mean = op("MEAN", [v, axis2], [1, TOKENS, 1], options("ReducerOptions", keepDims=True))
        variance = op("MEAN", [op("SQUARED_DIFFERENCE", [v, mean], [1, TOKENS, WIDTH]), axis2], [1, TOKENS, 1],
                      options("ReducerOptions", keepDims=True))
        scale = op("RSQRT", [op("ADD", [variance, g.const(np.array(1e-6, F32))], [1, TOKENS, 1],
                                options("AddOptions"))], [1, TOKENS, 1])
        centred = op("SUB", [v, mean], [1, TOKENS, WIDTH], options("SubOptions"))
        normed = op("MUL", [centred, scale], [1, TOKENS, WIDTH], options("MulOptions"))
        return op("ADD", [op("MUL", [normed, g.const(rand(WIDTH) + 1)], [1, TOKENS, WIDTH], options("MulOptions")),
                          g.const(rand(WIDTH))], [1, TOKENS, WIDTH], options("AddOptions"))

    def dense(v, units):
        return op("FULLY_CONNECTED", [v, g.const(rand(units, WIDTH)), g.const(rand(units, scale=0.1))],
                  [1, TOKENS, units], options("FullyConnectedOptions", keepNumDims=True))

    h = layer_norm(x)
    q, k, v = dense(h, WIDTH), dense(h, WIDTH), dense(h, WIDTH)
    scores = op("BATCH_MATMUL", [q, k], [1, TOKENS, TOKENS], options("BatchMatMulOptions", adjY=True))
    scores = op("MUL", [scores, g.const(np.array(WIDTH ** -0.5, F32))], [1, TOKENS, TOKENS], options("MulOptions"))
    probs = op("SOFTMAX", [scores], [1, TOKENS, TOKENS], options("SoftmaxOptions", beta=1.0))
    attended = op("BATCH_MATMUL", [probs, v], [1, TOKENS, WIDTH], options("BatchMatMulOptions"))
    x = op("ADD", [x, dense(attended, WIDTH)], [1, TOKENS, WIDTH], options("AddOptions"))
    hidden = op("GELU", [dense(layer_norm(x), WIDTH)], [1, TOKENS, WIDTH], options("GeluOptions"))
    y = op("ADD", [x, hidden], [1, TOKENS, WIDTH], options("AddOptions"), name="last_hidden_state")
    g.io([ids], [y])
    return w.finish()


def test_encoder_layer_matches_litert():
    model = encoder_layer()
    ids = np.array([3, 17, 0, 29, 17, 8], I32)
    reference = litert_run(model, {"input_ids": ids})["last_hidden_state"]
    ours = webnn_run(model, {"input_ids": ids})["last_hidden_state"]
    assert ours.shape == reference.shape == (1, TOKENS, WIDTH)
    assert relative_error(ours, reference) <= 1e-5
