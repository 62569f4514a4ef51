"""What dist/ does for a repeat visit, and for JavaScriptCore (README "Use it in your page"):

- numpy's extension modules are files of their own (tools/dist_trim.split_extension_modules),
  compiled by streaming while loadPyodide() runs and linked by the shim (linkSideModules); a host
  that does not send application/wasm still works (compiled from the bytes);
- the memory snapshot made at build time (tools/dist_snapshot.mjs) is fetched after a first
  visit's boot and kept in Cache Storage, and the next visit restores it (memorySnapshots); a
  kept copy whose bytes are not the build's is not used (and is replaced), a snapshot that does
  not load falls back to initialising Python, a page can opt out; WebKit restores it on its
  first visit already;
- the stored wheels are unpacked into site-packages by the shim, not by Pyodide's Python
  (unpackStoredWheels), with loadPackage() as the fallback.

Every visit computes the same graph (values worked out by hand in tests/dist/__init__.py)."""
import base64
import hashlib
import http.server
import io
import json
import shutil
import threading
import zipfile
from pathlib import Path

import pytest

from tests.dist import EXPECTED, graph_page, plain_http_server

SNAPSHOT_CACHE = "webnn-py-memory-snapshots"
PYODIDE_SNAPSHOT_MAGIC = 1886286592     # Pyodide 0.27's snapshot header word (pyodide.asm.js)
SITE_PACKAGES = "/lib/python3.12/site-packages/"

# What the page reports besides the graph's values: the shim's boot marks and what Cache
# Storage holds for the polyfill afterwards ({url: [size, first header word]}).
REPORT = """
<script type="module">
await new Promise((resolve) => { const poll = () => (window.pageResult ? resolve() : setTimeout(poll, 50)); poll(); });
const marks = performance.getEntriesByType("mark").map((m) => m.name);
const stored = async () => {
  const cache = await caches.open("%s");
  const out = {};
  for (const request of await cache.keys()) {
    const bytes = new Uint8Array(await (await cache.match(request)).arrayBuffer());
    out[request.url] = [bytes.length, bytes.length >= 4 ? new Uint32Array(bytes.buffer, 0, 1)[0] : null];
  }
  return out;
};
let snapshots = await stored();
// waitForSnapshot: until a Pyodide snapshot (its magic number) is kept, the polyfill keeps it after the boot
const kept = () => Object.values(snapshots).some(([size, magic]) => magic === %d);
for (let i = 0; i < 600 && !kept() && window.waitForSnapshot; i++) {
  await new Promise((resolve) => setTimeout(resolve, 100));
  snapshots = await stored();
}
window.report = { ...window.pageResult, marks, snapshots,
                  wasm: performance.getEntriesByType("resource").filter((e) => e.name.endsWith(".wasm"))
                    .map((e) => e.name.split("/").pop()) };
</script>
""" % (SNAPSHOT_CACHE, PYODIDE_SNAPSHOT_MAGIC)

# Replaces whatever the polyfill kept with other bytes, then reports the keys it changed.
DAMAGE = """<!doctype html><meta charset="utf-8"><script type="module">
const cache = await caches.open("%s");
const keys = await cache.keys();
for (const request of keys) await cache.put(request, new Response(new Uint8Array(4096).fill(7)));
window.damaged = keys.map((r) => r.url);
</script>""" % SNAPSHOT_CACHE


def page(script: str, config: str = "", wait_for_snapshot: bool = True) -> str:
    head = f"<script>window.waitForSnapshot = {json.dumps(wait_for_snapshot)};{config}</script>\n"
    return head + graph_page(script) + REPORT


@pytest.fixture
def site(dist, tmp_path) -> Path:
    root = tmp_path / "site"
    shutil.copytree(dist, root / "dist")
    (root / "page.html").write_text(page("/dist/webnn-polyfill.js"))
    (root / "opt-out.html").write_text(page("/dist/webnn-polyfill.js", "self.webnnPolyfillConfig = "
                                            "{ memorySnapshot: false };", wait_for_snapshot=False))
    (root / "nowait.html").write_text(page("/dist/webnn-polyfill.js", wait_for_snapshot=False))
    (root / "damage.html").write_text(DAMAGE)
    return root


@pytest.fixture
def chromium():
    """A fresh profile per test: its own HTTP cache and Cache Storage."""
    from browsers.chromium import launch_chromium

    with launch_chromium() as context:
        yield context


def visit(context, url: str, result: str = "window.report") -> tuple[dict, list[str]]:
    tab = context.new_page()
    console, errors = [], []
    tab.on("console", lambda message: console.append(message.text))
    tab.on("pageerror", lambda error: errors.append(str(error)))
    try:
        tab.goto(url)
        tab.wait_for_function(f"{result} !== undefined", timeout=180_000)
        outcome = tab.evaluate(result)
    finally:
        tab.close()
    assert not errors, errors
    return outcome, console


def runtime_config(site: Path) -> dict:
    manifest = json.loads((site / "dist" / "manifest.json").read_text())
    return json.loads((site / "dist" / manifest["runtime"] / "runtime-config.json").read_text())


def test_the_extension_modules_are_files_of_their_own(dist, manifest):
    runtime = dist / manifest["runtime"]
    config = json.loads((runtime / "runtime-config.json").read_text())
    lock = json.loads((runtime / "pyodide-lock.json").read_text())
    wheel = zipfile.ZipFile(io.BytesIO((runtime / Path(lock["packages"]["numpy"]["file_name"]).name).read_bytes()))
    assert not [n for n in wheel.namelist() if n.endswith(".so")]
    sides = {entry["path"]: entry for entry in config["sideModules"]}
    # numpy's core extension module and the linear algebra one are among them
    assert {SITE_PACKAGES + "numpy/_core/_multiarray_umath.cpython-312-wasm32-emscripten.so",
            SITE_PACKAGES + "numpy/linalg/_umath_linalg.cpython-312-wasm32-emscripten.so"} <= set(sides)
    for path, entry in sides.items():
        data = (runtime / entry["file"]).read_bytes()
        assert data[:4] == b"\0asm", entry["file"]
        assert entry["integrity"] == "sha256-" + base64.b64encode(hashlib.sha256(data).digest()).decode()
        assert entry["file"].endswith(".wasm") and manifest["files"][manifest["runtime"] + entry["file"]]
        # numpy's RECORD names no file the wheel lacks
        record = next(n for n in wheel.namelist() if n.endswith(".dist-info/RECORD"))
        assert path[len(SITE_PACKAGES):] not in wheel.read(record).decode()


def snapshot_key(url: str, site: Path) -> str:
    return f"{url}/dist/{json.loads((site / 'dist' / 'manifest.json').read_text())['runtime']}memory-snapshot.bin"


def shipped_snapshot(site: Path) -> bytes:
    manifest = json.loads((site / "dist" / "manifest.json").read_text())
    return (site / "dist" / manifest["runtime"] / "memory-snapshot.bin").read_bytes()


def test_the_snapshot_is_pyodides_and_named_with_its_sha256(site):
    data, entry = shipped_snapshot(site), runtime_config(site)["memorySnapshot"]
    assert entry["file"] == "memory-snapshot.bin"
    assert entry["integrity"] == "sha256-" + base64.b64encode(hashlib.sha256(data).digest()).decode()
    assert int.from_bytes(data[:4], "little") == PYODIDE_SNAPSHOT_MAGIC and len(data) > 1_000_000


def test_a_first_visit_keeps_the_snapshot_and_the_next_restores_it(site, chromium):
    with plain_http_server(site) as url:
        first, _ = visit(chromium, f"{url}/page.html")
        repeat, console = visit(chromium, f"{url}/page.html")
        key = snapshot_key(url, site)
    for outcome in (first, repeat):
        assert "error" not in outcome, outcome["error"]
        assert outcome["values"] == EXPECTED
    data = shipped_snapshot(site)
    assert first["snapshots"] == {key: [len(data), PYODIDE_SNAPSHOT_MAGIC]}
    assert "webnn-py:fromSnapshot" not in first["marks"] and "webnn-py:fromSnapshot" in repeat["marks"]
    # the extension modules came as their own files (streamed), none from a wheel
    sides = sorted(entry["file"] for entry in runtime_config(site)["sideModules"])
    assert sorted(first["wasm"]) == sorted(["pyodide.asm.wasm", *sides])
    assert not [m for m in console if "snapshot" in m], console


def test_a_kept_copy_with_other_bytes_is_not_used_and_is_replaced(site, chromium):
    with plain_http_server(site) as url:
        key = snapshot_key(url, site)
        visit(chromium, f"{url}/page.html")
        damaged, _ = visit(chromium, f"{url}/damage.html", "window.damaged")
        assert damaged == [key]
        outcome, _ = visit(chromium, f"{url}/page.html")
    assert "error" not in outcome, outcome["error"]
    assert outcome["values"] == EXPECTED
    assert "webnn-py:fromSnapshot" not in outcome["marks"]
    assert outcome["snapshots"] == {key: [len(shipped_snapshot(site)), PYODIDE_SNAPSHOT_MAGIC]}   # the build's again


def test_a_snapshot_that_does_not_load_falls_back_to_initialising_python(site, chromium):
    # A build whose snapshot is damaged (its integrity updated to match, so it is kept and tried)
    manifest = json.loads((site / "dist" / "manifest.json").read_text())
    runtime = site / "dist" / manifest["runtime"]
    bad = bytearray(shipped_snapshot(site))
    bad[16:48] = bytes(32)   # the build id Pyodide checks
    (runtime / "memory-snapshot.bin").write_bytes(bad)
    for suffix in (".br", ".gz"):
        (runtime / f"memory-snapshot.bin{suffix}").unlink()
    config = runtime_config(site)
    config["memorySnapshot"]["integrity"] = "sha256-" + base64.b64encode(hashlib.sha256(bad).digest()).decode()
    (runtime / "runtime-config.json").write_text(json.dumps(config))
    for suffix in (".br", ".gz"):
        (runtime / f"runtime-config.json{suffix}").unlink()
    with plain_http_server(site) as url:
        visit(chromium, f"{url}/page.html")
        outcome, console = visit(chromium, f"{url}/nowait.html")
    assert "error" not in outcome, outcome["error"]
    assert outcome["values"] == EXPECTED
    assert "webnn-py:fromSnapshot" not in outcome["marks"]
    assert [m for m in console if "the memory snapshot did not load" in m], console


def test_a_page_can_opt_out_of_the_snapshot(site, chromium):
    with plain_http_server(site) as url:
        outcome, _ = visit(chromium, f"{url}/opt-out.html")
    assert outcome["values"] == EXPECTED
    assert outcome["snapshots"] == {}


def test_a_host_without_the_wasm_mime_type_still_boots(site, chromium):
    """Streaming compilation needs application/wasm; without it the extension modules compile
    from their bytes. (Pyodide's own pyodide.asm.wasm keeps its type: Pyodide 0.27 has no such
    fallback and waits forever.)"""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def guess_type(self, path):
            return "application/octet-stream" if path.endswith(".wasm") and "/numpy." in path else super().guess_type(path)

        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(site), **kwargs)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        outcome, _ = visit(chromium, f"http://127.0.0.1:{httpd.server_address[1]}/opt-out.html")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert "error" not in outcome, outcome["error"]
    assert outcome["values"] == EXPECTED


def test_webkit_restores_the_snapshot_on_its_first_visit(site):
    """JavaScriptCore fetches the snapshot at boot (no wasm code cache, slow lower tiers)."""
    import browsers

    reason = browsers.unavailable("webkit")
    if reason:
        pytest.skip(reason)
    with plain_http_server(site) as url, browsers.launch("webkit") as browser, browser.new_page() as tab:
        tab.goto(f"{url}/nowait.html")
        tab.wait_for("window.report !== undefined")
        outcome = tab.evaluate("window.report")
    assert "error" not in outcome, outcome["error"]
    assert outcome["values"] == EXPECTED
    assert "webnn-py:fromSnapshot" in outcome["marks"]


def test_wheels_are_unpacked_by_loadpackage_when_the_config_names_no_site_packages(site, chromium):
    """The shim unpacks dist/'s stored wheels itself (unpackStoredWheels); without the
    config's sitePackages it falls back to Pyodide's loadPackage()."""
    manifest = json.loads((site / "dist" / "manifest.json").read_text())
    runtime = site / "dist" / manifest["runtime"]
    config = runtime_config(site)
    assert config["sitePackages"] == SITE_PACKAGES
    del config["sitePackages"]
    (runtime / "runtime-config.json").write_text(json.dumps(config))
    for suffix in (".br", ".gz"):
        (runtime / f"runtime-config.json{suffix}").unlink()
    with plain_http_server(site) as url:
        outcome, _ = visit(chromium, f"{url}/opt-out.html")
    assert "error" not in outcome, outcome["error"]
    assert outcome["values"] == EXPECTED


def test_webkit_fetches_pyodide_while_the_snapshot_downloads(site):
    """JavaScriptCore's boot hands loadPyodide() the snapshot as a promise, so Pyodide's own
    files are fetched while the snapshot downloads (they used to wait for its last byte): here
    the server answers the snapshot only once pyodide.asm.wasm was asked for (or after 60 s,
    which the assertion tells apart)."""
    import browsers

    reason = browsers.unavailable("webkit")
    if reason:
        pytest.skip(reason)
    wasm_asked = threading.Event()
    order = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(site), **kwargs)

        def do_GET(self):
            name = self.path.split("?")[0].rsplit("/", 1)[-1]
            if name == "pyodide.asm.wasm":
                order.append(name)
                wasm_asked.set()
            elif name == "memory-snapshot.bin":
                order.append("snapshot asked")
                order.append("snapshot answered " + ("after the wasm was asked for" if wasm_asked.wait(60)
                                                     else "after 60 s without"))
            super().do_GET()

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with browsers.launch("webkit") as browser, browser.new_page() as tab:
            tab.goto(f"http://127.0.0.1:{httpd.server_address[1]}/nowait.html")
            tab.wait_for("window.report !== undefined")
            outcome = tab.evaluate("window.report")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert "error" not in outcome, outcome["error"]
    assert outcome["values"] == EXPECTED
    assert "webnn-py:fromSnapshot" in outcome["marks"]
    assert order[:3] == ["snapshot asked", "pyodide.asm.wasm", "snapshot answered after the wasm was asked for"], order
