"""Fixtures for running ONNX Runtime Web (npm onnxruntime-web) and transformers.js over
our navigator.ml, in every engine the browser tests run in (`--browser`, see
tests/browser/conftest.py: each module starts one browser per selected engine).

Models are exported with torch at test time into a temporary directory; ORT-web's
dist/ folder is served at /ort/ and the models at /models/, beside the polyfill.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import browsers
from tests.browser.conftest import require, selected_engines

REPO = Path(__file__).resolve().parents[2]
ORT_DIST = REPO / "node_modules" / "onnxruntime-web" / "dist"
PAGES = Path(__file__).parent / "pages"


def pytest_generate_tests(metafunc):
    if "engine" in metafunc.fixturenames:
        metafunc.parametrize("engine", selected_engines(metafunc.config), scope="module")


def npm_folder(path: Path, what: str) -> Path:
    """`path` from node_modules; skipped when missing (a failure in CI)."""
    if not path.exists():
        message = f"{what} is missing: run ./dev setup (npm ci)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def call(page: browsers.Page, function: str, args: dict | None = None, timeout: float = browsers.DEFAULT_TIMEOUT):
    """The awaited result of the page function `function` (JS source) called with `args` (JSON)."""
    return page.evaluate(f"({function})({json.dumps(args if args is not None else {})})", timeout=timeout)


def open_page(browser: browsers.Browser, url: str, ready: str) -> browsers.Page:
    """A new page at `url`, once `ready` (a global the page's module sets) is true."""
    page = browser.new_page()
    page.goto(url)
    page.wait_for(f"self.{ready} === true", timeout=300)
    return page


@pytest.fixture(scope="session")
def ort_dist() -> Path:
    return npm_folder(ORT_DIST / "ort.all.min.mjs", "node_modules/onnxruntime-web").parent


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
def browser(engine, pyodide_runtime):
    """One browser of `engine` for the whole module (pages are opened per test)."""
    require(engine)
    with browsers.launch(engine) as running:
        yield running


@pytest.fixture(scope="module")
def ort_server(pyodide_runtime, ort_dist, model_dir):
    from webnn_py.serve import PolyfillServer

    with PolyfillServer(root=PAGES, mounts={"/ort/": ort_dist, "/models/": model_dir}) as server:
        yield server


@pytest.fixture(scope="module")
def ort_page(browser, ort_server):
    """One page per module with the polyfill and ORT-web loaded (ORT logs verbosely):
    a boot takes 3-30 s, and each run reads only the console lines and WebNN calls
    that came after its start."""
    with open_page(browser, f"{ort_server.url}/ort.html?log=verbose", "ortPageReady") as page:
        yield page
