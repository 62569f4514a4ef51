"""Host-only checks of the runner's parts: META parsing, scopes, wrappers, serving,
expectations and the report (no browser)."""
import json
import urllib.request

import pytest

from wpt_runner import expectations, manifest, meta, results, wrappers
from wpt_runner.server import WptServer


def test_meta_lines_stop_at_the_first_code_line():
    parsed = meta.parse_js_meta("// META: title=t\n// a comment\n// META: script=a.js\n// META: script=/b.js\n"
                                "// META: timeout=long\n// META: variant=?cpu\n// META: variant=gpu\n"
                                "// META: global=window,worker\n\n'use strict';\n// META: script=late.js\n")
    assert parsed.title == "t" and parsed.scripts == ["a.js", "/b.js"] and parsed.timeout == "long"
    assert parsed.variants == ["?cpu", "?gpu"] and parsed.globals == "window,worker"


def test_html_meta():
    parsed, harness = meta.parse_html_meta('<title> x </title><meta name="timeout" content="long">'
                                           '<meta name=variant content="?a"><script src="/resources/testharness.js">')
    assert harness and parsed.title == "x" and parsed.timeout == "long" and parsed.variants == ["?a"]
    assert meta.parse_html_meta("<p>a reftest</p>")[1] is False


@pytest.mark.parametrize("value,scopes,unsupported", [
    (None, ["window", "dedicatedworker"], []),
    ("window,worker", ["window", "dedicatedworker", "sharedworker", "serviceworker"], []),
    ("worker,-sharedworker", ["dedicatedworker", "serviceworker"], []),
    ("default,shadowrealm-in-window", ["window", "dedicatedworker"], ["shadowrealm-in-window"]),
    ("dedicatedworker-module", ["dedicatedworker-module"], []),
])
def test_global_scopes(value, scopes, unsupported):
    assert manifest.expand_scopes(value) == (scopes, unsupported)


def test_routes():
    assert wrappers.route("/d/x.any.html") == ("/d/x.any.js", "any-window")
    assert wrappers.route("/d/x.any.worker.html") == ("/d/x.any.js", "dedicatedworker")
    assert wrappers.route("/d/x.any.worker.js") == ("/d/x.any.js", "worker-script")
    assert wrappers.route("/d/x.worker.html") == ("/d/x.worker.js", "worker-js")
    assert wrappers.route("/d/x.window.html") == ("/d/x.window.js", "window-js")
    assert wrappers.route("/d/x.html") is None


def test_long_tests_get_60_seconds():
    item = manifest.TestItem("/a.any.html", "window", "long", "/a.any.js")
    assert item.timeout_seconds == 60 and manifest.TestItem("/b.html", "window", "normal", "/b.html").timeout_seconds == 10


@pytest.fixture()
def tree(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.any.js").write_text("// META: title=T\n// META: script=h.js\n// META: timeout=long\ntest(()=>{});\n")
    (tmp_path / "d" / "page.html").write_text("<!DOCTYPE html><meta charset=utf-8><p>hi")
    (tmp_path / "d" / "w.js").write_text("postMessage(1);\n")
    (tmp_path / "d" / "page.html.headers").write_text("X-Test: yes\n")
    return tmp_path


def fetch(url, headers=None):
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {})) as response:
        return response.read().decode(), response.headers


def test_server_wrappers_and_injection(tree):
    settings = wrappers.Settings(polyfill_url="/p.js", timeout_multiplier=2)
    with WptServer(tree, settings) as server:
        page, _ = fetch(server.url + "/d/x.any.html?cpu")
        assert page.index("/__wpt_runner__/hook.js?timeout_multiplier=2") < page.index('src="/p.js"') \
            < page.index("/resources/testharness.js") < page.index('src="h.js"') < page.index('src="x.any.js"')
        assert '<meta name="timeout" content="long">' in page and "<title>T</title>" in page
        script, headers = fetch(server.url + "/d/x.any.worker.js?cpu")
        assert headers["Content-Type"].startswith("text/javascript")
        assert script.splitlines()[0] == 'importScripts("/p.js");' and "self.META_TITLE = \"T\";" in script
        assert script.index("testharness.js") < script.index('"h.js"') < script.index('"x.any.js"')
        sw_page, _ = fetch(server.url + "/d/x.any.serviceworker.html")
        assert "navigator.serviceWorker.register(\"x.any.worker.js\" + location.search" in sw_page
        html, headers = fetch(server.url + "/d/page.html", {"Sec-Fetch-Dest": "document"})
        assert html.startswith('<!DOCTYPE html>\n<script src="/__wpt_runner__/hook.js') and headers["X-Test"] == "yes"
        worker, _ = fetch(server.url + "/d/w.js", {"Sec-Fetch-Dest": "worker", "Sec-Fetch-Mode": "same-origin"})
        assert worker == 'importScripts("/p.js");\npostMessage(1);\n'
        module, _ = fetch(server.url + "/d/w.js", {"Sec-Fetch-Dest": "worker", "Sec-Fetch-Mode": "cors"})
        assert module.startswith('import "/p.js";')
        plain, _ = fetch(server.url + "/d/w.js", {"Sec-Fetch-Dest": "script"})
        assert plain == "postMessage(1);\n"   # importScripts() and <script> loads stay untouched
        with pytest.raises(urllib.error.HTTPError):
            fetch(server.url + "/../etc/passwd")


def test_generated_wrappers_carry_the_source_files_headers(tree):
    # WPT's x.any.js.headers (e.g. COOP/COEP for SharedArrayBuffer) applies to the
    # pages and worker scripts generated from x.any.js, after __dir__.headers.
    (tree / "d" / "x.any.js.headers").write_text(
        "Cross-Origin-Opener-Policy: same-origin\nCross-Origin-Embedder-Policy: require-corp\n"
        "Content-Type: text/plain\n")
    (tree / "d" / "__dir__.headers").write_text("X-Dir: 1\n")
    with WptServer(tree, wrappers.Settings(polyfill_url="/p.js")) as server:
        for path in ("/d/x.any.html?cpu", "/d/x.any.worker.html", "/d/x.any.worker.js?cpu"):
            _, headers = fetch(server.url + path)
            assert headers["Cross-Origin-Embedder-Policy"] == "require-corp", path
            assert headers["Cross-Origin-Opener-Policy"] == "same-origin", path
            assert headers["X-Dir"] == "1", path
            assert not headers["Content-Type"].startswith("text/plain"), path   # the wrapper keeps its own type
        _, headers = fetch(server.url + "/d/x.any.js")        # the source file itself, as before
        assert headers["Content-Type"] == "text/plain" and headers["X-Dir"] == "1"
    (tree / "d" / "x.any.js.headers").unlink()
    (tree / "d" / "__dir__.headers").unlink()
    with WptServer(tree, wrappers.Settings(polyfill_url="/p.js")) as server:
        _, headers = fetch(server.url + "/d/x.any.html")
        assert "Cross-Origin-Embedder-Policy" not in headers


def test_server_serves_wptserve_rewrites(tree):
    """idlharness tests load /resources/WebIDLParser.js, which a WPT checkout holds as
    resources/webidl2/lib/webidl2.js (wptserve rewrites the URL); a real file of that
    name (the self-test tree's) is served as it is."""
    lib = tree / "resources" / "webidl2" / "lib"
    lib.mkdir(parents=True)
    (lib / "webidl2.js").write_text("// webidl2\n")
    with WptServer(tree, wrappers.Settings(polyfill_url="/p.js")) as server:
        body, headers = fetch(server.url + "/resources/WebIDLParser.js")
        assert body == "// webidl2\n" and headers["Content-Type"].startswith("text/javascript")
        (tree / "resources" / "WebIDLParser.js").write_text("// own\n")
        assert fetch(server.url + "/resources/WebIDLParser.js")[0] == "// own\n"


def test_expectations_matching(tmp_path):
    path = tmp_path / "e.json"
    path.write_text(json.dumps({"/a.html": {"status": ["OK", "TIMEOUT"], "subtests": {"s1": "FAIL", "s*": "NOTRUN"}},
                                "/b/*": "SKIP", "/a.*": {"subtests": {"s2": "PASS"}}, "note": "ignored"}))
    exp = expectations.Expectations.load(path)
    assert exp.test_status("/a.html") == ["OK", "TIMEOUT"] and exp.skipped("/b/c.html")
    assert exp.subtest_status("/a.html", "s1") == ["FAIL"]
    assert exp.subtest_status("/a.html", "s2") == ["PASS"]       # an exact name in a pattern entry beats a pattern
    assert exp.subtest_status("/a.html", "s3") == ["NOTRUN"]
    assert exp.subtest_status("/z.html", "s1") == ["PASS"] and exp.test_status("/z.html") == ["OK"]
    result = results.TestResult("/a.html", "TIMEOUT", subtests=[results.SubtestResult("s1", "PASS")])
    exp.apply(result)
    assert not result.unexpected and result.subtests[0].unexpected and result.unexpected_count() == 1
    report = results.wptreport([result], 1, 2, {})
    entry = report["results"][0]
    assert "expected" not in entry and entry["known_intermittent"] == ["TIMEOUT"]
    assert entry["subtests"][0]["expected"] == "FAIL"


def test_expectations_with_reasons(tmp_path):
    path = tmp_path / "e.json"
    path.write_text(json.dumps({"/a.html": {"status": "OK", "reason": "page-level note", "subtests": {
        "s1": {"status": "FAIL", "reason": "§8.9.36 step 3"}, "s2": {"status": ["PASS", "TIMEOUT"], "reason": "load"},
        "s3": "FAIL"}}}))
    exp = expectations.Expectations.load(path)
    assert exp.subtest_status("/a.html", "s1") == ["FAIL"]
    assert exp.subtest_status("/a.html", "s2") == ["PASS", "TIMEOUT"] and exp.subtest_status("/a.html", "s3") == ["FAIL"]
    for bad, message in [({"s1": {"reason": "no status"}}, 'needs "status"'),
                         ({"s1": {"status": "FAIL", "why": "x"}}, 'needs "status"'),
                         ({"s1": {"status": "FAIL", "reason": 3}}, "reason must be a string")]:
        path.write_text(json.dumps({"/a.html": {"subtests": bad}}))
        with pytest.raises(expectations.ExpectationError, match=message):
            expectations.Expectations.load(path)


def test_summary_table():
    table = results.summary_table([
        results.TestResult("/x/a.html", "OK", subtests=[results.SubtestResult("s", "PASS")]),
        results.TestResult("/x/y/b.html", "CRASH"),
    ])
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["directory", "tests", "OK"]
    assert lines[2].split() == ["/x/", "1", "1", "0", "0", "0", "0", "1", "1", "0", "0"]
    assert lines[3].split()[:6] == ["/x/y/", "1", "0", "0", "0", "1"]
    assert lines[4].split()[0] == "total"


def test_expectation_files_layer_in_order(tmp_path):
    # The common file, then an engine's own: its entries win key by key, subtest by subtest.
    common, engine = tmp_path / "common.json", tmp_path / "engine.json"
    common.write_text(json.dumps({"/a.html": {"status": "OK", "subtests": {"s1": "FAIL", "s2": "FAIL"}},
                                  "/p/*": "ERROR", "/b.html": "TIMEOUT"}))
    engine.write_text(json.dumps({"/a.html": {"subtests": {"s2": "PASS", "s3": "NOTRUN"}}, "/p/x*": "CRASH"}))
    exp = expectations.Expectations.load_all([common, engine])
    assert exp.test_status("/a.html") == ["OK"] and exp.test_status("/b.html") == ["TIMEOUT"]
    assert [exp.subtest_status("/a.html", s) for s in ("s1", "s2", "s3")] == [["FAIL"], ["PASS"], ["NOTRUN"]]
    assert exp.test_status("/p/x.html") == ["CRASH"] and exp.test_status("/p/y.html") == ["ERROR"]
    assert expectations.Expectations.load_all([]).test_status("/a.html") == ["OK"]


def test_report_board_routes_posted_reports_by_page(tree):
    # Firefox and WebKit pages POST their reports; only a page the runner waits for is heard.
    heard = []
    with WptServer(tree, wrappers.Settings(polyfill_url="/p.js", post_reports=True)) as server:
        page, _ = fetch(server.url + "/d/x.any.worker.html")
        assert "hook.js?timeout_multiplier=1&amp;report=post&amp;worker_wrapper=1" in page
        assert "worker_wrapper" not in fetch(server.url + "/d/x.any.html")[0]

        def post(body):
            request = urllib.request.Request(server.url + wrappers.REPORT_URL, data=body, method="POST")
            try:
                with urllib.request.urlopen(request) as response:
                    return response.status
            except urllib.error.HTTPError as error:
                return error.code

        server.reports.listen("/d/x.any.html?cpu", heard.append)
        message = {"type": "result", "test": {"name": "s", "status": 0}}
        assert post(json.dumps({"page": "/d/x.any.html?cpu", "message": message}).encode()) == 204
        assert post(json.dumps({"page": "/d/x.any.html?gpu", "message": message}).encode()) == 404
        assert post(b"not json") == 404 and post(b'{"page": 1, "message": {}}') == 404
        server.reports.forget("/d/x.any.html?cpu")
        assert post(json.dumps({"page": "/d/x.any.html?cpu", "message": message}).encode()) == 404
    assert heard == [message]


def test_shipped_runtime_is_served_immutable_under_its_hash(tree):
    # Content-hashed folder: every file `immutable` (one fetch per browser profile and run);
    # the entry script that names the folder is revalidated; nothing else is served there.
    from wpt_runner.runtime import ShippedRuntime

    runtime = ShippedRuntime(entry=b"// entry naming runtime-0123/\n", folder="runtime-0123",
                             files={"pyodide-4567/pyodide.asm.wasm": b"\0asm", "runtime-0123/runtime-config.json": b"{}"})
    with WptServer(tree, wrappers.Settings(), runtime=runtime) as server:
        body, headers = fetch(server.url + "/__wpt_runner__/webnn-polyfill.js")
        assert body == runtime.entry.decode() and headers["Cache-Control"] == "no-cache"
        body, headers = fetch(server.url + "/__wpt_runner__/pyodide-4567/pyodide.asm.wasm")
        assert body == "\0asm" and headers["Content-Type"] == "application/wasm"
        assert headers["Cache-Control"] == "public, max-age=31536000, immutable"
        for missing in ("/__wpt_runner__/runtime-0123/other.js", "/__wpt_runner__/runtime-0123/pyodide.asm.wasm",
                        "/__wpt_runner__/runtime-9999/runtime-config.json"):
            with pytest.raises(urllib.error.HTTPError):
                fetch(server.url + missing)


def test_upstream_expectation_files_load_and_give_reasons():
    # The shipped files: each engine's layers onto the common one; every deviation says why.
    from pathlib import Path

    folder = Path(wrappers.__file__).parent / "expectations"
    common = folder / "upstream-2025-03-31.json"
    for engine in ("chromium", "firefox", "webkit"):
        layered = expectations.Expectations.load_all([common, folder / f"upstream-2025-03-31-{engine}.json"])
        assert layered.test_status("/webnn/validation_tests/pad.https.any.html?cpu") == ["OK"]
        # one entry covers every device variant (the 2026 text has no device types)
        readtensor = "/webnn/conformance_tests/byob_readtensor.https.any.html"
        name = "readTensor() with a larger ArrayBuffer"
        assert [layered.subtest_status(f"{readtensor}?{device}", name) for device in ("cpu", "gpu", "npu")] \
            == [["FAIL"]] * 3
        assert layered.subtest_status(f"{readtensor}?cpu", "another subtest") == ["PASS"]
    data = json.loads(common.read_text(encoding="utf-8"))
    for key, value in data.items():
        if key.startswith("/") and isinstance(value, dict):
            for name, subtest in value.get("subtests", {}).items():
                assert isinstance(subtest, dict) and subtest.get("reason"), (key, name)


@pytest.mark.parametrize("mode", ["engine", "boot", "off"])
def test_shipped_runtime_snapshot_modes(pyodide_runtime, mode):
    # Every mode: the config names Pyodide's folder, and every wheel the lock names (relative to
    # that folder, as Pyodide resolves them) is served. The snapshot is never kept in Cache
    # Storage (origin storage a test would leave to the next); `boot` restores it in every engine,
    # `engine` only where the shim's default does (JavaScriptCore); `off` ships none.
    import base64
    import hashlib
    import posixpath

    from wpt_runner.runtime import shipped_runtime

    runtime = shipped_runtime(mode)
    config = json.loads(runtime.files[runtime.folder + "/runtime-config.json"])
    lock = json.loads(runtime.files[runtime.folder + "/pyodide-lock.json"])
    index = posixpath.normpath(posixpath.join(runtime.folder, config["indexURL"]))
    assert index.startswith("pyodide-") and index + "/pyodide.asm.wasm" in runtime.files
    for package in lock["packages"].values():
        assert posixpath.normpath(posixpath.join(index, package["file_name"])) in runtime.files, package
    snapshot = config["memorySnapshot"]
    if mode == "off":
        assert snapshot is False and not any(name.endswith("/memory-snapshot.bin") for name in runtime.files)
        return
    data = runtime.files[f"{runtime.folder}/{snapshot['file']}"]
    assert snapshot["integrity"] == "sha256-" + base64.b64encode(hashlib.sha256(data).digest()).decode()
    assert snapshot["keep"] is False
    assert snapshot.get("atBoot", False) is (mode == "boot")
    assert runtime.entry.count(f'"pyodideURL": "{runtime.folder}/"'.encode()) == 1


def test_job_browsers_cache_wasm_early_and_keep_a_callers_js_flags():
    # Chromium keeps only the last --js-flags: a caller's V8 flags are joined to the caching
    # ones (after them, so a caller's own caching setting wins), never dropped or dropping ours.
    from wpt_runner.runner import WASM_CACHING_JS_FLAGS, chromium_flags

    plain = chromium_flags([])
    assert plain.count(f"--js-flags={WASM_CACHING_JS_FLAGS}") == 1
    joined = chromium_flags(["--mute-audio", "--js-flags=--wasm-caching-threshold=1 --expose-gc"])
    assert [a for a in joined if a.startswith("--js-flags=")] == \
        [f"--js-flags={WASM_CACHING_JS_FLAGS} --wasm-caching-threshold=1 --expose-gc"]
    assert "--mute-audio" in joined and "--headless=new" in joined
