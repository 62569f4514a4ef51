"""The ML interface (§8.2): navigator.ml."""
from __future__ import annotations

from ..base.errors import NotSupportedError
from .context import MLContext
from .idl import operation, register_interface


class ML:
    """navigator.ml. On the host `webnn_py.ml` is the instance."""

    def __init__(self, permission_check=None):
        # The browser bridge installs a check of the "webnn" permissions policy (§7.5).
        self._permission_check = permission_check

    @operation("ML", promise=True, overloaded=True)
    async def createContext(self, overload: int, options):
        """§8.2.2 createContext(options) and createContext(gpuDevice)."""
        if self._permission_check is not None:
            self._permission_check()          # raises SecurityError (step 3)
        if overload == 1:
            # "create a context" step 4: this implementation has no WebGPU interop.
            raise NotSupportedError("createContext: creating a context from a GPUDevice is not supported")
        return MLContext._create(options)


register_interface("ML", ML)
