"""The boot imports only what it uses (README "Use it in your page"): dist/'s runtime booted
under Node as the shim boots it (tests/dist/boot_imports.mjs), `import
webnn_py.browser.bridge`, createContext() and opSupportLimits() (which ONNX Runtime Web calls
right after it) leave the modules deferred or left out for the boot's sake unloaded: numpy's
pickle, ctypes and platform created but not run (webnn_py/boot.py), dataclasses, pkgutil,
the graph compiler and the Model Loader not imported. Then each deferred module works at its
first use, as numpy uses it (ndarray.dumps() and pickle.loads, ndarray.ctypes,
platform.system()), and runs then. The other standard-library modules the boot needs are
in the memory snapshot (tools/dist_snapshot.mjs, BOOT_STDLIB)."""
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CHECKS = r'''
import json, sys
restored = set(sys.modules)
import webnn_py.browser.bridge
import webnn_py, webnn_py.boot
context = await webnn_py.ml.createContext()
limits = context.opSupportLimits()
facts = {"deferred": webnn_py.boot.deferred_modules(), "modules": sorted(sys.modules),
         "imported": sorted(set(sys.modules) - restored),
         "limits": [len(limits), limits["add"]["a"]["dataTypes"], limits["maxTensorByteLength"]]}
import numpy as np, pickle, platform
a = np.arange(6, dtype=np.float32).reshape(2, 3)
copy = pickle.loads(a.dumps())
facts["first_use"] = {
    "pickle": [copy.dtype.name, copy.tolist()],
    "ctypes": [a.ctypes.data == a.__array_interface__["data"][0], list(a.ctypes.shape_as(__import__("ctypes").c_int64))],
    "platform": platform.system(),
}
facts["deferred_after"] = webnn_py.boot.deferred_modules()
# dir() of a deferred module lists what its code defines (it runs the code first)
sys.modules.pop("platform")
webnn_py.boot.install()
import platform
facts["dir"] = [webnn_py.boot.deferred_modules(), "system" in dir(platform), webnn_py.boot.deferred_modules()]
json.dumps(facts)
'''


@pytest.fixture(scope="module")
def booted(dist, manifest, tmp_path_factory) -> dict:
    runtime = dist / manifest["runtime"]
    site = tmp_path_factory.mktemp("site-packages")
    config = json.loads((runtime / "runtime-config.json").read_text(encoding="utf-8"))
    for wheel in config["prefetch"]:
        zipfile.ZipFile(runtime / wheel["file"]).extractall(site)
    checks = site.parent / "checks.py"
    checks.write_text(CHECKS, encoding="utf-8")
    run = subprocess.run([shutil.which("node"), str(REPO / "tests" / "dist" / "boot_imports.mjs"), str(runtime),
                          str(site), str(checks)], capture_output=True, text=True, timeout=None)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_numpys_unused_standard_library_modules_are_deferred_through_the_boot(booted):
    assert booted["deferred"] == ["ctypes", "pickle", "platform"]
    # what only their code imports did not load either
    assert not {"_compat_pickle", "_pickle", "ctypes._endian", "_ctypes"} & set(booted["modules"])


def test_the_boot_leaves_out_what_a_context_does_not_need(booted):
    modules = set(booted["modules"])
    assert not {"dataclasses", "pkgutil"} & modules
    assert not {m for m in modules if m.startswith(("webnn_py.runtime.compiler", "webnn_py.loader"))}
    assert "webnn_py.runtime.plan" not in modules
    # opSupportLimits() is whole: every operator, its data types, the top-level members
    assert booted["limits"][0] > 90
    assert booted["limits"][1:] == [["float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8"],
                                    2**31 - 1]


def test_deferred_modules_work_and_run_at_their_first_use(booted):
    assert booted["first_use"] == {"pickle": ["float32", [[0, 1, 2], [3, 4, 5]]],
                                   "ctypes": [True, [2, 3]], "platform": "Emscripten"}
    assert booted["deferred_after"] == []
    assert booted["dir"] == [["platform"], True, []]


def test_the_standard_library_the_boot_imports_is_in_the_snapshot(booted):
    """After the snapshot is restored, the boot imports numpy and webnn_py, Pyodide's `js`
    (made at run time) and the deferred modules (created, not run): nothing else. A boot
    module that starts importing another standard-library module fails this: add it to
    tools/dist_snapshot.mjs's BOOT_STDLIB (pure Python or built in), or import it lazily."""
    stdlib = [m for m in booted["imported"] if m.split(".")[0] not in {"numpy", "webnn_py"}]
    assert stdlib == ["ctypes", "js", "pickle", "platform"]
