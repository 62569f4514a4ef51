"""The layout of dist/ (tools/build_dist.py), checked from the files themselves: hashes and
SRI recomputed here, compressed copies decoded by the brotli and gzip libraries."""
import base64
import gzip
import hashlib
import json
import re
from pathlib import Path

import brotli

REPO = Path(__file__).resolve().parents[2]

RUNTIME_FOLDER = re.compile(r"^runtime-([0-9a-f]{16})/$")
PYODIDE_FOLDER = re.compile(r"^pyodide-([0-9a-f]{16})/$")


def test_the_entry_script_is_one_plain_file_naming_the_hashed_runtime(dist, manifest):
    entry = (dist / "webnn-polyfill.js").read_text(encoding="utf-8")
    assert manifest["entry"] == "webnn-polyfill.js"
    assert entry.count("const WEBNN_IDL_METADATA = {") == 1          # the metadata, concatenated
    assert entry.count("(function installWebNNPolyfill(global, overrides)") == 1   # the shim
    assert entry.index("const WEBNN_IDL_METADATA") < entry.index("installWebNNPolyfill")
    assert f'const BUILD_DEFAULTS = {{"pyodideURL": "{manifest["runtime"]}"}};' in entry
    assert "const BUILD_DEFAULTS = {};" not in entry


def folder_digest(files: dict[str, bytes]) -> str:
    """sha256 over each file's name and content, as the folder names promise (recomputed here)."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(f"{name}\0{hashlib.sha256(files[name]).hexdigest()}\n".encode())
    return h.hexdigest()[:16]


def folder_files(dist, folder: str) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (dist / folder).iterdir() if not p.name.endswith((".br", ".gz"))}


def test_every_file_but_the_entry_script_has_a_content_hash_in_its_path(dist, manifest):
    runtime, pyodide = RUNTIME_FOLDER.match(manifest["runtime"]), PYODIDE_FOLDER.match(manifest["pyodide"])
    assert runtime and pyodide, manifest
    # Pyodide's own files: as released (node_modules/pyodide), in a folder hashed over them alone,
    # so a new webnn_py keeps its name and a browser's cached pyodide.asm.wasm
    own = folder_files(dist, manifest["pyodide"])
    assert sorted(own) == ["pyodide.asm.js", "pyodide.asm.wasm", "pyodide.js", "pyodide.mjs"]
    for name, data in own.items():
        assert data == (REPO / "node_modules" / "pyodide" / name).read_bytes(), name
    assert folder_digest(own) == pyodide.group(1)
    # The runtime folder: every file, the package index as it is before its file names were
    # given the folder's own name (Pyodide resolves them against indexURL, the pyodide folder)
    files = folder_files(dist, manifest["runtime"])
    lock = json.loads(files["pyodide-lock.json"])
    for package in lock["packages"].values():
        assert package["file_name"].startswith(f"../{manifest['runtime']}"), package
        package["file_name"] = package["file_name"][len(f"../{manifest['runtime']}"):]
    files["pyodide-lock.json"] = json.dumps(lock, indent=1, sort_keys=True).encode() + b"\n"
    assert folder_digest(files) == runtime.group(1)
    config = json.loads(files["runtime-config.json"])
    assert config["indexURL"] == f"../{manifest['pyodide']}"
    hashed = {folder + n for folder in (manifest["runtime"], manifest["pyodide"]) for n in folder_files(dist, folder)}
    # Never fetched by a page: the entry script (no-cache), the TypeScript declarations, the license.
    assert set(manifest["files"]) - hashed == {"webnn-polyfill.js", "webnn-polyfill.d.ts", "LICENSE"}


def test_the_runtime_holds_only_what_the_boot_loads(dist, manifest):
    names = sorted(p.name for p in (dist / manifest["runtime"]).iterdir() if not p.name.endswith((".br", ".gz")))
    lock = json.loads((dist / manifest["runtime"] / "pyodide-lock.json").read_text())
    config = json.loads((dist / manifest["runtime"] / "runtime-config.json").read_text())
    assert sorted(lock["packages"]) == ["numpy", "webnn-py"]
    # numpy's bytecode is inside its trimmed wheel (tests/dist/test_trimmed_runtime.py): no side wheel
    assert "numpyBytecode" not in config
    wheels = sorted(Path(lock["packages"][name]["file_name"]).name for name in ("numpy", "webnn-py"))
    # numpy's extension modules as files of their own (tests/dist/test_boot_cache.py)
    sides = [entry["file"] for entry in config["sideModules"]]
    assert sides and all(name.startswith("numpy.") and name.endswith(".wasm") for name in sides)
    # the memory snapshot, fetched after the boot (tests/dist/test_boot_cache.py)
    assert config["memorySnapshot"]["file"] == "memory-snapshot.bin"
    assert names == sorted(["python_stdlib.zip", "pyodide-lock.json", "runtime-config.json", "memory-snapshot.bin",
                            *wheels, *sides])
    assert not [n for n in names if re.match(r"(scipy|openblas|micropip|packaging)-", n)]
    for entry in lock["packages"].values():   # what loadPackage() will check
        wheel = dist / manifest["pyodide"] / entry["file_name"]    # resolved against indexURL
        assert hashlib.sha256(wheel.read_bytes()).hexdigest() == entry["sha256"]


def test_the_manifest_lists_sha256_and_the_entry_scripts_integrity(dist, manifest):
    on_disk = {p.relative_to(dist).as_posix() for p in dist.rglob("*") if p.is_file()}
    listed = set(manifest["files"])
    assert on_disk == listed | {"manifest.json"} | {f"{n}.{e}" for n in listed | {"manifest.json"} for e in ("br", "gz")}
    for name, info in manifest["files"].items():
        data = (dist / name).read_bytes()
        assert info["sha256"] == hashlib.sha256(data).hexdigest() and info["size"] == len(data), name
    entry = (dist / "webnn-polyfill.js").read_bytes()
    assert manifest["integrity"] == "sha384-" + base64.b64encode(hashlib.sha384(entry).digest()).decode()


def test_precompressed_copies_decode_to_the_files(dist, manifest):
    for name, info in manifest["files"].items():
        data = (dist / name).read_bytes()
        br, gz = (dist / f"{name}.br").read_bytes(), (dist / f"{name}.gz").read_bytes()
        assert brotli.decompress(br) == data and gzip.decompress(gz) == data, name
        assert (info["br"], info["gz"]) == (len(br), len(gz)), name


def test_the_license_ships_in_dist(dist, manifest):
    text = (dist / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert (dist / "LICENSE").read_bytes() == (REPO / "LICENSE").read_bytes()
    assert manifest["files"]["LICENSE"]["loaded"].startswith("never")
