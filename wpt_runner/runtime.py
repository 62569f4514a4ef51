"""The polyfill and runtime the runner serves to every page.

`shipped` (the default): the polyfill as dist/ ships it (tools/build_dist.py),
made in memory from build/pyodide and the current js_shim/ when the run starts,
without dist/'s compressed copies, which a loopback server does not need:
Pyodide's own files in one content-hashed folder, the rest in another (the
standard library and the wheels trimmed to the modules imported, as bytecode;
numpy's extension modules split out and compiled by streaming while Pyodide
starts; the wheels prefetched; the build's memory snapshot). That is the
load-time work of a page, cut once for every page of the run. The folders are
named by the hash of their content, so the server sends their files `immutable`:
an engine whose pages share one HTTP cache (Firefox and WebKit tabs of one
profile) fetches each file once per run and can keep the compiled wasm with it.

The one change from dist/: the memory snapshot (Python's memory after
loadPyodide(), made at build) is fetched at boot in every engine, as dist/ does
in JavaScriptCore, and never kept in Cache Storage (runtime-config.json's
memorySnapshot entry: `atBoot`, `keep: false`). Kept there, it would be origin
storage one test leaves to the next; fetched, it is one more immutable file of
the runtime, in the HTTP cache like the others. `memory_snapshot=False` serves
the runtime without it (bench/wpt_throughput.py's comparison).

`build`: build/pyodide as `./dev setup` leaves it (the full standard library,
sources compiled at import), under /__wpt_runner__/pyodide/.
"""
from __future__ import annotations

import dataclasses
import json

RUNTIMES = ("shipped", "build")
# What the runner's pages do with the snapshot (js_shim/webnn-polyfill.js, memorySnapshots).
SNAPSHOT_OPTIONS = {"atBoot": True, "keep": False}


@dataclasses.dataclass(frozen=True)
class ShippedRuntime:
    entry: bytes                 # webnn-polyfill.js, naming `folder` as its runtime
    folder: str                  # "runtime-<hash>", beside the entry script
    files: dict[str, bytes]      # "<folder>/<name>" -> content, for runtime-<hash>/ and pyodide-<hash>/


def shipped_runtime(memory_snapshot: bool = True) -> ShippedRuntime:
    """Raises tools.build_dist.DistError when build/pyodide cannot be shipped (run ./dev setup)."""
    from tools import build_dist

    folder, _pyodide_folder, folders = build_dist.runtime_folders(snapshot_options=SNAPSHOT_OPTIONS)
    if not memory_snapshot:
        folder = _without_snapshot(folder, folders)
    entry = build_dist.entry_script(folder, build_dist.read(build_dist.SHIM).decode(),
                                    build_dist.read(build_dist.METADATA).decode())
    files = {f"{name}/{file}": data for name, content in folders.items() for file, (data, _when) in content.items()}
    return ShippedRuntime(entry=entry, folder=folder, files=files)


def _without_snapshot(folder: str, folders: dict) -> str:
    """Replace the runtime folder in `folders` by one without the snapshot; its new name."""
    from tools import build_dist

    runtime = folders.pop(folder)
    del runtime[build_dist.SNAPSHOT_NAME]
    config = json.loads(runtime[build_dist.CONFIG_NAME][0])
    config["memorySnapshot"] = False
    runtime[build_dist.CONFIG_NAME] = (json.dumps(config, indent=2).encode() + b"\n", "")
    renamed = build_dist.RUNTIME_PREFIX + build_dist.folder_hash(runtime)
    # The lock names the wheels relative to Pyodide's folder: "../runtime-<hash>/<wheel>".
    lock = json.loads(runtime[build_dist.LOCK_NAME][0])
    for package in lock["packages"].values():
        package["file_name"] = package["file_name"].replace(f"../{folder}/", f"../{renamed}/")
    runtime[build_dist.LOCK_NAME] = (build_dist.lock_bytes(lock), "")
    folders[renamed] = runtime
    return renamed
