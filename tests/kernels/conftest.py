"""The C kernels built natively from the same source as kernels.wasm, through ctypes."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from webnn_py.kernels import NATIVE_LIBRARY, Kernels, load_native

REPO = Path(__file__).resolve().parents[2]


def build_kernels() -> None:
    if shutil.which("clang") is None or shutil.which("wasm-ld") is None:
        pytest.skip("no clang/wasm-ld: run ./dev setup")
    subprocess.run([sys.executable, str(REPO / "tools" / "build_kernels.py")], check=True,
                   stdout=subprocess.DEVNULL)


@pytest.fixture(scope="session")
def native() -> Kernels:
    build_kernels()
    return load_native(NATIVE_LIBRARY)
