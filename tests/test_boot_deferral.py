"""webnn_py/boot.py's deferred modules, on the host's CPython (in Pyodide the package installs
it before numpy; tests/dist/test_boot_imports.py checks the boot itself): a deferred module is
created and bound at its import without running its code, later imports find it as it is, the
first attribute it lacks runs it (once), `from m import x`, a submodule's import and dir() run
it too, and the module is then the ordinary module its loader makes. Each case in a fresh
interpreter (a module already imported is never deferred)."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

BOOT = Path(__file__).resolve().parents[1] / "webnn_py" / "boot.py"


def run(code: str) -> dict:
    # boot.py alone, by its path: importing the package would import numpy, and numpy these modules
    script = ("import importlib.util, json, sys\n"
              f"spec = importlib.util.spec_from_file_location('boot', {str(BOOT)!r})\n"
              "boot = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(boot)\nboot.install()\n"
              + textwrap.dedent(code))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_a_deferred_module_runs_at_its_first_missing_attribute():
    facts = run("""
        import platform
        import platform as again             # a second import does not run it
        before = boot.deferred_modules()
        spec_ok = platform.__spec__.name == "platform" and platform.__name__ == "platform"
        system = platform.system()
        print(json.dumps({"before": before, "spec_ok": spec_ok, "same": again is platform,
                          "system": system, "after": boot.deferred_modules(),
                          "type": type(platform).__name__, "loader": type(platform.__loader__).__name__}))
    """)
    assert facts["before"] == ["platform"] and facts["spec_ok"] and facts["same"]
    assert facts["system"] and facts["after"] == [] and facts["type"] == "module"
    assert facts["loader"] != "_DeferringLoader"


def test_from_imports_submodules_and_dir_run_the_code():
    facts = run("""
        from pickle import dumps, loads       # a name from it: runs it
        import ctypes.util                    # a submodule: its package runs first
        import ctypes
        c_int = ctypes.c_int                  # (already run)
        print(json.dumps({"pickled": loads(dumps([1, 2])), "deferred": boot.deferred_modules(),
                          "ctypes_ran": hasattr(ctypes, "CDLL") and "util" in dir(ctypes)}))
    """)
    assert facts == {"pickled": [1, 2], "deferred": [], "ctypes_ran": True}


def test_modules_outside_the_list_and_missing_attributes_behave_as_usual():
    facts = run("""
        import json as j, pickle
        try:
            pickle.no_such_name
        except AttributeError as error:
            missing = str(error)
        print(json.dumps({"missing": missing, "deferred": boot.deferred_modules(),
                          "json": type(j).__name__}))
    """)
    assert "no_such_name" in facts["missing"] and facts["deferred"] == [] and facts["json"] == "module"
