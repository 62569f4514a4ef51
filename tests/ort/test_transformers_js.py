"""transformers.js 4.3.1 (npm @huggingface/transformers, its browser bundle with its own
ONNX Runtime Web) over webnn-py, as a new user runs it: `pipeline("feature-extraction",
id, {device: "webnn"})` on a BERT exported with free batch and sequence dimensions,
and no freeDimensionOverrides (transformers.js only warns). ORT then puts the nodes of
unknown shape on its CPU EP and gives WebNN partitions of int64 shape arithmetic, whose
outputs it reads back through an Int8Array; the first inference used to hang for good
(issue 19, item 15). The model is a small random-weight BERT built on the host
(tests/ort/tiny_bert.py); the expected embeddings come from onnxruntime on the host,
and the same pipeline on `device: "wasm"` (ORT-web without WebNN) must agree.
"""
from __future__ import annotations

import numpy as np
import pytest

from .conftest import REPO, call, npm_folder, open_page
from .test_ort_webnn import placement

TRANSFORMERS = REPO / "node_modules" / "@huggingface" / "transformers"
MODEL_ID = "tiny-bert"
# Float32 on every side; the embeddings are unit vectors with entries ~0.2.
ATOL = 1e-4


@pytest.fixture(scope="session")
def hub(tmp_path_factory):
    """The model folder transformers.js reads for MODEL_ID, and the host's expected result."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("torch")
    from . import tiny_bert

    root = tmp_path_factory.mktemp("hub")
    onnx_path = tiny_bert.write_model_folder(root / MODEL_ID)
    return root, tiny_bert.reference(onnx_path)


@pytest.fixture(scope="module")
def transformers_page(browser, hub):
    from webnn_py.serve import PolyfillServer

    from .conftest import PAGES

    dist = npm_folder(TRANSFORMERS / "dist" / "transformers.min.js", "node_modules/@huggingface/transformers").parent
    # The ORT build transformers.js 4.3.1 pins (its bundle carries ORT's JS; the wasm is fetched).
    ort = npm_folder(TRANSFORMERS / "node_modules" / "onnxruntime-web" / "dist", "transformers.js's onnxruntime-web")
    mounts = {"/tjs/": dist, "/tjs-ort/": ort, "/hub/": hub[0]}
    with PolyfillServer(root=PAGES, mounts=mounts) as server, \
            open_page(browser, f"{server.url}/transformers.html?log=verbose", "transformersPageReady") as page:
        yield page


def run(page, device: str, verbose: bool = False) -> dict:
    from .tiny_bert import SENTENCES

    result = call(page, "runPipeline", {"model": MODEL_ID, "device": device, "sentences": SENTENCES,
                                        "verbose": verbose, "timeoutMs": 240_000})
    assert not page.errors, page.errors
    return result


def embeddings(result: dict) -> np.ndarray:
    return np.asarray(result["data"], np.float32).reshape(result["dims"])


@pytest.fixture(scope="module")
def runs(transformers_page):
    """The pipeline on ORT-web's wasm EP, then twice on WebNN (the second inference used to
    queue for ever behind the first)."""
    return {"wasm": run(transformers_page, "wasm"),
            "webnn": run(transformers_page, "webnn", verbose=True),
            "webnn again": run(transformers_page, "webnn")}


def test_the_tokenizer_gives_the_hand_worked_ids(runs, hub):
    reference = hub[1]
    for result in runs.values():
        assert result["ids"] == reference["ids"]
        assert result["mask"] == reference["mask"]


def test_webnn_without_free_dimension_overrides_matches_wasm_and_onnxruntime(runs, hub):
    expected = hub[1]["embeddings"]
    for device, result in runs.items():
        assert result["dims"] == list(expected.shape), device
        np.testing.assert_allclose(embeddings(result), expected, rtol=0, atol=ATOL, err_msg=device)
    np.testing.assert_allclose(embeddings(runs["webnn"]), embeddings(runs["wasm"]), rtol=0, atol=ATOL)
    np.testing.assert_array_equal(embeddings(runs["webnn again"]), embeddings(runs["webnn"]))


def test_ort_split_the_graph_between_webnn_and_its_cpu_ep(runs):
    """The path of the issue: transformers.js warned about the missing overrides, ORT
    placed nodes on both EPs, and WebNN ran int64 shape arithmetic whose results ORT
    read back for the CPU EP."""
    result = runs["webnn"]
    text = "\n".join(result["console"])
    assert "requires 'free_dimension_overrides'" in text
    seen = placement(result["console"])
    assert {"WebNNExecutionProvider", "CPUExecutionProvider"} <= set(seen["placed"]), seen["placed"]
    calls = result["webnn"]
    assert calls["MLGraphBuilder.build"]["count"] >= 2          # several WebNN partitions
    assert "int64" in calls["MLGraphBuilder.input"]["dataTypes"] + calls["MLContext.createTensor"]["dataTypes"]
    assert calls["MLContext.readTensor"]["count"] >= 1
    assert calls["MLContext.dispatch"]["count"] >= 1
    # The wasm run never touched navigator.ml.
    assert "MLGraphBuilder.build" not in runs["wasm"]["webnn"]
