"""The bytecode that tools/setup_runtime.py ships for Pyodide's cold start (issue 9).

Static checks read the served wheels; the Pyodide check imports numpy and webnn_py
under Node the way the shim loads them and reads Python's own verbose import log
("# X.pyc matches X.py"), so it fails if any imported module was compiled from
source instead (stale, wrong-version or missing bytecode).
"""
from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = ROOT / "build" / "pyodide"
CONFIG = OUT_DIR / "runtime-config.json"

# CPython 3.12's bytecode magic number (3531, Lib/importlib/_bootstrap_external.py),
# followed by \r\n; flags 0b11 = hash-based and checked (PEP 552).
MAGIC_312 = (3531).to_bytes(2, "little") + b"\r\n"
CHECKED_HASH = 0b11

needs_build = pytest.mark.skipif(not CONFIG.is_file(), reason="build/pyodide not set up (./dev setup)")


def _config() -> dict:
    return json.loads(CONFIG.read_text())


def _record_ok(zf: zipfile.ZipFile, name: str, record: dict[str, str]) -> bool:
    data = zf.read(name)
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return record.get(name) == f"sha256={digest},{len(data)}"


@needs_build
def test_webnn_wheel_has_checked_312_bytecode_for_every_module():
    with zipfile.ZipFile(OUT_DIR / _config()["wheel"]) as zf:
        names = set(zf.namelist())
        record_name = next(n for n in names if n.endswith(".dist-info/RECORD"))
        record = dict(line.split(",", 1) for line in zf.read(record_name).decode().splitlines() if line)
        sources = [n for n in names if n.startswith("webnn_py/") and n.endswith(".py")]
        assert len(sources) > 50
        for source in sources:
            folder, _, file = source.rpartition("/")
            pyc = f"{folder}/__pycache__/{file[:-3]}.cpython-312.pyc"
            assert pyc in names, f"no bytecode for {source}"
            header = zf.read(pyc)[:16]
            assert header[:4] == MAGIC_312, pyc
            assert int.from_bytes(header[4:8], "little") == CHECKED_HASH, pyc
            assert _record_ok(zf, pyc, record), f"RECORD does not list {pyc} with its hash"


@needs_build
def test_numpy_bytecode_wheel_covers_numpy_sources():
    config = _config()
    assert "numpyBytecode" in config
    lock = json.loads((OUT_DIR / "pyodide-lock.json").read_text())
    with zipfile.ZipFile(OUT_DIR / lock["packages"]["numpy"]["file_name"]) as zf:
        sources = [n for n in zf.namelist() if n.endswith(".py")]
    with zipfile.ZipFile(OUT_DIR / config["numpyBytecode"]) as zf:
        names = set(zf.namelist())
        record_name = next(n for n in names if n.endswith(".dist-info/RECORD"))
        record = dict(line.split(",", 1) for line in zf.read(record_name).decode().splitlines() if line)
        assert not [n for n in names if n.endswith(".py")], "the bytecode wheel must not replace numpy's sources"
        for source in sources:
            folder, _, file = source.rpartition("/")
            pyc = f"{folder}/__pycache__/{file[:-3]}.cpython-312.pyc"
            assert pyc in names, f"no bytecode for {source}"
            header = zf.read(pyc)[:16]
            assert header[:4] == MAGIC_312 and int.from_bytes(header[4:8], "little") == CHECKED_HASH, pyc
            assert _record_ok(zf, pyc, record), pyc


NODE_SCRIPT = """
import { loadPyodide } from %(mjs)s;
const py = await loadPyodide({ indexURL: %(index)s, fullStdLib: false, args: ["-v"] });
const failures = [];
await py.loadPackage(["numpy", "webnn-py", %(extra)s],
                     { messageCallback() {}, errorCallback(m) { failures.push(m); } });
if (failures.length) { console.log(JSON.stringify({ failures })); process.exit(1); }
const files = py.runPython(`
import sys, json
import webnn_py.browser.bridge, numpy
json.dumps(sorted(m.__file__ for name, m in list(sys.modules.items())
                  if (name.split(".")[0] in ("numpy", "webnn_py")) and getattr(m, "__file__", "")
                  and m.__file__.endswith(".py")))
`);
console.log(files);
"""


@needs_build
@pytest.mark.skipif(shutil.which("node") is None, reason="node not installed")
def test_pyodide_imports_numpy_and_webnn_py_from_bytecode(tmp_path):
    config = _config()
    script = tmp_path / "imports.mjs"
    script.write_text(NODE_SCRIPT % {
        "mjs": json.dumps((OUT_DIR / "pyodide.mjs").as_uri()),
        "index": json.dumps(str(OUT_DIR) + "/"),
        "extra": json.dumps(str(OUT_DIR / config["numpyBytecode"])),
    })
    proc = subprocess.run(["node", str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    imported = json.loads(proc.stdout.strip().splitlines()[-1])
    assert any(f.endswith("/numpy/__init__.py") for f in imported)
    assert any(f.endswith("/webnn_py/browser/bridge.py") for f in imported)
    # The loader (TFLite, OpenVINO importers) is not imported at boot.
    assert not any("/webnn_py/loader/" in f for f in imported)
    matched = {line.split(" matches ", 1)[1].strip() for line in proc.stderr.splitlines()
               if line.startswith("# ") and " matches " in line}
    compiled = [f for f in imported if f not in matched]
    assert not compiled, f"compiled from source in Pyodide: {compiled}"
