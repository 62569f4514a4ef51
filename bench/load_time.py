"""Load time of dist/ as a page meets it: transfer size, first and repeat visit, against a bare
loadPyodide() page as the yardstick (issue 14 item 5).

    .venv/bin/python bench/load_time.py [--runs N] [--no-build]

dist/ (rebuilt by tools/build_dist.py unless --no-build) is served by webnn_py.serve's /dist/
route, i.e. with a good static host's headers: brotli by Accept-Encoding, `immutable` for the
content-hashed runtime, `no-cache` for the entry script. Two pages on that server:

  polyfill  <script src=/dist/webnn-polyfill.js>, then navigator.ml.createContext()
  bare      <script src=/dist/runtime-<stock hash>/pyodide.js>, then loadPyodide() (no packages):
            Pyodide as it is distributed (build/pyodide's full python_stdlib.zip, dist/'s copies
            of its unchanged loader, asm.js and wasm), served beside dist/ with the same headers;
            dist/'s own stdlib is trimmed to what the polyfill imports (tools/dist_trim.py),
            which would speed up the yardstick too

  no-prefetch  (with --no-prefetch) the polyfill page with a runtime-config.json that names no
            wheels to fetch while loadPyodide() runs: what the shim's prefetch saves

  snapshot  (with --snapshot) the bare page's loadPyodide() restored from Pyodide 0.27's
            experimental memory snapshot (`_makeSnapshot` / `makeMemorySnapshot()` /
            `_loadSnapshot`), made once here in a throwaway profile; it cannot hold numpy (a
            binary extension) in 0.27, so this measures what it saves on Pyodide's own start

Each run launches a fresh browser profile per page (empty HTTP cache): the first visit is
navigation → promise resolved; then the same profile navigates again (warm HTTP cache, and
V8's code cache for the wasm where Chromium made one): the repeat visit. The pages alternate
which goes first. Prints medians, the ratios (polyfill first visit / bare first visit,
polyfill repeat visit / bare first visit: issue 14 asks ≤ 1.2× and ≤ 0.5×), the bytes
transferred (encoded bodies, i.e. brotli, from Resource Timing) and the load average before
and after. Numbers only, never assertions: the machine is shared.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

DIST = REPO / "dist"

# Both pages report ms since navigation start and what they fetched: transferSize is what
# came over the network (encoded body + headers; 0 when served from the HTTP cache).
REPORT = """
  const resources = () => performance.getEntriesByType("resource").map(
    (e) => ({ name: e.name, encoded: e.encodedBodySize, transfer: e.transferSize }));
"""
POLYFILL_PAGE = """<!doctype html><meta charset="utf-8"><title>polyfill</title>
<script src="/dist/webnn-polyfill.js"></script>
<script>%s
  const phases = () => Object.fromEntries(performance.getEntriesByType("mark")
    .filter((m) => m.name.startsWith("webnn-py:")).map((m) => [m.name.slice(9), m.startTime]));
  self.result = navigator.ml.createContext().then(
    () => ({ ms: performance.now(), resources: resources(), phases: phases() }), (e) => ({ error: String(e) }));
</script>
"""
BARE_PAGE = """<!doctype html><meta charset="utf-8"><title>bare</title>
<script src="/dist/%(runtime)spyodide.js"></script>
<script>%(report)s
  self.result = loadPyodide({ indexURL: new URL("/dist/%(runtime)s", location.href).href, fullStdLib: false }).then(
    () => ({ ms: performance.now(), resources: resources() }), (e) => ({ error: String(e) }));
</script>
"""
SNAPSHOT_MAKE_PAGE = """<!doctype html><meta charset="utf-8"><title>make snapshot</title>
<script src="/dist/%(runtime)spyodide.js"></script>
<script>
  self.result = loadPyodide({ indexURL: new URL("/dist/%(runtime)s", location.href).href, fullStdLib: false,
                              _makeSnapshot: true })
    .then((pyodide) => fetch("/snapshot-upload", { method: "POST", body: pyodide.makeMemorySnapshot() }))
    .then(() => ({ ms: performance.now(), resources: [] }), (e) => ({ error: String(e) }));
</script>
"""
SNAPSHOT_PAGE = """<!doctype html><meta charset="utf-8"><title>snapshot</title>
<script src="/dist/%(runtime)spyodide.js"></script>
<script>%(report)s
  self.result = loadPyodide({ indexURL: new URL("/dist/%(runtime)s", location.href).href, fullStdLib: false,
                              _loadSnapshot: fetch("snapshot.bin").then((r) => r.arrayBuffer()) })
    .then((pyodide) => pyodide.runPython("6 * 7") === 42 ? { ms: performance.now(), resources: resources() }
                                                          : { error: "wrong answer" },
          (e) => ({ error: String(e) }));
</script>
"""


def stock_runtime(served: Path, manifest: dict) -> str:
    """Add Pyodide as distributed to `served` (a copy of dist/): a runtime-<hash>/ folder with
    build/pyodide's python_stdlib.zip and dist/'s copies of the other Pyodide files; returns
    its name + "/"."""
    from tools.build_dist import RUNTIME_DIR, compressed, sha256_hex

    stdlib = (RUNTIME_DIR / "python_stdlib.zip").read_bytes()
    folder = served / f"runtime-{sha256_hex(stdlib)[:16]}"
    shutil.copytree(served / manifest["runtime"], folder,
                    ignore=lambda _, names: [n for n in names if n.startswith(("python_stdlib.zip", "numpy", "webnn_py"))])
    (folder / "python_stdlib.zip").write_bytes(stdlib)
    for encoding, body in compressed(stdlib, sha256_hex(stdlib), REPO / "build" / "cache" / "bench-compressed").items():
        (folder / f"python_stdlib.zip.{encoding}").write_bytes(body)
    return folder.name + "/"


def without_prefetch(served: Path, manifest: dict) -> None:
    """Add webnn-polyfill-no-prefetch.js to `served`: dist/'s entry script on a copy of its
    runtime whose runtime-config.json has no "prefetch" list."""
    folder = served / manifest["runtime"]
    config = json.loads((folder / "runtime-config.json").read_text(encoding="utf-8"))
    config.pop("prefetch", None)
    copy = served / f"runtime-{'f' * 16}"
    shutil.copytree(folder, copy, ignore=lambda _, names: [n for n in names if n.startswith("runtime-config.json")])
    (copy / "runtime-config.json").write_text(json.dumps(config))
    entry = (served / manifest["entry"]).read_text(encoding="utf-8")
    (served / "webnn-polyfill-no-prefetch.js").write_text(entry.replace(manifest["runtime"], copy.name + "/"))


def make_snapshot(p, url: str, target: Path, executable: str, flags: list[str]) -> None:
    """Run SNAPSHOT_MAKE_PAGE in a throwaway profile; its upload is caught here and written to `target`."""
    with tempfile.TemporaryDirectory(prefix="webnn-snapshot-") as profile:
        context = p.chromium.launch_persistent_context(profile, executable_path=executable, headless=True,
                                                       args=flags)
        try:
            def store(route):
                target.write_bytes(route.request.post_data_buffer)
                route.fulfill(status=204)
            context.route("**/snapshot-upload", store)
            visit(context, url)
        finally:
            context.close()


def visit(context, url: str) -> dict:
    page = context.new_page()
    try:
        page.goto(url)
        outcome = page.evaluate("self.result")
    finally:
        page.close()
    if "error" in outcome:
        raise RuntimeError(f"{url}: {outcome['error']}")
    outcome["bytes"] = sum(r["transfer"] for r in outcome["resources"])
    outcome["refetched"] = [r["name"].rsplit("/", 1)[-1] for r in outcome["resources"] if r["transfer"] > 1000]
    return outcome


def one_profile(p, url: str, executable: str, flags: list[str]) -> tuple[dict, dict]:
    with tempfile.TemporaryDirectory(prefix="webnn-load-") as profile:
        context = p.chromium.launch_persistent_context(profile, executable_path=executable, headless=True,
                                                       args=flags)
        try:
            first = visit(context, url)
            repeat = visit(context, url)
        finally:
            context.close()
    return first, repeat


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-build", action="store_true", help="use dist/ as it is")
    parser.add_argument("--snapshot", action="store_true",
                        help="also measure loadPyodide() from a memory snapshot (no packages)")
    parser.add_argument("--no-prefetch", action="store_true",
                        help="also measure the polyfill without fetching the wheels while loadPyodide() runs")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    from webnn_py.serve import PolyfillServer
    from wpt_runner.chromium import HEADLESS_FLAGS, chromium_path

    if not args.no_build:
        subprocess.run([sys.executable, str(REPO / "tools" / "build_dist.py")], check=True)
    manifest = json.loads((DIST / "manifest.json").read_text(encoding="utf-8"))
    load_before = os.getloadavg()
    samples: dict[tuple[str, str], list[dict]] = {}
    with tempfile.TemporaryDirectory() as pages:
        served = Path(pages, "dist")
        shutil.copytree(DIST, served)
        Path(pages, "polyfill.html").write_text(POLYFILL_PAGE % REPORT)
        without_prefetch(served, manifest)
        Path(pages, "no-prefetch.html").write_text(
            (POLYFILL_PAGE % REPORT).replace("webnn-polyfill.js", "webnn-polyfill-no-prefetch.js"))
        fill = {"runtime": stock_runtime(served, manifest), "report": REPORT}
        Path(pages, "bare.html").write_text(BARE_PAGE % fill)
        Path(pages, "make-snapshot.html").write_text(SNAPSHOT_MAKE_PAGE % fill)
        Path(pages, "snapshot.html").write_text(SNAPSHOT_PAGE % fill)
        names = ["polyfill", "bare"] + (["no-prefetch"] if args.no_prefetch else []) + \
            (["snapshot"] if args.snapshot else [])
        with PolyfillServer(root=pages, dist=served) as server, sync_playwright() as p:
            if args.snapshot:
                snapshot = Path(pages, "snapshot.bin")
                make_snapshot(p, f"{server.url}/make-snapshot.html", snapshot, chromium_path(), HEADLESS_FLAGS)
                import brotli
                print(f"memory snapshot: {snapshot.stat().st_size / 1e6:.1f} MB "
                      f"({len(brotli.compress(snapshot.read_bytes(), quality=9, lgwin=24)) / 1e6:.1f} MB brotli-9; "
                      "served uncompressed here)", flush=True)
            for run in range(args.runs):
                order = names[run % len(names):] + names[:run % len(names)]
                for name in order:
                    first, repeat = one_profile(p, f"{server.url}/{name}.html", chromium_path(), HEADLESS_FLAGS)
                    samples.setdefault((name, "first"), []).append(first)
                    samples.setdefault((name, "repeat"), []).append(repeat)
                    print(f"run {run + 1} {name:11s} first {first['ms'] / 1000:6.2f} s ({first['bytes'] / 1e6:.2f} MB)"
                          f"  repeat {repeat['ms'] / 1000:6.2f} s ({repeat['bytes'] / 1e6:.2f} MB"
                          f"{', refetched: ' + ', '.join(repeat['refetched']) if repeat['refetched'] else ''})",
                          flush=True)
    load_after = os.getloadavg()

    def median(name: str, visit_kind: str, key: str = "ms") -> float:
        return statistics.median(s[key] for s in samples[(name, visit_kind)])

    bare_first = median("bare", "first")
    print(f"\nmedians of {args.runs} runs (ms since navigation start; MB over the network, i.e. brotli + headers):")
    for name in names:
        for kind in ("first", "repeat"):
            print(f"  {name:11s} {kind:6s} visit {median(name, kind) / 1000:6.2f} s   "
                  f"{median(name, kind, 'bytes') / 1e6:6.2f} MB")
    for name, kind in [(n, k) for n in names if "phases" in samples[(n, "first")][0] for k in ("first", "repeat")]:
        # the shim's User Timing marks: when each boot phase ended
        marks = [s["phases"] for s in samples[(name, kind)]]
        phases = [name for name in marks[0] if all(name in m for m in marks)]
        print(f"  {name:11s} {kind:6s} phases (ms since navigation, median): " + ", ".join(
            f"{name} {statistics.median(m[name] for m in marks):.0f}" for name in phases))
    print(f"polyfill first visit / bare first visit:  {median('polyfill', 'first') / bare_first:.2f}x (issue 14: <= 1.2x)")
    print(f"polyfill repeat visit / bare first visit: {median('polyfill', 'repeat') / bare_first:.2f}x (issue 14: <= 0.5x)")
    if args.no_prefetch:
        print(f"polyfill without prefetch / bare first visit: {median('no-prefetch', 'first') / bare_first:.2f}x, "
              f"repeat {median('no-prefetch', 'repeat') / bare_first:.2f}x")
    if args.snapshot:
        print(f"loadPyodide() from the snapshot / bare loadPyodide(), first visit: "
              f"{median('snapshot', 'first') / bare_first:.2f}x, repeat visit: "
              f"{median('snapshot', 'repeat') / median('bare', 'repeat'):.2f}x")
    print(f"transfer to the first createContext(): {median('polyfill', 'first', 'bytes') / 1e6:.2f} MB brotli "
          f"(issue 14: <= 6 MB); bare loadPyodide(): {median('bare', 'first', 'bytes') / 1e6:.2f} MB")
    print(f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
