"""Fixtures for running ONNX Runtime Web (npm onnxruntime-web) over our navigator.ml.

Models are exported with torch at test time into a temporary directory; ORT-web's
dist/ folder is served at /ort/ and the models at /models/, beside the polyfill.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ORT_DIST = REPO / "node_modules" / "onnxruntime-web" / "dist"
PAGES = Path(__file__).parent / "pages"


@pytest.fixture(scope="session")
def ort_dist() -> Path:
    if not (ORT_DIST / "ort.all.min.mjs").is_file():
        if os.environ.get("CI"):
            pytest.fail("node_modules/onnxruntime-web is missing in CI: ./dev setup did not run npm ci")
        pytest.skip("no node_modules/onnxruntime-web: run ./dev setup")
    return ORT_DIST


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("ort-models")


@pytest.fixture(scope="session")
def exported(model_dir):
    """name -> ExportedModel, exported on first use."""
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    pytest.importorskip("torch")
    from .models import export

    cache = {}

    def get(name: str):
        if name not in cache:
            cache[name] = export(name, model_dir)
        return cache[name]
    return get


@pytest.fixture(scope="module")
def ort_server(pyodide_runtime, ort_dist, model_dir):
    from webnn_py.serve import PolyfillServer

    with PolyfillServer(root=PAGES, mounts={"/ort/": ort_dist, "/models/": model_dir}) as server:
        yield server


@pytest.fixture(scope="module")
def browser():
    from wpt_runner.chromium import launch_chromium

    with launch_chromium() as context:
        yield context


@pytest.fixture
def ort_page(browser, ort_server):
    """A fresh page with the polyfill and ORT-web loaded (ORT logs verbosely)."""
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{ort_server.url}/ort.html?log=verbose")
    page.wait_for_function("self.ortPageReady === true", timeout=60_000)
    page.errors = errors
    yield page
    page.close()
