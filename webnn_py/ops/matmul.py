"""Matrix products: matmul (§8.9.35) and gemm (§8.9.24)."""
from __future__ import annotations

import sys

import numpy as np

from ..base.casting import cast_number
from ..base.descriptor import OperandDescriptor
from .broadcast import broadcast_bidirectional, broadcast_unidirectional
from .registry import FLOAT, BuildContext, compute_type, register


# -- the matrix product the other kernels share ---------------------------------------------

_EMSCRIPTEN = sys.platform == "emscripten"
_SGEMM = None                  # scipy.linalg.blas.sgemm once available (Pyodide only)
_SCIPY_REQUESTED = False


def _blas_sgemm():
    """scipy's BLAS sgemm where it beats numpy's matmul: in Pyodide, numpy is built
    without BLAS (~1.5 GFLOP/s for float32 512x512) and scipy's OpenBLAS reaches
    ~4.8 (a transformer block runs ~3.5x faster). On CPython numpy's matmul already
    calls BLAS. scipy is optional: webnn_py depends on numpy alone, and loading
    scipy (+ OpenBLAS) at boot would delay createContext() by seconds. So the first
    float32 product in Pyodide asks Pyodide to load scipy in the background (its
    loadPackage is asynchronous and proceeds while the page's event loop runs, e.g.
    between a dispatch's time slices) and imports it in the load's own callback;
    until then numpy's matmul serves. Nothing is imported during a dispatch: a
    module the page imported itself is taken from sys.modules."""
    global _SGEMM
    if _SGEMM is None and _EMSCRIPTEN:
        module = sys.modules.get("scipy.linalg.blas")
        if module is not None:
            _SGEMM = module.sgemm
        else:
            _request_scipy()
    return _SGEMM


def _request_scipy() -> None:
    global _SCIPY_REQUESTED
    if _SCIPY_REQUESTED:
        return
    _SCIPY_REQUESTED = True
    try:
        import pyodide_js  # type: ignore[import-not-found]
        from js import Object  # type: ignore[import-not-found]
        from pyodide.ffi import create_proxy, to_js  # type: ignore[import-not-found]
    except ImportError:
        return
    # One long-lived no-op for the progress messages (called several times) and for
    # a rejection (a deployment without scipy in its package lock): numpy's matmul
    # keeps serving. Once loaded, scipy.linalg is imported in that callback's own
    # task (seconds in the browser), so that no dispatch pays for the import.
    ignore = create_proxy(lambda *_: None)
    options = to_js({"messageCallback": ignore, "errorCallback": ignore}, dict_converter=Object.fromEntries)
    pyodide_js.loadPackage("scipy", options).then(create_proxy(_import_sgemm), ignore)


def _import_sgemm(*_) -> None:
    global _SGEMM
    try:
        from scipy.linalg.blas import sgemm
        _SGEMM = sgemm
    except ImportError:
        pass


def gemm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b for 2-D arrays, as a fresh C-contiguous array. For float32 with scipy's
    BLAS, C = A B is computed as C^T = B^T A^T: the transposes of C-contiguous
    arrays are Fortran-contiguous, which is what BLAS takes without copies."""
    sgemm = _SGEMM if _SGEMM is not None or not _EMSCRIPTEN else _blas_sgemm()
    if sgemm is not None and a.dtype == np.float32 and b.dtype == np.float32 and a.size and b.size:
        a = np.ascontiguousarray(a)
        b = np.ascontiguousarray(b)
        return sgemm(1.0, b.T, a.T).T
    return np.matmul(a, b)


# -- matmul --------------------------------------------------------------------------------

def build_matmul(ctx: BuildContext, a, b, options: dict):
    """§8.9.35 matmul(a, b, options), steps 2-6."""
    # Step 3 checks the data types of both operands before step 4.5 looks at
    # ranks, so the type check here ignores the rank range.
    a_desc = ctx.check("a", a, FLOAT)
    b_desc = ctx.descriptor(b)
    ctx.same_type("b", b_desc, "a", a_desc)
    # Step 4.
    for name, desc in (("a", a_desc), ("b", b_desc)):
        if desc.rank < 2:
            ctx.fail(f"{name} has rank {desc.rank} (shape {list(desc.shape)}); allowed: 2 or more")
    rows_a, cols_a = a_desc.shape[-2:]
    rows_b, cols_b = b_desc.shape[-2:]
    if cols_a != rows_b:
        ctx.fail(f"a's columns ({cols_a}) differ from b's rows ({rows_b}): "
                 f"shapes {list(a_desc.shape)} and {list(b_desc.shape)}")
    batch = broadcast_bidirectional(a_desc.shape[:-2], b_desc.shape[:-2])
    if batch is None:
        ctx.fail(f"batch dimensions {list(a_desc.shape[:-2])} and {list(b_desc.shape[:-2])} are not broadcastable")
    output = OperandDescriptor(a_desc.data_type, batch + (rows_a, cols_b))
    return ctx.emit([a, b], [output])[0]


def matmul_kernel(inputs, attributes, outputs):
    a, b = inputs
    out_dtype = a.dtype
    work = compute_type(out_dtype)
    # np.matmul broadcasts the leading (batch) dimensions bidirectionally, as
    # step 4.13 does; float16 is multiplied in float32 and rounded once.
    a, b = a.astype(work, copy=False), b.astype(work, copy=False)
    with np.errstate(all="ignore"):   # inf * 0 is NaN, as IEEE says; no warning
        result = gemm(a, b) if a.ndim == 2 and b.ndim == 2 else np.matmul(a, b)
    return [result.astype(out_dtype, copy=False)]


# -- gemm ----------------------------------------------------------------------------------

def build_gemm(ctx: BuildContext, a, b, options: dict):
    """§8.9.24 gemm(a, b, options), steps 2-15."""
    # Step 3 (data types of a and b), then step 4 (their ranks).
    a_desc = ctx.check("a", a, FLOAT)
    b_desc = ctx.descriptor(b)
    ctx.same_type("b", b_desc, "a", a_desc)
    for name, desc in (("a", a_desc), ("b", b_desc)):
        if desc.rank != 2:
            ctx.fail(f"{name} has rank {desc.rank} (shape {list(desc.shape)}); allowed: 2")
    # Steps 5-6: alpha and beta become values of a's data type.
    alpha = cast_number(options.get("alpha", 1.0), a_desc.data_type)
    beta = cast_number(options.get("beta", 1.0), a_desc.data_type)
    a_transpose = bool(options.get("aTranspose", False))
    b_transpose = bool(options.get("bTranspose", False))
    # Steps 7-11.
    shape_a = a_desc.shape[::-1] if a_transpose else a_desc.shape
    shape_b = b_desc.shape[::-1] if b_transpose else b_desc.shape
    if shape_a[1] != shape_b[0]:
        ctx.fail(f"a's columns ({shape_a[1]}) differ from b's rows ({shape_b[0]}) after the transpose options: "
                 f"{list(shape_a)} and {list(shape_b)}")
    output_shape = (shape_a[0], shape_b[1])
    # Step 12.
    c = options.get("c")
    if c is not None:
        c_desc = ctx.descriptor(c)
        if broadcast_unidirectional(c_desc.shape, output_shape) is None:
            ctx.fail(f"c's shape {list(c_desc.shape)} is not unidirectionally broadcastable to {list(output_shape)}")
        ctx.same_type("c", c_desc, "a", a_desc)
    output = OperandDescriptor(a_desc.data_type, output_shape)
    attributes = {"alpha": alpha, "beta": beta, "aTranspose": a_transpose, "bTranspose": b_transpose}
    return ctx.emit([a, b, c], [output], attributes)[0]


def gemm_kernel(inputs, attributes, outputs):
    a, b, c = inputs
    out_dtype = a.dtype
    work = compute_type(out_dtype)
    a = a.astype(work, copy=False)
    b = b.astype(work, copy=False)
    if attributes["aTranspose"]:
        a = a.T
    if attributes["bTranspose"]:
        b = b.T
    with np.errstate(all="ignore"):
        # alpha * A * B (+ beta * C) as in the section's decomposition; the
        # multiplications by 1 are skipped since they are exact anyway.
        result = gemm(a, b)
        if attributes["alpha"] != 1.0:
            result = result * work.type(attributes["alpha"])
        if c is not None:
            c = c.astype(work, copy=False)
            if attributes["beta"] != 1.0:
                c = c * work.type(attributes["beta"])
            result = result + c
    return [np.asarray(result).astype(out_dtype, copy=False)]


register("matmul", build=build_matmul, kernel=matmul_kernel,
         limits={"a": FLOAT.ranks(2), "b": FLOAT.ranks(2), "output": FLOAT.ranks(2)})
register("gemm", build=build_gemm, kernel=gemm_kernel,
         limits={"a": FLOAT.rank(2), "b": FLOAT.rank(2), "c": FLOAT.ranks(0, 2), "output": FLOAT.rank(2)})
