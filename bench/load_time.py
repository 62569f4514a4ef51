"""Load time of dist/ as a page meets it: transfer size, first and repeat visit, against a bare
loadPyodide() page as the yardstick (issue 14 item 5), in any engine of browsers/.

    .venv/bin/python bench/load_time.py [--runs N] [--browser chromium|firefox|webkit] [--no-build]
                                        [--no-snapshot] [--no-prefetch] [--no-bare]

dist/ (rebuilt by tools/build_dist.py unless --no-build) is served by webnn_py.serve's /dist/
route, i.e. with a good static host's headers: brotli by Accept-Encoding, `immutable` for the
content-hashed runtime, `no-cache` for the entry script. Pages on that server:

  polyfill  <script src=/dist/webnn-polyfill.js>, then navigator.ml.createContext()
  bare      <script src=/dist/runtime-<stock hash>/pyodide.js>, then loadPyodide() (no packages):
            Pyodide as it is distributed (build/pyodide's full python_stdlib.zip, dist/'s copies
            of its unchanged loader, asm.js and wasm), served beside dist/ with the same headers;
            dist/'s own stdlib is trimmed to what the polyfill imports (tools/dist_trim.py),
            which would speed up the yardstick too
  no-snapshot  (with --no-snapshot) the polyfill page with webnnPolyfillConfig.memorySnapshot =
            false: what the memory snapshot the shim keeps in Cache Storage saves on a repeat visit
  no-prefetch  (with --no-prefetch) the polyfill page with a runtime-config.json that names no
            wheels to fetch while loadPyodide() runs: what the shim's prefetch saves

Each run launches a fresh browser (browsers.launch: a fresh profile, empty caches) per page:
the first visit is navigation → promise resolved; then a new tab of the same browser navigates
again (same profile: warm HTTP cache, the engine's code cache for streamed wasm, and the memory
snapshot the first visit stored in Cache Storage; the benchmark waits until it is stored, as a
user comes back later): the repeat visit. The pages alternate which goes first. Prints medians,
the shim's boot phases, the ratios (polyfill first visit / bare first visit, polyfill repeat
visit / bare first visit: issue 14 asks ≤ 1.2× and ≤ 0.5×), the bytes transferred (encoded
bodies, i.e. brotli, from Resource Timing) and the load average before and after. Numbers only,
never assertions: the machine is shared.
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
# What the polyfill keeps for the next visit (js_shim/webnn-polyfill.js, memorySnapshots):
# stored after the first visit's boot, in the background; a returning user comes back later.
SNAPSHOT_STORED = """caches.open("webnn-py-memory-snapshots").then(async (cache) => {
  for (let i = 0; i < 600; i++) {
    if ((await cache.keys()).length) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
})"""


def stock_runtime(served: Path, manifest: dict) -> str:
    """Add Pyodide as distributed to `served` (a copy of dist/): a runtime-<hash>/ folder with
    build/pyodide's python_stdlib.zip, dist/'s copies of Pyodide's own files (its pyodide folder)
    and its package index; returns its name + "/"."""
    from tools.build_dist import LOCK_NAME, RUNTIME_DIR, compressed, sha256_hex

    stdlib = (RUNTIME_DIR / "python_stdlib.zip").read_bytes()
    folder = served / f"runtime-{sha256_hex(stdlib)[:16]}"
    shutil.copytree(served / manifest["pyodide"], folder)
    for name in (LOCK_NAME, LOCK_NAME + ".br", LOCK_NAME + ".gz"):
        shutil.copyfile(served / manifest["runtime"] / name, folder / name)
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


def visit(browser, url: str) -> dict:
    with browser.new_page() as page:
        page.goto(url)
        outcome = page.evaluate("self.result")
        if "error" not in outcome and outcome.get("phases"):
            outcome["snapshotStored"] = page.evaluate(SNAPSHOT_STORED)
    if "error" in outcome:
        raise RuntimeError(f"{url}: {outcome['error']}")
    outcome["bytes"] = sum(r["transfer"] for r in outcome["resources"])
    outcome["refetched"] = [r["name"].rsplit("/", 1)[-1] for r in outcome["resources"] if r["transfer"] > 1000]
    return outcome


def one_profile(engine: str, url: str) -> tuple[dict, dict, str]:
    """A first visit in a fresh profile, then a repeat visit in a new tab of the same browser
    (same profile: its HTTP cache, code cache and Cache Storage)."""
    import browsers

    with browsers.launch(engine) as browser:
        first = visit(browser, url)
        repeat = visit(browser, url)
        return first, repeat, f"{browser.engine} {browser.version}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-build", action="store_true", help="use dist/ as it is")
    parser.add_argument("--browser", default="chromium", help="chromium, firefox or webkit (browsers/)")
    parser.add_argument("--no-snapshot", action="store_true",
                        help="also measure the polyfill without its memory snapshot (webnnPolyfillConfig.memorySnapshot = false)")
    parser.add_argument("--no-bare", action="store_true", help="skip the yardstick (comparing variants only)")
    parser.add_argument("--no-prefetch", action="store_true",
                        help="also measure the polyfill without fetching the wheels while loadPyodide() runs")
    args = parser.parse_args()

    import browsers
    from webnn_py.serve import PolyfillServer

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
        Path(pages, "no-snapshot.html").write_text((POLYFILL_PAGE % REPORT).replace(
            '<script src="/dist/', '<script>self.webnnPolyfillConfig = { memorySnapshot: false };</script>\n'
                                   '<script src="/dist/', 1))
        fill = {"runtime": stock_runtime(served, manifest), "report": REPORT}
        Path(pages, "bare.html").write_text(BARE_PAGE % fill)
        names = (["polyfill"] if args.no_bare else ["polyfill", "bare"]) + (["no-snapshot"] if args.no_snapshot else []) + \
            (["no-prefetch"] if args.no_prefetch else [])
        version = None
        with PolyfillServer(root=pages, dist=served) as server:
            for run in range(args.runs):
                order = names[run % len(names):] + names[:run % len(names)]
                for name in order:
                    first, repeat, version = one_profile(args.browser, f"{server.url}/{name}.html")
                    samples.setdefault((name, "first"), []).append(first)
                    samples.setdefault((name, "repeat"), []).append(repeat)
                    print(f"run {run + 1} {name:11s} first {first['ms'] / 1000:6.2f} s ({first['bytes'] / 1e6:.2f} MB)"
                          f"  repeat {repeat['ms'] / 1000:6.2f} s ({repeat['bytes'] / 1e6:.2f} MB"
                          f"{', refetched: ' + ', '.join(repeat['refetched']) if repeat['refetched'] else ''})",
                          flush=True)
    load_after = os.getloadavg()

    def median(name: str, visit_kind: str, key: str = "ms") -> float:
        return statistics.median(s[key] for s in samples[(name, visit_kind)])

    bare_first = median("bare", "first") if ("bare", "first") in samples else float("nan")
    print(f"\n{version}: medians of {args.runs} runs (ms since navigation start; MB over the network, i.e. brotli + headers):")
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
    if args.no_snapshot:
        print(f"polyfill without memory snapshot / bare first visit: {median('no-snapshot', 'first') / bare_first:.2f}x, "
              f"repeat {median('no-snapshot', 'repeat') / bare_first:.2f}x")
    print(f"transfer to the first createContext(): {median('polyfill', 'first', 'bytes') / 1e6:.2f} MB (brotli where the engine accepts it) "
          f"(issue 14: <= 6 MB)" + (f"; bare loadPyodide(): {median('bare', 'first', 'bytes') / 1e6:.2f} MB"
                                    if "bare" in names else ""))
    print(f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
