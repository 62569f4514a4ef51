"""Fixtures of the Model Loader tests: the real models, LiteRT reference runs,
and a helper that loads and computes a model with webnn_py on the host."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# The browser-page tests here (test_browser.py, openvino/test_browser.py, test_while.py's,
# test_demo.py) run in every selected engine like tests/browser's (--browser or
# WEBNN_PY_BROWSERS): the same `engine` parametrisation and module-scoped `browser`.
from tests.browser.conftest import browser, pytest_generate_tests  # noqa: F401

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def models_dir() -> Path:
    sys.path.insert(0, str(REPO))
    from tools.fetch_models import FetchError, fetch
    try:
        return fetch()
    except FetchError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"cannot fetch the real models: {exc}")
        pytest.skip(f"cannot fetch the real models: {exc}")
