"""The shim preloads the wheels dist/'s runtime-config.json names while loadPyodide() runs
(bootPython's prefetch), with the integrity Pyodide's loadPackage() fetches them with, so
the browser hands the preloaded responses to those fetches: each wheel is fetched once, by
the preload, and Chromium warns about no unused preload."""
import json

from tests.dist import EXPECTED, graph_page, plain_http_server


def test_the_wheels_are_preloaded_once_and_used(dist, manifest, browser, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "dist").symlink_to(dist)
    (site / "page.html").write_text(graph_page("/dist/webnn-polyfill.js"))
    config = json.loads((dist / manifest["runtime"] / "runtime-config.json").read_text(encoding="utf-8"))
    wheels = sorted(entry["file"] for entry in config["prefetch"])
    assert len(wheels) == 2 and all(name.endswith(".whl") for name in wheels)
    page = browser.new_page()
    messages = []
    page.on("console", lambda message: messages.append(message.text))
    try:
        with plain_http_server(site) as url:
            page.goto(f"{url}/page.html")
            page.wait_for_function("window.pageResult !== undefined", timeout=120_000)
            outcome = page.evaluate("window.pageResult")
            fetched = page.evaluate("""performance.getEntriesByType("resource")
                .map((e) => ({ name: e.name.split("/").pop(), initiator: e.initiatorType }))""")
            page.wait_for_timeout(3500)   # Chromium reports an unused preload ~3 s after load
    finally:
        page.close()
    assert "error" not in outcome, outcome["error"]
    assert outcome["values"] == EXPECTED
    for wheel in wheels:
        assert [e["initiator"] for e in fetched if e["name"] == wheel] == ["link"], (wheel, fetched)
    assert not [m for m in messages if "preload" in m], messages
