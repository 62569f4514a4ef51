"""The host wheel (build/dist/webnn_py-*.whl, built by ./dev setup): `pip install` into a clean
venv with numpy runs the README's host example, copied out of the README itself, away from the
checkout (so the editable install and the sources cannot stand in for the wheel)."""
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def readme_host_example() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "webnn_py.ml.createContext" in b]
    assert len(blocks) == 1, "the README's host example (```python … webnn_py.ml.createContext) not found once"
    return blocks[0]


@pytest.mark.slow
def test_the_wheel_installs_in_a_clean_venv_and_runs_the_readme_example(pyodide_runtime, tmp_path):
    from tools.buildlock import build_lock

    # Copied under the runtime step's lock: another session may be rebuilding the wheel.
    with build_lock("runtime"):
        (built,) = (REPO / "build" / "dist").glob("webnn_py-*-py3-none-any.whl")
        wheel = tmp_path / built.name
        shutil.copyfile(built, wheel)
    name, version = wheel.name.split("-")[:2]
    with zipfile.ZipFile(wheel) as archive:   # hatchling's default license-files
        assert archive.read(f"{name}-{version}.dist-info/licenses/LICENSE") == (REPO / "LICENSE").read_bytes()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    install = subprocess.run([str(python), "-m", "pip", "install", "--no-input", "numpy==2.0.2", str(wheel)],
                             capture_output=True, text=True, env=env, cwd=tmp_path)
    assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-2000:]
    (tmp_path / "example.py").write_text(
        readme_host_example() + "\nimport webnn_py as _w, sys as _s\nprint('FROM', _w.__file__, _s.prefix)\n")
    run = subprocess.run([str(python), "example.py"], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    # ones(4) + arange(4), computed by hand.
    assert lines[0] == "[1. 2. 3. 4.]", run.stdout
    where = lines[1].split()
    assert Path(where[1]).is_relative_to(venv) and Path(where[2]) == venv, lines[1]
