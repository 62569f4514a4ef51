"""Matrix products: matmul (§8.9.35) and gemm (§8.9.24)."""
from __future__ import annotations

import numpy as np

from .. import kernels
from ..base.casting import cast_number
from ..base.descriptor import OperandDescriptor
from .broadcast import broadcast_bidirectional, broadcast_unidirectional
from .registry import FLOAT, BuildContext, compute_type, register


# -- the matrix product the other kernels share ---------------------------------------------

_F32 = np.dtype(np.float32)


def gemm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b for 2-D arrays, as a fresh C-contiguous array. In Pyodide, float32
    products run in our WebAssembly SIMD kernel (webnn_py.kernels: 20-50 GFLOP/s
    there, against ~1.5 for numpy's matmul, built without BLAS, and ~7-8 for
    scipy's OpenBLAS sgemm, which also cost seconds of page-blocking import); on
    the host numpy's matmul already calls an optimised BLAS."""
    if a.dtype == _F32 and b.dtype == _F32:
        fast = kernels.available()
        if fast is not None:
            return fast.gemm(a, b)
    return np.matmul(a, b)


def batched_gemm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.matmul(a, b) with the batch dimensions broadcast (§8.9.35 step 4.13),
    one kernel GEMM per matrix when the kernels are there."""
    fast = kernels.available() if a.dtype == _F32 and b.dtype == _F32 else None
    if fast is None:
        return np.matmul(a, b)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    if b.strides[-1] != 4 and b.ndim > 2:
        # The kernel reads B's rows as vectors: lay out every matrix of a transposed
        # stack (attention's k^T) in one copy rather than one per matrix.
        b = np.ascontiguousarray(b)
    a = a if a.shape[:-2] == batch else np.broadcast_to(a, batch + a.shape[-2:])
    b = b if b.shape[:-2] == batch else np.broadcast_to(b, batch + b.shape[-2:])
    out = np.empty(batch + (a.shape[-2], b.shape[-1]), _F32)
    for index in np.ndindex(*batch):
        fast.gemm(a[index], b[index], out=out[index])
    return out


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
        result = gemm(a, b) if a.ndim == 2 and b.ndim == 2 else batched_gemm(a, b)
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
