"""What the package does first in Pyodide, before numpy is imported: standard-library
modules that numpy imports at its import but that a page's boot never uses are
*deferred*, i.e. their code runs at their first use instead of at the import.

`import numpy` runs `import pickle` (numpy._core._methods, numpy.lib.format: for
ndarray.dumps() and np.load), `import ctypes` (numpy._core._internal: for
ndarray.ctypes) and `import platform` (numpy.lib._utils_impl: for np.show_runtime());
none of them is called while the polyfill boots, creates a context or runs a graph.
Their module bodies (with _compat_pickle, _pickle, ctypes._endian, _ctypes) were
about a sixth of the boot's `import` phase under Node and every page pays them
(README "Use it in your page"). Each deferred module is created, registered in
sys.modules and bound as usual; its code runs on the first attribute read that the
module does not have yet (`pickle.dumps`, `ctypes.c_void_p`, `from pickle import
x`, a submodule import), so every use of it behaves as before. The import system's
own reads (`__spec__`, `__name__`, `__path__`, set before the code runs) do not
count as a use: `importlib.util.LazyLoader` runs the code on *any* attribute read,
so the second `import pickle` (numpy has three) ran it at once.

Only in Pyodide (`install()` is called by webnn_py/__init__.py there); on the host
numpy imports them as usual.
"""
from __future__ import annotations

import importlib.machinery
import sys
import types

# Standard-library modules numpy imports and the page never uses during its boot
# (tests/dist/test_boot_imports.py fails if the boot runs one of them).
DEFERRED = frozenset({"pickle", "ctypes", "platform"})


class DeferredModule(types.ModuleType):
    """A module whose code has not run yet: the first missing attribute runs it."""

    def __getattr__(self, name: str):
        load(self)
        return getattr(self, name)

    def __dir__(self):   # dir() lists what the module defines, as before
        load(self)
        return dir(self)


def load(module: types.ModuleType) -> types.ModuleType:
    """Runs a deferred module's code (once; a module that already ran is returned as it is)."""
    if type(module) is DeferredModule:
        module.__class__ = types.ModuleType   # first: attributes read while it runs are plain
        try:
            module.__spec__.loader.exec_module(module)
        except BaseException:
            # as a failed import does: the next import finds it again and raises again
            sys.modules.pop(module.__name__, None)
            raise
    return module


class _DeferringLoader:
    """Creates the module as its own loader would, and leaves its code for later."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        # from here on the module is its own loader's, as if imported by it
        module.__spec__.loader = module.__loader__ = self._loader
        module.__class__ = DeferredModule


class _DeferringFinder:
    """A sys.meta_path entry: finds a module of DEFERRED as sys.path's finder does and
    hands out a deferring loader; a submodule of a deferred package (ctypes.util) first
    runs its package's code, as its import would have."""

    @staticmethod
    def find_spec(name: str, path=None, target=None):
        package, dot, _ = name.partition(".")
        if package not in DEFERRED:
            return None
        if dot:
            parent = sys.modules.get(package)
            if parent is not None:
                load(parent)
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _DeferringLoader(spec.loader)
        return spec


def install() -> None:
    """Defers the modules of DEFERRED that are not imported yet (at most once)."""
    if _DeferringFinder not in sys.meta_path:
        sys.meta_path.insert(0, _DeferringFinder)


def deferred_modules() -> list[str]:
    """The names of the modules in sys.modules whose code has not run yet."""
    return sorted(name for name, module in list(sys.modules.items()) if type(module) is DeferredModule)
