"""dist/'s runtime holds only what is imported (tools/dist_trim.py), and still everything
that is: the import log (tools/dist_imports.mjs: the shim's boot, every page-side module of
webnn_py and every import in their source, lazy ones included) run against dist/'s trimmed
runtime under Node fails no import and loads exactly the modules it loads from the full
build/pyodide. The browser paths themselves (slice, demo) run from dist/ in
test_static_hosts.py."""
import io
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tools import dist_trim

REPO = Path(__file__).resolve().parents[2]


def import_log(runtime: Path) -> dict:
    run = subprocess.run([shutil.which("node"), str(REPO / "tools" / "dist_imports.mjs"), str(runtime)],
                         capture_output=True, text=True, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runtime(dist, manifest) -> Path:
    return dist / manifest["runtime"]


def test_the_trimmed_runtime_imports_what_the_full_one_does(pyodide_runtime, runtime):
    full, trimmed = import_log(pyodide_runtime), import_log(runtime)
    assert full["failed"] == [] and trimmed["failed"] == []
    assert sorted(trimmed["modules"]) == sorted(full["modules"])
    # numpy, webnn_py and the standard library came from sourceless bytecode placed where the source was.
    for name in ("numpy", "numpy._core.numeric", "webnn_py.browser.bridge", "webnn_py.loader.openvino",
                 "json.decoder", "asyncio.tasks"):
        assert trimmed["modules"][name].endswith(".pyc"), (name, trimmed["modules"][name])
        assert full["modules"][name].endswith(".py"), (name, full["modules"][name])


def test_the_standard_library_is_trimmed_to_the_imported_modules(pyodide_runtime, runtime):
    names = set(zipfile.ZipFile(runtime / "python_stdlib.zip").namelist())
    full = set(zipfile.ZipFile(pyodide_runtime / "python_stdlib.zip").namelist())
    # One form of code: bytecode compiled by Pyodide's Python, where the source was.
    assert not [n for n in names if n.endswith(".py")]
    modules = {n[:-1] for n in names if n.endswith(".pyc")}
    assert {"asyncio/tasks.py", "json/decoder.py", "encodings/utf_8.py", "xml/etree/ElementTree.py",
            "traceback.py"} <= modules
    # Nothing a page never imports: test runners, the doc server, mail, tkinter's kin.
    assert not {n for n in modules if n.split("/")[0] in {"unittest", "pydoc.py", "doctest.py", "xmlrpc",
                                                           "wsgiref", "multiprocessing", "http"}}
    assert len(modules) < len({n for n in full if n.endswith(".py")}) / 2
    assert modules <= dist_trim.stdlib_files({}) | full


def test_the_wheels_hold_one_form_of_code_and_no_unused_subpackage(runtime):
    lock = json.loads((runtime / "pyodide-lock.json").read_text(encoding="utf-8"))
    for package, absent in (("numpy", ("numpy/random/", "numpy/fft/", "numpy/f2py/", "numpy/tests/",
                                       "numpy/_core/include/")),
                            ("webnn-py", ("webnn_py/serve", "webnn_py/run_model", "webnn_py/kernels/wasm/kernels.c"))):
        wheel = zipfile.ZipFile(io.BytesIO((runtime / Path(lock["packages"][package]["file_name"]).name).read_bytes()))
        names = wheel.namelist()
        assert not [n for n in names if n.endswith((".py", ".pyi")) or "__pycache__" in n], package
        assert not [n for n in names if n.startswith(absent)], package
        assert [n for n in names if n.endswith(".pyc")], package
        # RECORD lists every other file with its sha256 (rewritten for the trimmed content).
        record = next(n for n in names if n.endswith(".dist-info/RECORD"))
        listed = {line.split(",")[0] for line in wheel.read(record).decode().splitlines()}
        assert listed == set(names), package
