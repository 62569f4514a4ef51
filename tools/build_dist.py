#!/usr/bin/env python3
"""Build dist/: the polyfill as static files any web server can host (`./dev dist`).

    dist/
      webnn-polyfill.js           the one script a page includes: the generated WebIDL
                                  metadata and the shim concatenated here, with the shim's
                                  BUILD_DEFAULTS line naming the runtime folder below
      webnn-polyfill.d.ts         TypeScript declarations (types/webnn.d.ts; never fetched)
      LICENSE                     the project's license (Apache-2.0; never fetched)
      pyodide-<hash>/             Pyodide's own files as released (loader, asm.js, wasm):
                                  loadPyodide()'s indexURL; its hash changes with Pyodide only
      runtime-<hash>/             the rest of what the shim's boot fetches, nothing else: the
                                  standard library trimmed to the modules imported (as
                                  bytecode), a pyodide-lock.json trimmed to the packages we
                                  ship (numpy, webnn-py), their wheels trimmed to the modules
                                  imported, as bytecode only, without their extension
                                  modules, which are files of their own (<module>.wasm,
                                  compiled by streaming; tools/dist_trim.py), and
                                  runtime-config.json (names the pyodide folder)
      manifest.json               every file's sha256 and size, the entry script's
                                  Subresource Integrity string (tools read it; pages never do)
      <each file>.br, .gz         precompressed copies (brotli 11, gzip 9)

Pyodide's loadPyodide() asks for fixed file names inside its indexURL
(pyodide.asm.wasm, …), so the content hash is in the folder name: `<hash>` covers
the name and sha256 of every file in the folder, so any change gives a new folder
and every file under it can be served `immutable`.
Only webnn-polyfill.js keeps its name (pages link it) and is served `no-cache`.

Input is build/pyodide as `./dev setup` leaves it (local source; with
--pyodide-source cdn there are no local packages to ship). Compressed copies
are cached by content in build/cache/compressed, so a rebuild only hashes.
"""
from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools import dist_trim  # noqa: E402
from tools.buildlock import build_lock  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RUNTIME_DIR = ROOT / "build" / "pyodide"
DIST_DIR = ROOT / "dist"
COMPRESSED_CACHE = ROOT / "build" / "cache" / "compressed"
SHIM = ROOT / "js_shim" / "webnn-polyfill.js"
METADATA = ROOT / "js_shim" / "generated" / "webidl_metadata.js"
TYPES = ROOT / "types" / "webnn.d.ts"
SNAPSHOT_SCRIPT = ROOT / "tools" / "dist_snapshot.mjs"
SNAPSHOT_CACHE = ROOT / "build" / "cache" / "dist-snapshot"
LICENSE = ROOT / "LICENSE"

ENTRY = "webnn-polyfill.js"
TYPES_NAME = "webnn-polyfill.d.ts"
MANIFEST = "manifest.json"
LOCK_NAME = "pyodide-lock.json"
CONFIG_NAME = "runtime-config.json"
SNAPSHOT_NAME = "memory-snapshot.bin"
RUNTIME_PREFIX = "runtime-"
PYODIDE_PREFIX = "pyodide-"
# Pyodide's own files, as released: a folder of their own (loadPyodide()'s indexURL), whose
# hash changes only with Pyodide, so a new webnn_py leaves pyodide.asm.wasm cached.
PYODIDE_OWN = ("pyodide.js", "pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm")
HASH_LENGTH = 16          # hex digits of sha256 in the folder name (64 bits)
ROOT_PACKAGE = "webnn-py"  # what the shim's loadPackage() asks for; numpy comes as its dependency

# The shim line the build fills in (js_shim/webnn-polyfill.js); it must occur exactly once.
BUILD_DEFAULTS_LINE = "  const BUILD_DEFAULTS = {};"

# Pyodide's own files, with when the shim's boot fetches them (README "Use it in your page").
PYODIDE_FILES = {
    "pyodide.js": "boot: Pyodide's loader, in windows and classic workers",
    "pyodide.mjs": "boot: Pyodide's loader, in module workers only",
    "pyodide.asm.js": "boot: the Emscripten glue",
    "pyodide.asm.wasm": "boot: CPython compiled to WebAssembly",
    "python_stdlib.zip": "boot: the Python standard library",
}


class DistError(Exception):
    """The inputs cannot make a working dist/ (named in the message)."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sri_sha256(data: bytes) -> str:
    """The integrity a fetch() of `data` carries (the form Pyodide's loadPackage() uses)."""
    return "sha256-" + base64.b64encode(hashlib.sha256(data).digest()).decode()


def subresource_integrity(data: bytes) -> str:
    """The `integrity` attribute value of a script tag (SRI, sha384)."""
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode()


def entry_script(runtime_folder: str, shim: str, metadata: str) -> bytes:
    """Metadata + shim as one plain script, the shim's default runtime folder filled in."""
    if shim.count(BUILD_DEFAULTS_LINE) != 1:
        raise DistError(f"{SHIM.relative_to(ROOT)} must hold the line {BUILD_DEFAULTS_LINE.strip()!r} "
                        "exactly once (the build writes the runtime folder there)")
    defaults = json.dumps({"pyodideURL": runtime_folder + "/"})
    shim = shim.replace(BUILD_DEFAULTS_LINE, f"  const BUILD_DEFAULTS = {defaults};")
    version = project_version()
    header = (f"/*! webnn-py {version} (Apache-2.0): the W3C WebNN API on Pyodide. Built by "
              f"tools/build_dist.py; the runtime it loads is {runtime_folder}/ beside this file. */\n")
    return (header + metadata + "\n" + shim).encode()


def project_version() -> str:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def shipped_packages(lock: dict, root: str = ROOT_PACKAGE) -> list[str]:
    """`root` and everything it depends on in the lock, i.e. what loadPackage(root) fetches."""
    packages, todo = [], [root]
    while todo:
        name = todo.pop()
        if name in packages:
            continue
        if name not in lock["packages"]:
            raise DistError(f"{LOCK_NAME} has no package {name!r} (needed by {root!r}): run ./dev setup")
        packages.append(name)
        todo += lock["packages"][name].get("depends", [])
    return sorted(packages)


def runtime_files(runtime_dir: Path = RUNTIME_DIR) -> dict[str, tuple[bytes, str]]:
    """name -> (content, when it is loaded) of every file the runtime folder holds."""
    try:
        config = json.loads((runtime_dir / CONFIG_NAME).read_text(encoding="utf-8"))
        lock = json.loads((runtime_dir / LOCK_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise DistError(f"{runtime_dir} is not a complete runtime ({error}): run ./dev setup") from None
    if config.get("source") != "local":
        raise DistError(f"{runtime_dir} loads Pyodide from {config.get('source')!r}; dist/ ships the local "
                        "runtime: run ./dev setup --pyodide-source local")
    files = {name: (read(runtime_dir / name), when) for name, when in PYODIDE_FILES.items()}
    packages = shipped_packages(lock)
    bytecode = config.get("numpyBytecode")
    if not bytecode:
        raise DistError(f"{CONFIG_NAME} names no numpy bytecode wheel: run ./dev setup")
    wheels = [runtime_dir / lock["packages"][name]["file_name"] for name in packages]
    try:
        modules = dist_trim.import_log(runtime_dir, [runtime_dir / "python_stdlib.zip", runtime_dir / bytecode,
                                                     *wheels])
        stdlib = dist_trim.trim_stdlib(files["python_stdlib.zip"][0], dist_trim.stdlib_files(modules))
        files["python_stdlib.zip"] = (dist_trim.compiled_stdlib(stdlib, runtime_dir),
                                      "boot: the Python standard library, only the modules imported, as bytecode")
    except dist_trim.TrimError as error:
        raise DistError(str(error)) from None
    # Only the shipped packages stay in the lock (nothing else can be loaded from here),
    # each wheel trimmed to the modules imported, as bytecode (numpy's from its bytecode wheel).
    shipped, side_modules = {}, []
    for name in packages:
        entry = lock["packages"][name]
        data = read(runtime_dir / entry["file_name"])
        if sha256_hex(data) != entry["sha256"]:
            raise DistError(f"{entry['file_name']}: sha256 differs from {LOCK_NAME}'s; run ./dev setup")
        module = entry["imports"][0] if entry.get("imports") else name.replace("-", "_")
        data = dist_trim.sourceless_wheel(data, dist_trim.package_files(modules, module),
                                          read(runtime_dir / bytecode) if name == "numpy" else None)
        data, extensions = dist_trim.split_extension_modules(data)
        for path, wasm in sorted(extensions.items()):
            files[dist_trim.extension_module_file(path)] = (
                wasm, f"boot: {name}'s extension module {path}, compiled by streaming while loadPyodide() runs")
            side_modules.append({"file": dist_trim.extension_module_file(path), "path": dist_trim.SITE_PACKAGES + path,
                                 "integrity": sri_sha256(wasm)})
        shipped[name] = dict(entry, sha256=sha256_hex(data))
        files[entry["file_name"]] = (data, f"boot: the {name} package, only the modules imported, as bytecode"
                                           + (", without its extension modules" if extensions else ""))
    files[LOCK_NAME] = (lock_bytes(dict(lock, packages=shipped)), f"boot: the package index, trimmed to {', '.join(packages)}")
    # prefetch: the wheels, which the shim fetches while loadPyodide() runs (bootPython), with
    # the integrity Pyodide's loadPackage() puts on its own fetch of them (the lock's sha256)
    # sideModules: the extension modules split out of the wheels, which the shim compiles
    # by streaming while loadPyodide() runs and links at their place in site-packages
    # (build() adds indexURL and memorySnapshot)
    shipped_config = {"source": "local", "wheel": config["wheel"], "prefetch": [
        {"file": shipped[name]["file_name"],
         "integrity": "sha256-" + base64.b64encode(bytes.fromhex(shipped[name]["sha256"])).decode()}
        for name in packages], "sideModules": side_modules, "sitePackages": dist_trim.SITE_PACKAGES}
    files[CONFIG_NAME] = (json.dumps(shipped_config, indent=2).encode() + b"\n",
                          "boot: first request, tells the shim what to load")
    return files


def lock_bytes(lock: dict) -> bytes:
    return json.dumps(lock, indent=1, sort_keys=True).encode() + b"\n"


def read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise DistError(f"cannot read {path} ({error.strerror}): run ./dev setup") from None


def folder_hash(files: dict[str, tuple[bytes, str]]) -> str:
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(f"{name}\0{sha256_hex(files[name][0])}\n".encode())
    return h.hexdigest()[:HASH_LENGTH]


def compressed(data: bytes, digest: str, cache: Path = COMPRESSED_CACHE) -> dict[str, bytes]:
    """{"br": …, "gz": …} for `data`, from the content-addressed cache when present."""
    import brotli

    out = {}
    for encoding, compress in (("br", lambda d: brotli.compress(d, quality=11, lgwin=24)),
                               ("gz", lambda d: gzip.compress(d, 9, mtime=0))):
        cached = cache / f"{digest}.{encoding}"
        if cached.is_file():
            out[encoding] = cached.read_bytes()
            continue
        out[encoding] = compress(data)
        cache.mkdir(parents=True, exist_ok=True)
        part = cached.with_name(cached.name + f".{os.getpid()}.part")
        part.write_bytes(out[encoding])
        os.replace(part, cached)
    return out


def prune_cache(keep: set[str], cache: Path = COMPRESSED_CACHE) -> None:
    """Drop the compressed copies of files this build no longer has (old wheels, old scripts)."""
    for path in cache.glob("*"):
        if path.name.split(".", 1)[0] not in keep:
            path.unlink(missing_ok=True)


def memory_snapshot(pyodide: dict[str, tuple[bytes, str]], runtime: dict[str, tuple[bytes, str]],
                    config: dict) -> bytes:
    """Python's memory after loadPyodide() from these files (tools/dist_snapshot.mjs, under
    Node), cached by the content of what makes it."""
    key = hashlib.sha256(read(SNAPSHOT_SCRIPT))
    for name in sorted(pyodide):
        key.update(f"{name}\0{sha256_hex(pyodide[name][0])}\n".encode())
    key.update(sha256_hex(runtime["python_stdlib.zip"][0]).encode())
    cached = SNAPSHOT_CACHE / f"{key.hexdigest()[:32]}.bin"
    if cached.is_file():
        return cached.read_bytes()
    node = shutil.which("node")
    if node is None:
        raise DistError("node is needed to make the memory snapshot (tools/dist_snapshot.mjs): run ./dev setup")
    with tempfile.TemporaryDirectory(prefix="webnn-snapshot-") as folder:
        index = Path(folder, config["indexURL"].strip("./"))
        index.mkdir()
        for name, (data, _) in pyodide.items():
            (index / name).write_bytes(data)
        here = Path(folder, "runtime")
        here.mkdir()
        for name in ("python_stdlib.zip", LOCK_NAME):
            (here / name).write_bytes(runtime[name][0])
        (here / CONFIG_NAME).write_text(json.dumps(config))
        out = Path(folder, SNAPSHOT_NAME)
        run = subprocess.run([node, str(SNAPSHOT_SCRIPT), str(here), str(out)], capture_output=True, text=True,
                             env={"PATH": os.environ.get("PATH", "")})
        if run.returncode != 0 or not out.is_file():
            raise DistError(f"tools/dist_snapshot.mjs failed: {run.stderr.strip()[-2000:]}")
        snapshot = out.read_bytes()
    SNAPSHOT_CACHE.mkdir(parents=True, exist_ok=True)
    for old in SNAPSHOT_CACHE.glob("*.bin"):
        old.unlink(missing_ok=True)
    cached.write_bytes(snapshot)
    return snapshot


def runtime_folders(runtime_dir: Path = RUNTIME_DIR, snapshot_options: dict | None = None
                    ) -> tuple[str, str, dict[str, dict[str, tuple[bytes, str]]]]:
    """(runtime folder, pyodide folder, {folder: {name: (content, when it is loaded)}}): the two
    content-hashed folders of dist/. `snapshot_options`: more fields of runtime-config.json's
    memorySnapshot entry (wpt_runner asks for the snapshot at boot and for nothing to be kept)."""
    with build_lock("runtime"):   # tools/setup_runtime.py may be replacing the wheel right now
        runtime = runtime_files(runtime_dir)
    pyodide = {name: runtime.pop(name) for name in PYODIDE_OWN}
    pyodide_folder = PYODIDE_PREFIX + folder_hash(pyodide)
    config = json.loads(runtime[CONFIG_NAME][0])
    config["indexURL"] = f"../{pyodide_folder}/"   # loadPyodide()'s indexURL, relative to the runtime folder
    snapshot = memory_snapshot(pyodide, runtime, config)
    runtime[SNAPSHOT_NAME] = (snapshot, "after the boot, in the background, kept for the next visit "
                                        "(JavaScriptCore: at boot): Python's memory after loadPyodide()")
    config["memorySnapshot"] = dict(snapshot_options or {}, file=SNAPSHOT_NAME, integrity=sri_sha256(snapshot))
    runtime[CONFIG_NAME] = (json.dumps(config, indent=2).encode() + b"\n", runtime[CONFIG_NAME][1])
    folder = RUNTIME_PREFIX + folder_hash(runtime)
    # Pyodide resolves the lock's file names against indexURL: "../runtime-<hash>/<wheel>". The
    # folder's hash covered the lock with the bare names (the hash cannot cover its own value).
    lock = json.loads(runtime[LOCK_NAME][0])
    for package in lock["packages"].values():
        package["file_name"] = f"../{folder}/{package['file_name']}"
    runtime[LOCK_NAME] = (lock_bytes(lock), runtime[LOCK_NAME][1])
    return folder, pyodide_folder, {folder: runtime, pyodide_folder: pyodide}


def build(dist_dir: Path = DIST_DIR, runtime_dir: Path = RUNTIME_DIR) -> dict:
    """Write dist_dir (replacing it whole) and return its manifest."""
    folder, pyodide_folder, folders = runtime_folders(runtime_dir)
    runtime, pyodide = folders[folder], folders[pyodide_folder]
    entry = entry_script(folder, read(SHIM).decode(), read(METADATA).decode())
    files = {ENTRY: (entry, "the script tag; boots the runtime at once (or at the first createContext() "
                            "with lazy: true)"),
             TYPES_NAME: (read(TYPES), "never fetched: TypeScript declarations for the compiler"),
             LICENSE.name: (read(LICENSE), "never fetched: the license (Apache-2.0)")}
    files.update({f"{folder}/{name}": content for name, content in runtime.items()})
    files.update({f"{pyodide_folder}/{name}": content for name, content in pyodide.items()})

    manifest = {
        "name": "webnn-py",
        "version": project_version(),
        "entry": ENTRY,
        "integrity": subresource_integrity(entry),
        "runtime": folder + "/",
        "pyodide": pyodide_folder + "/",
        "files": {},
    }
    part = dist_dir.with_name(dist_dir.name + ".part")
    shutil.rmtree(part, ignore_errors=True)
    for name in sorted(files):
        data, loaded = files[name]
        digest = sha256_hex(data)
        target = part / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        record = {"sha256": digest, "size": len(data), "loaded": loaded}
        for encoding, body in compressed(data, digest).items():
            (part / f"{name}.{encoding}").write_bytes(body)
            record[encoding] = len(body)
        manifest["files"][name] = record
    manifest_bytes = json.dumps(manifest, indent=2).encode() + b"\n"
    (part / MANIFEST).write_bytes(manifest_bytes)
    for encoding, body in compressed(manifest_bytes, sha256_hex(manifest_bytes)).items():
        (part / f"{MANIFEST}.{encoding}").write_bytes(body)
    prune_cache({info["sha256"] for info in manifest["files"].values()} | {sha256_hex(manifest_bytes)})
    # Swap in the new tree: a server sees the old dist/ or the new one, never a mix.
    old = dist_dir.with_name(dist_dir.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if dist_dir.exists():
        os.replace(dist_dir, old)
    os.replace(part, dist_dir)
    shutil.rmtree(old, ignore_errors=True)
    return manifest


def summary(manifest: dict) -> str:
    files = manifest["files"]
    total = sum(f["size"] for f in files.values())
    brotli_total = sum(f["br"] for f in files.values())
    boot = [f for f in files.values() if f["loaded"].startswith("boot") and "module workers only" not in f["loaded"]]
    boot_br = sum(f["br"] for f in boot) + files[manifest["entry"]]["br"]
    return (f"{len(files)} files, {total / 1e6:.1f} MB ({brotli_total / 1e6:.1f} MB brotli); a page's boot "
            f"fetches {boot_br / 1e6:.2f} MB brotli; <script src=\"{manifest['entry']}\" "
            f"integrity=\"{manifest['integrity']}\" crossorigin=\"anonymous\"></script>")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DIST_DIR, help="the folder to write (default: dist/)")
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    try:
        with build_lock("dist"):
            manifest = build(args.out.resolve())
    except DistError as error:
        print(f"[dist] ERROR: {error}", file=sys.stderr)
        return 1
    print(f"[dist] {args.out}: {summary(manifest)} ({time.monotonic() - t0:.1f}s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
