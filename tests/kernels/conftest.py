"""The C kernels built natively from the same source as kernels.wasm, through ctypes."""
import ctypes
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from webnn_py.kernels import Kernels

REPO = Path(__file__).resolve().parents[2]


def build_kernels() -> None:
    if shutil.which("clang") is None or shutil.which("wasm-ld") is None:
        pytest.skip("no clang/wasm-ld: run ./dev setup")
    subprocess.run([sys.executable, str(REPO / "tools" / "build_kernels.py")], check=True,
                   stdout=subprocess.DEVNULL)


@pytest.fixture(scope="session")
def native() -> Kernels:
    build_kernels()
    lib = ctypes.CDLL(str(REPO / "build" / "kernels" / "libwebnn_kernels.so"))
    i, p, f = ctypes.c_int, ctypes.c_void_p, ctypes.c_float
    lib.sgemm.argtypes = [i, i, i, p, i, i, p, i, p, i, p, p, i, f, f, p]
    lib.sgemm.restype = None
    lib.depthwise_nhwc.argtypes = [i, i, i, i, p, p, i, i, p, p, i, i, i, i, i, i, i, i, i, f, f]
    lib.depthwise_nhwc.restype = None
    lib.clamp_f32.argtypes = [p, p, i, f, f]
    lib.clamp_f32.restype = None
    lib.gelu_f32.argtypes = [p, p, i, p, i, ctypes.c_double]
    lib.gelu_f32.restype = None
    lib.softmax_rows_f32.argtypes = [p, p, i, i, p]
    lib.softmax_rows_f32.restype = None
    lib.im2col_nhwc.argtypes = [p] + [i] * 14 + [p]
    lib.im2col_nhwc.restype = None
    return Kernels(lib, "native")
