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
loadPyodide(), made at build) is never kept in Cache Storage (runtime-config.json's
memorySnapshot entry says `keep: false`), where it would be origin storage one
test leaves to the next. `--memory-snapshot` (SNAPSHOT_MODES) says who restores it:
`engine` (the default) as dist/ does on a first visit: JavaScriptCore fetches it at
boot (its lower tiers make the interpreter's initialisation cost seconds), Chromium
and Firefox boot without it (restoring it made their boot slower in the runner:
the import that follows takes longer than the initialisation it saves;
bench/wpt_throughput.py); `boot`: fetched at boot in every engine (`atBoot`); `off`:
a runtime without it. Fetched, it is one more immutable file of the runtime, in the
HTTP cache like the others.

`build`: build/pyodide as `./dev setup` leaves it (the full standard library,
sources compiled at import), under /__wpt_runner__/pyodide/.
"""
from __future__ import annotations

import dataclasses
import json

RUNTIMES = ("shipped", "build")
# --memory-snapshot -> runtime-config.json's memorySnapshot options (js_shim/webnn-polyfill.js,
# memorySnapshots), None: no snapshot at all.
SNAPSHOT_MODES = {"engine": {"keep": False}, "boot": {"keep": False, "atBoot": True}, "off": None}


@dataclasses.dataclass(frozen=True)
class ShippedRuntime:
    entry: bytes                 # webnn-polyfill.js, naming `folder` as its runtime
    folder: str                  # "runtime-<hash>", beside the entry script
    files: dict[str, bytes]      # "<folder>/<name>" -> content, for runtime-<hash>/ and pyodide-<hash>/


def shipped_runtime(memory_snapshot: str = "engine") -> ShippedRuntime:
    """Raises tools.build_dist.DistError when build/pyodide cannot be shipped (run ./dev setup)."""
    from tools import build_dist

    options = SNAPSHOT_MODES[memory_snapshot]
    folder, _pyodide_folder, folders = build_dist.runtime_folders(snapshot_options=options)
    if options is None:
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
