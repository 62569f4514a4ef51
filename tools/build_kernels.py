"""Build webnn_py's C kernels (webnn_py/kernels/wasm/*.c).

  * webnn_py/kernels/wasm/kernels.wasm: clang --target=wasm32 -msimd128 -O3, linked
    with --import-memory so that Pyodide instantiates it on its own WebAssembly.Memory
    (the numpy buffers' memory). A build artifact (gitignored) that the wheel ships as
    package data (pyproject.toml's hatch artifacts), so this runs before the wheel.
  * webnn_py/kernels/wasm/kernels_shared.wasm: the same code linked against an imported
    *shared* memory (-matomics -mbulk-memory, --shared-memory, at most SHARED_MAX_BYTES): the
    kernel pool's build (webnn_py/kernels/pool.py), instantiated by its workers and by the page
    on one SharedArrayBuffer-backed WebAssembly.Memory. Also gitignored and in the wheel.
  * kernels_relaxed.wasm and kernels_shared_relaxed.wasm: both again with -mrelaxed-simd (the
    GEMM's multiply-adds as f32x4.relaxed_madd, the CPU's FMA where it has one: kernels.c
    madd4), which webnn_py.kernels loads where the engine validates them. Relaxed SIMD's final
    opcodes need clang 16 or newer: ./dev setup installs Debian's clang-19, which this script
    prefers; with an older clang only the two plain modules are built.
  * webnn_py/kernels/native/libwebnn_kernels.so: the same source for the host (-O3
    -march=native -ffp-contract=off, see NATIVE_FLAGS), loaded through ctypes by
    webnn_py.kernels.native() for NHWC depthwise conv2d on the host,
    and by tests/kernels to check every kernel against numpy/torch. Gitignored and
    not in the wheel (hatch leaves gitignored files out): built where it runs.

The wasm module must not use Pyodide's memory for itself: the source has no static
data and no stack, and this script checks both (no data segment, no reference to
__stack_pointer in the generated code). Idempotent: a stamp with the hash of the
sources and flags skips the work when nothing changed.

  python tools/build_kernels.py [--force] [--native-only]
"""
from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.buildlock import build_lock  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SOURCE_DIR = ROOT / "webnn_py" / "kernels" / "wasm"
WASM = SOURCE_DIR / "kernels.wasm"
SHARED_WASM = SOURCE_DIR / "kernels_shared.wasm"
RELAXED_WASM = SOURCE_DIR / "kernels_relaxed.wasm"
RELAXED_SHARED_WASM = SOURCE_DIR / "kernels_shared_relaxed.wasm"
# The compilers tried, in order (clang-19 and its wasm-ld come from Debian's clang-19 and lld-19).
CLANGS = ("clang-19", "clang")
RELAXED_MIN_CLANG = 16
RELAXED_FLAGS = ["-mrelaxed-simd"]
# The pool's shared memory may grow to this (its import declares it; pool.js creates it so).
SHARED_MAX_BYTES = 1 << 30
NATIVE = ROOT / "webnn_py" / "kernels" / "native" / "libwebnn_kernels.so"
STAMP = ROOT / "build" / "kernels" / ".stamp"

COMMON = ["-O3", "-std=c11", "-Wall", "-Werror", "-ffreestanding", "-fno-builtin", "-fno-math-errno"]
WASM_FLAGS = ["--target=wasm32", "-msimd128", "-nostdlib", "-fvisibility=hidden",
              # wasm-ld refuses undefined symbols by default: no libc function can slip in
              # as an import that nobody provides.
              "-Wl,--no-entry", "-Wl,--import-memory", "-Wl,--export-dynamic"]
# -march=native: the library is built where it runs (never shipped); the double-precision
# kernels (gelu, softmax, layerNormalization) take 8 lanes with AVX-512 (2.5-3x the SSE2 build
# on this machine). -ffp-contract=off: no FMA contraction, so every kernel does the float32
# and double operations the wasm build does (the epilogues' bit-for-bit guarantees).
NATIVE_FLAGS = ["-shared", "-fPIC", "-fvisibility=hidden", "-march=native", "-ffp-contract=off"]
# Atomics and bulk memory are what a shared memory import requires of the module; the code
# itself is the same (no atomic operation in the kernels: the pool synchronises in JS).
SHARED_FLAGS = ["-matomics", "-mbulk-memory", "-Wl,--shared-memory", f"-Wl,--max-memory={SHARED_MAX_BYTES}"]


class BuildError(Exception):
    pass


def sources() -> list[Path]:
    return sorted(SOURCE_DIR.glob("*.c"))


def cpu_flags() -> str:
    """This CPU's feature flags (Linux), which -march=native builds for; "" elsewhere."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return ""


def inputs_hash(clang_version: str) -> str:
    h = hashlib.sha256()
    h.update(" ".join(COMMON + WASM_FLAGS + NATIVE_FLAGS + SHARED_FLAGS + RELAXED_FLAGS).encode())
    h.update(clang_version.encode())
    h.update(cpu_flags().encode())          # -march=native: a build for this CPU only
    for path in sources():
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"{' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def check_no_memory_of_its_own(clang: str) -> None:
    """The wasm code must neither keep data in Pyodide's memory nor move the stack."""
    for src in sources():
        asm = run([clang, *COMMON, "--target=wasm32", "-msimd128", "-fvisibility=hidden", "-S", "-o", "-",
                   str(src)])
        if "__stack_pointer" in asm:
            raise BuildError(f"{src.name}: the wasm code uses the stack (__stack_pointer); "
                             "it would write into Pyodide's memory")
        for line in asm.splitlines():
            if line.strip().startswith(".section") and (".data" in line or ".bss" in line or ".rodata" in line):
                raise BuildError(f"{src.name}: static data ({line.strip()}) would live in Pyodide's memory")


def wasm_has_data_segment(path: Path) -> bool:
    """Whether a wasm binary has a data section (id 11): it must not."""
    data = path.read_bytes()
    pos = 8
    while pos < len(data):
        section = data[pos]
        pos += 1
        size = shift = 0
        while True:
            byte = data[pos]
            pos += 1
            size |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        if section == 11:
            return True
        pos += size
    return False


def find_clang() -> str:
    clang = next((path for path in map(shutil.which, CLANGS) if path), None)
    if clang is None:
        raise BuildError("clang not found (./dev setup installs clang-19 and lld-19)")
    return clang


def clang_major(clang_version: str) -> int:
    """The major version in `clang --version`'s text ("Debian clang version 19.1.7 ..."), 0 if none."""
    words = clang_version.split()
    major = words[words.index("version") + 1].split(".")[0] if "version" in words[:-1] else ""
    return int(major) if major.isdigit() else 0


def build(force: bool = False, native_only: bool = False) -> str:
    clang = find_clang()
    clang_version = run([clang, "--version"])
    want = inputs_hash(clang_version)
    relaxed = clang_major(clang_version) >= RELAXED_MIN_CLANG
    targets = [NATIVE] if native_only else [NATIVE, WASM, SHARED_WASM] + ([RELAXED_WASM, RELAXED_SHARED_WASM]
                                                                           if relaxed else [])
    if not force and STAMP.is_file() and STAMP.read_text() == want and all(t.is_file() for t in targets):
        return "unchanged"
    NATIVE.parent.mkdir(parents=True, exist_ok=True)
    STAMP.parent.mkdir(parents=True, exist_ok=True)
    srcs = [str(p) for p in sources()]
    # A new name, then a rename: a process that has the old library mapped (a test
    # session, the dev server) keeps its pages instead of seeing the file change under it.
    native_tmp = NATIVE.with_suffix(".so.tmp")
    try:
        run([clang, *COMMON, *NATIVE_FLAGS, "-o", str(native_tmp), *srcs])
    except BuildError:
        # A clang that cannot target this CPU with -march=native: the portable build (the
        # same results; SSE2-wide lanes on x86-64).
        run([clang, *COMMON, *[f for f in NATIVE_FLAGS if f != "-march=native"], "-o", str(native_tmp), *srcs])
    native_tmp.replace(NATIVE)
    if native_only:
        return "native built"
    check_no_memory_of_its_own(clang)
    wasm = [(WASM, []), (SHARED_WASM, SHARED_FLAGS)]
    if relaxed:
        wasm += [(RELAXED_WASM, RELAXED_FLAGS), (RELAXED_SHARED_WASM, RELAXED_FLAGS + SHARED_FLAGS)]
    else:
        for stale in (RELAXED_WASM, RELAXED_SHARED_WASM):     # an older build's: not this source's
            stale.unlink(missing_ok=True)
    for target, extra in wasm:
        tmp = target.with_suffix(".wasm.tmp")
        run([clang, *COMMON, *WASM_FLAGS, *extra, "-o", str(tmp), *srcs])
        if wasm_has_data_segment(tmp):
            tmp.unlink()
            raise BuildError(f"{target.name} has a data segment; it would overwrite the memory it is given")
        tmp.replace(target)
    STAMP.write_text(want)
    return "built"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--native-only", action="store_true")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    try:
        with build_lock("kernels"):
            state = build(args.force, args.native_only)
    except BuildError as e:
        print(f"[setup] ERROR: kernels: {e}", file=sys.stderr)
        return 1
    size = WASM.stat().st_size if WASM.is_file() else 0
    relaxed = f", {RELAXED_WASM.name}, {RELAXED_SHARED_WASM.name}" if RELAXED_WASM.is_file() else " (no relaxed SIMD build)"
    print(f"[setup] kernels: {WASM.relative_to(ROOT)} ({size} bytes), {SHARED_WASM.name}{relaxed} + "
          f"{NATIVE.relative_to(ROOT)} ({state}) ({time.perf_counter() - t0:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
