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
from .base.errors import (  # noqa: F401
    DataError, DOMException, InvalidStateError, NotSupportedError,
    OperationError, SecurityError, UnknownError,
)
from .api import ML, MLContext, MLGraph, MLGraphBuilder, MLOperand, MLTensor  # noqa: F401
from .loader import MLModel, MLModelLoader  # noqa: F401  (the Model Loader API, on top of WebNN)

__version__ = "0.1.0"

ml = ML()
