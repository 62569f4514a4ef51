"""webnn-py: the W3C Web Neural Network API (CRD 2026) in Python on numpy.

On the host, `webnn_py.ml` is `navigator.ml`:

    import asyncio, webnn_py
    async def main():
        context = await webnn_py.ml.createContext()
        builder = webnn_py.MLGraphBuilder(context)
        ...
    asyncio.run(main())

In the browser the same objects sit behind the JS shim (js_shim/), which
exposes them as navigator.ml.
"""
import sys as _sys

if _sys.platform == "emscripten":   # Pyodide: before numpy is imported (boot.py)
    from .boot import install as _defer_unused_stdlib
    _defer_unused_stdlib()

from .base.errors import (  # noqa: F401
    DataError, DOMException, InvalidStateError, NotSupportedError,
    OperationError, SecurityError, UnknownError,
)
from .api import ML, MLContext, MLGraph, MLGraphBuilder, MLOperand, MLTensor  # noqa: F401

__version__ = "0.1.0"

ml = ML()

# The Model Loader API (MLModelLoader, MLModel; on top of WebNN) is imported on
# first use (PEP 562): its TFLite and OpenVINO importers are ~120 ms of the
# browser's cold start (README "Benchmarks") that a page without models never needs.
_LAZY = {"MLModel": "loader", "MLModelLoader": "loader"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
