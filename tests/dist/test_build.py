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


def test_the_entry_script_is_one_plain_file_naming_the_hashed_runtime(dist, manifest):
    entry = (dist / "webnn-polyfill.js").read_text(encoding="utf-8")
    assert manifest["entry"] == "webnn-polyfill.js"
    assert entry.count("const WEBNN_IDL_METADATA = {") == 1          # the metadata, concatenated
    assert entry.count("(function installWebNNPolyfill(global, overrides)") == 1   # the shim
    assert entry.index("const WEBNN_IDL_METADATA") < entry.index("installWebNNPolyfill")
    assert f'const BUILD_DEFAULTS = {{"pyodideURL": "{manifest["runtime"]}"}};' in entry
    assert "const BUILD_DEFAULTS = {};" not in entry


def test_every_file_but_the_entry_script_has_a_content_hash_in_its_path(dist, manifest):
    folder = RUNTIME_FOLDER.match(manifest["runtime"])
    assert folder, manifest["runtime"]
    runtime = {name[len(manifest["runtime"]):]: info for name, info in manifest["files"].items()
               if name.startswith(manifest["runtime"])}
    # The folder's hash covers each file's name and content (recomputed here from the bytes).
    h = hashlib.sha256()
    for name in sorted(runtime):
        h.update(f"{name}\0{hashlib.sha256((dist / manifest['runtime'] / name).read_bytes()).hexdigest()}\n".encode())
    assert h.hexdigest()[:16] == folder.group(1)
    others = set(manifest["files"]) - {manifest["runtime"] + n for n in runtime}
    # Never fetched by a page: the entry script (no-cache) and the TypeScript declarations.
    assert others <= {"webnn-polyfill.js", "webnn-polyfill.d.ts", "LICENSE"}, others


def test_the_runtime_holds_only_what_the_boot_loads(dist, manifest):
    names = sorted(p.name for p in (dist / manifest["runtime"]).iterdir() if not p.name.endswith((".br", ".gz")))
    lock = json.loads((dist / manifest["runtime"] / "pyodide-lock.json").read_text())
    config = json.loads((dist / manifest["runtime"] / "runtime-config.json").read_text())
    assert sorted(lock["packages"]) == ["numpy", "webnn-py"]
    # numpy's bytecode is inside its trimmed wheel (tests/dist/test_trimmed_runtime.py): no side wheel
    assert "numpyBytecode" not in config
    wheels = sorted([lock["packages"]["numpy"]["file_name"], lock["packages"]["webnn-py"]["file_name"]])
    assert names == sorted(["pyodide.js", "pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip",
                            "pyodide-lock.json", "runtime-config.json", *wheels])
    assert not [n for n in names if re.match(r"(scipy|openblas|micropip|packaging)-", n)]
    for entry in lock["packages"].values():   # what loadPackage() will check
        assert hashlib.sha256((dist / manifest["runtime"] / entry["file_name"]).read_bytes()).hexdigest() == entry["sha256"]


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
