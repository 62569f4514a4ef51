"""The polyfill and runtime the runner serves to every page.

`shipped` (the default): the polyfill as dist/ ships it (tools/build_dist.py),
made in memory from build/pyodide and the current js_shim/ when the run starts,
without dist/'s compressed copies, which a loopback server does not need:
the standard library and the wheels trimmed to the modules imported, as
bytecode; numpy's extension modules split out and compiled by streaming
while Pyodide starts; the wheels prefetched. That is the load-time work of a
page, cut once for every page of the run. Its files live in a content-hashed
folder (runtime-<hash>/), so the server sends them `immutable`: an engine
whose pages share one HTTP cache (Firefox and WebKit tabs of one profile)
fetches each file once per run and can keep the compiled wasm with it.
The one change from dist/: no memory snapshot in Cache Storage, which is
origin storage one test would leave to the next.

`build`: build/pyodide as `./dev setup` leaves it (the full standard library,
sources compiled at import), under /__wpt_runner__/pyodide/.
"""
from __future__ import annotations

import dataclasses
import json

RUNTIMES = ("shipped", "build")


@dataclasses.dataclass(frozen=True)
class ShippedRuntime:
    entry: bytes                 # webnn-polyfill.js, naming `folder` as its runtime
    folder: str                  # "runtime-<hash>", beside the entry script
    files: dict[str, bytes]      # file name in `folder` -> content


def shipped_runtime() -> ShippedRuntime:
    """Raises tools.build_dist.DistError when build/pyodide cannot be shipped (run ./dev setup)."""
    from tools import build_dist
    from tools.buildlock import build_lock

    with build_lock("runtime"):   # tools/setup_runtime.py may be replacing the wheel right now
        files = {name: data for name, (data, _when) in build_dist.runtime_files().items()}
    config = json.loads(files[build_dist.CONFIG_NAME])
    config["memorySnapshot"] = False
    files[build_dist.CONFIG_NAME] = json.dumps(config, indent=2).encode() + b"\n"
    folder = build_dist.RUNTIME_PREFIX + build_dist.folder_hash({name: (data, "") for name, data in files.items()})
    entry = build_dist.entry_script(folder, build_dist.read(build_dist.SHIM).decode(),
                                    build_dist.read(build_dist.METADATA).decode())
    return ShippedRuntime(entry=entry, folder=folder, files=files)
