"""A small random-weight BERT, written as a transformers.js model folder (test-only).

No model hub here, and no PyPI `transformers`: the encoder is written in torch with
BERT's structure (word + position + token-type embeddings, post-norm layers with
masked multi-head attention and exact GELU) and exported to ONNX with free batch and
sequence dimensions, as exporters write BERT checkpoints. Run without
freeDimensionOverrides, ORT cannot give WebNN the nodes of unknown shape: it makes
WebNN partitions of the int64 shape arithmetic (Shape, Gather, Concat...) and runs
the rest on its CPU EP (issue 19, item 15).

The folder is what transformers.js reads for a model id: config.json (model_type
"bert"), tokenizer.json (a WordPiece tokenizer in the `tokenizers` JSON format,
written here from a tiny vocabulary), tokenizer_config.json and onnx/model.onnx.
`reference()` gives the feature-extraction pipeline's expected output from
onnxruntime on the host: mean pooling over the attention mask, then L2 normalisation.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HIDDEN, HEADS, LAYERS, FF, MAX_POSITIONS = 32, 4, 2, 64, 64
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "a", "polyfill", "runs", "in", "every", "browser", "web", "##nn", "graph", "model", "fast",
         "small", "tensor", "python", "on", "numpy", ",", "."]
VOCAB = {token: index for index, token in enumerate(SPECIAL + WORDS)}
# Two sentences of different lengths, so the batch is padded and the mask matters.
SENTENCES = ["The polyfill runs WebNN in every browser.", "A small graph, on numpy."]
INPUT_NAMES = ["input_ids", "attention_mask", "token_type_ids"]


def expected_token_ids(text: str) -> list[int]:
    """The ids BERT's tokenizer gives `text` with this vocabulary, worked out by hand:
    lower-cased, split at spaces and punctuation, greedy longest-match word pieces."""
    ids = [VOCAB["[CLS]"]]
    for word in text.lower().replace(",", " , ").replace(".", " . ").split():
        start = 0
        while start < len(word):
            for end in range(len(word), start, -1):
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in VOCAB:
                    ids.append(VOCAB[piece])
                    start = end
                    break
            else:
                raise ValueError(f"{word!r} is not covered by the test vocabulary")
    return ids + [VOCAB["[SEP]"]]


def _encoder():
    import torch
    from torch import nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
            self.out = nn.Linear(HIDDEN, HIDDEN)
            self.norm1 = nn.LayerNorm(HIDDEN, eps=1e-12)
            self.ff1, self.ff2 = nn.Linear(HIDDEN, FF), nn.Linear(FF, HIDDEN)
            self.norm2 = nn.LayerNorm(HIDDEN, eps=1e-12)

        def forward(self, x, additive_mask):
            batch, seq = x.shape[0], x.shape[1]      # symbolic in the export: int64 shape arithmetic

            def heads(t):
                return t.reshape(batch, seq, HEADS, HIDDEN // HEADS).transpose(1, 2)

            q, k, v = (heads(t) for t in self.qkv(x).split(HIDDEN, dim=-1))
            scores = torch.matmul(q, k.transpose(-1, -2)) / (HIDDEN // HEADS) ** 0.5 + additive_mask
            attended = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(batch, seq, HIDDEN)
            x = self.norm1(x + self.out(attended))
            return self.norm2(x + self.ff2(nn.functional.gelu(self.ff1(x))))

    class TinyBert(nn.Module):
        def __init__(self):
            super().__init__()
            self.words = nn.Embedding(len(VOCAB), HIDDEN)
            self.positions = nn.Embedding(MAX_POSITIONS, HIDDEN)
            self.token_types = nn.Embedding(2, HIDDEN)
            self.norm = nn.LayerNorm(HIDDEN, eps=1e-12)
            self.layers = nn.ModuleList([Layer() for _ in range(LAYERS)])

        def forward(self, input_ids, attention_mask, token_type_ids):
            positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
            x = self.norm(self.words(input_ids) + self.positions(positions) + self.token_types(token_type_ids))
            # BERT's extended mask: 0 where attended, a large negative number at padding.
            additive = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(torch.float32).min
            for layer in self.layers:
                x = layer(x, additive)
            return x

    return TinyBert()


def write_model_folder(folder: Path, seed: int = 0) -> Path:
    """Write the transformers.js model folder; returns the ONNX file's path."""
    import warnings

    import torch

    torch.manual_seed(seed)
    module = _encoder().eval()
    (folder / "onnx").mkdir(parents=True, exist_ok=True)
    path = folder / "onnx" / "model.onnx"
    ids = torch.tensor([expected_token_ids(SENTENCES[0])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(path),
                          input_names=INPUT_NAMES, output_names=["last_hidden_state"], opset_version=17,
                          dynamic_axes={**{name: {0: "batch_size", 1: "sequence_length"} for name in INPUT_NAMES},
                                        "last_hidden_state": {0: "batch_size", 1: "sequence_length"}},
                          dynamo=False)
    config = {"model_type": "bert", "architectures": ["BertModel"], "hidden_size": HIDDEN,
              "num_attention_heads": HEADS, "num_hidden_layers": LAYERS, "intermediate_size": FF,
              "max_position_embeddings": MAX_POSITIONS, "type_vocab_size": 2, "vocab_size": len(VOCAB),
              "layer_norm_eps": 1e-12, "hidden_act": "gelu", "pad_token_id": 0}
    (folder / "config.json").write_text(json.dumps(config, indent=1))
    (folder / "tokenizer.json").write_text(json.dumps(_tokenizer_json(), indent=1))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "BertTokenizer", "do_lower_case": True, "model_max_length": MAX_POSITIONS,
        "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]",
        "mask_token": "[MASK]"}, indent=1))
    return path


def _tokenizer_json() -> dict:
    """BERT's uncased tokenizer in the `tokenizers` library's JSON format."""
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": VOCAB[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for t in SPECIAL],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {t: {"id": t, "ids": [VOCAB[t]], "tokens": [t]} for t in ("[CLS]", "[SEP]")},
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": VOCAB},
    }


def reference(onnx_path: Path, sentences: list[str] = SENTENCES) -> dict:
    """The feature-extraction pipeline's result ({pooling: "mean", normalize: true}) from
    onnxruntime (CPU) on the host, with the hand-worked token ids, padded with [PAD]."""
    import onnxruntime

    rows = [expected_token_ids(s) for s in sentences]
    width = max(map(len, rows))
    ids = np.array([r + [VOCAB["[PAD]"]] * (width - len(r)) for r in rows], np.int64)
    mask = np.array([[1] * len(r) + [0] * (width - len(r)) for r in rows], np.int64)
    session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    hidden, = session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask,
                                                    "token_type_ids": np.zeros_like(ids)})
    pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    return {"ids": ids.tolist(), "mask": mask.tolist(),
            "embeddings": pooled / np.linalg.norm(pooled, axis=1, keepdims=True)}
