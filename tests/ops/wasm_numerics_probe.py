"""Inside Pyodide (tests/ops/test_fused_numerics.py): the fused-numerics checks that run
next to this one ran on kernels.wasm, not on numpy fallbacks."""
import sys

from webnn_py import kernels


def test_the_checks_ran_on_kernels_wasm():
    assert sys.platform == "emscripten"
    loaded = kernels.available()
    assert loaded is not None and loaded.name == "wasm", "kernels.wasm did not load"
