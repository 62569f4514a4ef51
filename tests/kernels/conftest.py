"""The C kernels built natively from the same source as kernels.wasm, through ctypes."""
import subprocess
import sys
from pathlib import Path

import pytest

from tools.build_kernels import BuildError, find_clang
from webnn_py.kernels import NATIVE_LIBRARY, HostKernels, Kernels, native_library

REPO = Path(__file__).resolve().parents[2]


def build_kernels() -> None:
    try:
        find_clang()        # the compiler tools/build_kernels.py uses (clang-19 from ./dev setup)
    except BuildError as e:
        pytest.skip(f"{e}: run ./dev setup")
    subprocess.run([sys.executable, str(REPO / "tools" / "build_kernels.py")], check=True,
                   stdout=subprocess.DEVNULL)


@pytest.fixture(scope="session")
def native() -> Kernels:
    """kernels.c as it is (its own sgemm too), built for this machine."""
    build_kernels()
    return Kernels(native_library(NATIVE_LIBRARY), "native")


@pytest.fixture(scope="session")
def host(native) -> HostKernels:
    """What webnn_py.kernels.native() gives on the host: the same C, GEMMs in numpy's BLAS."""
    return HostKernels(native_library(NATIVE_LIBRARY), "native")


@pytest.fixture(params=["native", "host"])
def gemm_kernels(request):
    """Both GEMMs with an epilogue: the C sgemm, and numpy's matmul + the C epilogue pass."""
    return request.getfixturevalue(request.param)
