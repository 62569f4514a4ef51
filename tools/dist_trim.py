"""Ship only what is imported: the trimmed standard library and wheels of dist/ (issue 14 item 5).

tools/dist_imports.mjs boots build/pyodide under Node the way the shim does and prints the
import log: every module in sys.modules after `import webnn_py.browser.bridge`, every page-side
module of webnn_py and everything their source imports anywhere (lazy imports inside
functions included). From that log:

  python_stdlib.zip   only the imported standard-library modules (plus SAFETY_MODULES), as
                      sourceless bytecode compiled by Pyodide's Python (compiled_stdlib);
  numpy's wheel       only the imported modules, as bytecode alone: numpy's sources are
                      replaced by the .pyc files set-up compiled with Pyodide's Python, placed
                      where the source was (a sourceless import reads one file and checks no
                      hash), so the separate bytecode wheel is not shipped;
  webnn_py's wheel    the same for our package (no C source, no long description).

The zips are written uncompressed (stored): the HTTP compression then sees all files at
once (brotli: 2.4 MB for the three, against 3.3 MB for deflated zips it cannot shrink), and
Pyodide unpacks them without inflating. A host that compresses nothing sends more bytes.

A module missing from the log would raise ImportError in the page: tests/dist checks that
the log has no failed import and that the slice, the demo and the Model Loader run from
dist/. The log is cached in build/cache/dist-imports by the content of its inputs.
"""
from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import zipfile
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]
IMPORT_LOG_SCRIPT = ROOT / "tools" / "dist_imports.mjs"
IMPORT_LOG_CACHE = ROOT / "build" / "cache" / "dist-imports"
COMPILE_SCRIPT = ROOT / "tools" / "compile_pyc.mjs"
STDLIB_CACHE = ROOT / "build" / "cache" / "dist-stdlib"
STDLIB_IN_PYODIDE = "/lib/python312.zip"   # where Pyodide mounts python_stdlib.zip (tracebacks name it)

# Pyodide's paths for the standard library (zip, and frozen modules' nominal files) and packages.
STDLIB_PREFIXES = ("/lib/python312.zip/", "/lib/python3.12/")
SITE_PACKAGES = "/lib/python3.12/site-packages/"

# Imported by name at run time, so no import log sees them until some input needs them:
# text codecs (bytes.decode / str.encode look them up in `encodings` on first use), and
# what formatting a traceback reads.
SAFETY_MODULES = (
    "encodings.ascii", "encodings.latin_1", "encodings.utf_8_sig", "encodings.utf_16",
    "encodings.utf_16_le", "encodings.utf_16_be", "encodings.utf_32", "encodings.utf_32_le",
    "encodings.utf_32_be", "encodings.raw_unicode_escape", "encodings.unicode_escape",
    "encodings.cp1252", "linecache", "tokenize", "traceback",
    "importlib.readers",   # what importlib.resources asks the import system for (get_resource_reader)
)


class TrimError(Exception):
    """The import log could not be made or is incomplete (named in the message)."""


def import_log(runtime_dir: Path, inputs: list[Path]) -> dict[str, str]:
    """{module name: file} as tools/dist_imports.mjs prints it, cached by the inputs' content."""
    key = hashlib.sha256(IMPORT_LOG_SCRIPT.read_bytes())
    for path in inputs:
        key.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    cached = IMPORT_LOG_CACHE / f"{key.hexdigest()[:32]}.json"
    if cached.is_file():
        return json.loads(cached.read_text(encoding="utf-8"))
    node = shutil.which("node")
    if node is None:
        raise TrimError("node is needed to make the import log (tools/dist_imports.mjs): run ./dev setup")
    run = subprocess.run([node, str(IMPORT_LOG_SCRIPT), str(runtime_dir)], capture_output=True, text=True)
    if run.returncode != 0:
        raise TrimError(f"tools/dist_imports.mjs failed: {run.stderr.strip()[-2000:]}")
    report = json.loads(run.stdout.strip().splitlines()[-1])
    if report["failed"]:
        raise TrimError("imports that fail in Pyodide: " + "; ".join(report["failed"]))
    IMPORT_LOG_CACHE.mkdir(parents=True, exist_ok=True)
    for old in IMPORT_LOG_CACHE.glob("*.json"):
        old.unlink(missing_ok=True)
    cached.write_text(json.dumps(report["modules"], indent=1, sort_keys=True), encoding="utf-8")
    return report["modules"]


def stdlib_files(modules: dict[str, str]) -> set[str]:
    """The zip paths (e.g. "json/decoder.py") of the imported standard-library modules."""
    files = set()
    for name, file in modules.items():
        for prefix in STDLIB_PREFIXES:
            if file.startswith(prefix) and not file.startswith(SITE_PACKAGES):
                files.add(file[len(prefix):])
    for name in SAFETY_MODULES:
        files.add(name.replace(".", "/") + ".py")
    return files


def package_files(modules: dict[str, str], package: str) -> set[str]:
    """The wheel paths (e.g. "numpy/_core/numeric.py", "…/_multiarray_umath….so") of `package`'s modules."""
    return {file[len(SITE_PACKAGES):] for name, file in modules.items()
            if (name == package or name.startswith(package + ".")) and file.startswith(SITE_PACKAGES)}


def trim_stdlib(data: bytes, keep: set[str]) -> bytes:
    """python_stdlib.zip with only the `keep` files (their folders' entries kept too)."""
    source = zipfile.ZipFile(io.BytesIO(data))
    names = set(source.namelist())
    missing = sorted(name for name in keep if name not in names)
    if missing:
        raise TrimError(f"python_stdlib.zip lacks imported modules: {', '.join(missing)}")
    folders = {str(parent) + "/" for name in keep for parent in PurePosixPath(name).parents if str(parent) != "."}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            if info.filename in keep or info.filename in folders:
                target.writestr(info, source.read(info), compress_type=zipfile.ZIP_STORED)
    return out.getvalue()


def compiled_stdlib(trimmed: bytes, runtime_dir: Path) -> bytes:
    """The trimmed python_stdlib.zip with each module as sourceless bytecode, compiled by
    Pyodide's own Python (tools/compile_pyc.mjs), so no import compiles at boot: zipimport
    takes a .pyc without its source as it is. Cached by the input's content."""
    import tempfile

    cached = STDLIB_CACHE / f"{hashlib.sha256(trimmed).hexdigest()[:32]}.zip"
    if cached.is_file():
        return cached.read_bytes()
    source = zipfile.ZipFile(io.BytesIO(trimmed))
    with tempfile.TemporaryDirectory(prefix="webnn-stdlib-") as folder:
        source.extractall(folder)
        run = subprocess.run([shutil.which("node") or "node", str(COMPILE_SCRIPT), str(runtime_dir), folder,
                              STDLIB_IN_PYODIDE], capture_output=True, text=True)
        if run.returncode != 0:
            raise TrimError(f"tools/compile_pyc.mjs failed on the standard library: {run.stderr.strip()[-2000:]}")
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
            for info in source.infolist():
                path = PurePosixPath(info.filename)
                if info.filename.endswith(".py"):
                    pyc = Path(folder, *path.parent.parts, "__pycache__", f"{path.stem}.cpython-312.pyc")
                    if pyc.is_file():
                        target.writestr(zipfile.ZipInfo(info.filename + "c", info.date_time), pyc.read_bytes())
                        continue
                target.writestr(info, source.read(info), compress_type=zipfile.ZIP_STORED)
    STDLIB_CACHE.mkdir(parents=True, exist_ok=True)
    for old in STDLIB_CACHE.glob("*.zip"):
        old.unlink(missing_ok=True)
    cached.write_bytes(out.getvalue())
    return out.getvalue()


def sourceless_wheel(wheel: bytes, keep: set[str], bytecode: bytes | None = None) -> bytes:
    """The wheel with only the `keep` modules (+ non-Python data beside them and its
    .dist-info), each Python module as the .pyc compiled at set-up (from `bytecode`, a
    wheel of __pycache__ files, or the wheel's own __pycache__) at the source's place."""
    source = zipfile.ZipFile(io.BytesIO(wheel))
    pyc_source = zipfile.ZipFile(io.BytesIO(bytecode)) if bytecode else source
    compiled = {name for name in pyc_source.namelist() if name.endswith(".cpython-312.pyc")}
    kept_packages = {str(PurePosixPath(name).parent) for name in keep}
    packages = {str(PurePosixPath(name).parent) for name in source.namelist() if name.endswith("/__init__.py")}

    def package_of(path: PurePosixPath) -> str:
        """The folder of the nearest package holding `path` (data may sit in a plain folder below it)."""
        return next((str(p) for p in path.parents if str(p) in packages), "")
    files: dict[str, bytes] = {}
    for info in source.infolist():
        name = info.filename
        path = PurePosixPath(name)
        if name.endswith("/") or "__pycache__" in path.parts or "include" in path.parts or \
                name.endswith((".pyi", ".c", ".h", ".pxd", ".a", ".ini", ".pc")):
            continue   # build-time files: C sources and headers, static libraries, type stubs
        if ".dist-info/" in name:
            if name.endswith("/RECORD"):
                continue
            body = source.read(info)
            if name.endswith("/METADATA"):   # the headers; the long description is for package indexes
                body = body.split(b"\n\n", 1)[0] + b"\n"
            files[name] = body
        elif name.endswith(".py"):
            if name not in keep:
                continue
            pyc = f"{path.parent}/__pycache__/{path.stem}.cpython-312.pyc"
            if pyc in compiled:
                files[name[:-3] + ".pyc"] = pyc_source.read(pyc)
            else:
                files[name] = source.read(info)
        elif name in keep or (not name.endswith(".so") and package_of(path) in kept_packages):
            files[name] = source.read(info)   # extension modules imported, data files of kept packages
    dist_info = next(name.split("/", 1)[0] for name in files if ".dist-info/" in name)
    return write_wheel(files, f"{dist_info}/RECORD")


EXTENSION_SUFFIX = ".cpython-312-wasm32-emscripten.so"


def split_extension_modules(wheel: bytes) -> tuple[bytes, dict[str, bytes]]:
    """The wheel without its extension modules, and {wheel path: wasm} of those modules.

    dist/ serves each extension module as a file of its own (`application/wasm`), which the
    shim compiles by streaming while loadPyodide() runs, where the engine can keep the
    compiled code in its code cache (V8 does for streamed, cacheable responses), instead of
    Pyodide compiling the bytes it unpacked from the wheel on every visit."""
    source = zipfile.ZipFile(io.BytesIO(wheel))
    files, modules = {}, {}
    for info in source.infolist():
        if info.filename.endswith("/RECORD"):
            record = info.filename
        elif info.filename.endswith(EXTENSION_SUFFIX):
            modules[info.filename] = source.read(info)
        elif not info.filename.endswith("/"):
            files[info.filename] = source.read(info)
    return write_wheel(files, record), modules


def extension_module_file(path: str) -> str:
    """The dist/ file name of an extension module: "numpy/_core/_x.cpython-312-….so" ->
    "numpy._core._x.wasm" (the module's dotted name)."""
    if not path.endswith(EXTENSION_SUFFIX):
        raise TrimError(f"{path}: not a CPython 3.12 wasm32-emscripten extension module")
    return path[:-len(EXTENSION_SUFFIX)].replace("/", ".") + ".wasm"


def write_wheel(files: dict[str, bytes], record_name: str) -> bytes:
    """A wheel (zip) of `files` with a RECORD listing each file's sha256 and size."""
    import base64

    record = []
    for name in sorted(files):
        digest = base64.urlsafe_b64encode(hashlib.sha256(files[name]).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(files[name])}")
    record.append(f"{record_name},,")
    files = dict(files, **{record_name: ("\n".join(record) + "\n").encode()})
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            target.writestr(info, files[name], compress_type=zipfile.ZIP_STORED)
    return out.getvalue()
