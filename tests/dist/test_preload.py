"""The wheels dist/'s runtime-config.json names are fetched once, while loadPyodide() runs.

The shim unpacks them itself (unpackStoredWheels), so it fetches them with fetch() as soon as
the config is there (fetchStoredWheels), with the lock's integrity; WebKit fetched each wheel
twice while they went through a preload hint (it does not hand a preloaded response to a fetch
carrying an integrity). A config without sitePackages makes loadPackage() fetch them: then
the shim preloads them (prefetch), and the browser hands the preloaded responses to
loadPackage()'s fetches (Chromium warns about no unused preload)."""
import json

import pytest

from tests.dist import EXPECTED, graph_page, plain_http_server

# The wheels' resource entries and the shim's boot marks, once the page computed its graph.
FACTS = """({
  fetched: performance.getEntriesByType("resource").map((e) => ({
    name: e.name.split("/").pop(), initiator: e.initiatorType, start: e.startTime })),
  marks: Object.fromEntries(performance.getEntriesByType("mark").map((m) => [m.name, m.startTime])),
})"""


def site_with(dist, tmp_path, config_edit=None):
    site = tmp_path / "site"
    site.mkdir()
    if config_edit is None:
        (site / "dist").symlink_to(dist)
    else:   # a copy of dist/ whose runtime-config.json is edited (its compressed copies dropped)
        import shutil

        shutil.copytree(dist, site / "dist")
        runtime = next((site / "dist").glob("runtime-*"))
        config = json.loads((runtime / "runtime-config.json").read_text(encoding="utf-8"))
        config_edit(config)
        (runtime / "runtime-config.json").write_text(json.dumps(config))
        for suffix in (".br", ".gz"):
            (runtime / f"runtime-config.json{suffix}").unlink()
    (site / "page.html").write_text(graph_page("/dist/webnn-polyfill.js"))
    return site


def wheels_of(dist, manifest):
    config = json.loads((dist / manifest["runtime"] / "runtime-config.json").read_text(encoding="utf-8"))
    wheels = sorted(entry["file"] for entry in config["prefetch"])
    assert len(wheels) == 2 and all(name.endswith(".whl") for name in wheels)
    return wheels


def visit_in_chromium(browser, site):
    page = browser.new_page()
    messages = []
    page.on("console", lambda message: messages.append(message.text))
    try:
        with plain_http_server(site) as url:
            page.goto(f"{url}/page.html")
            page.wait_for_function("window.pageResult !== undefined", timeout=120_000)
            outcome = page.evaluate("window.pageResult")
            facts = page.evaluate(FACTS)
            page.wait_for_timeout(3500)   # Chromium reports an unused preload ~3 s after load
    finally:
        page.close()
    assert "error" not in outcome, outcome["error"]
    assert outcome["values"] == EXPECTED
    return facts, messages


def assert_fetched_once_while_pyodide_loads(facts, wheels, initiator):
    for wheel in wheels:
        entries = [e for e in facts["fetched"] if e["name"] == wheel]
        assert [e["initiator"] for e in entries] == [initiator], (wheel, facts["fetched"])
        assert entries[0]["start"] < facts["marks"]["webnn-py:loadPyodide"], (wheel, entries, facts["marks"])


def test_the_wheels_are_fetched_once_by_the_shim_while_pyodide_loads(dist, manifest, browser, tmp_path):
    facts, messages = visit_in_chromium(browser, site_with(dist, tmp_path))
    assert_fetched_once_while_pyodide_loads(facts, wheels_of(dist, manifest), "fetch")
    assert not [m for m in messages if "preload" in m], messages


def test_webkit_fetches_each_wheel_once(dist, manifest, tmp_path):
    import browsers

    reason = browsers.unavailable("webkit")
    if reason:
        pytest.skip(reason)
    site = site_with(dist, tmp_path)
    with plain_http_server(site) as url, browsers.launch("webkit") as engine, engine.new_page() as tab:
        tab.goto(f"{url}/page.html")
        tab.wait_for("window.pageResult !== undefined")
        outcome = tab.evaluate("window.pageResult")
        facts = tab.evaluate(FACTS)
    assert "error" not in outcome, outcome["error"]
    assert outcome["values"] == EXPECTED
    assert_fetched_once_while_pyodide_loads(facts, wheels_of(dist, manifest), "fetch")


def test_without_site_packages_loadpackage_gets_the_preloaded_wheels(dist, manifest, browser, tmp_path):
    facts, messages = visit_in_chromium(browser, site_with(dist, tmp_path, lambda config: config.pop("sitePackages")))
    assert_fetched_once_while_pyodide_loads(facts, wheels_of(dist, manifest), "link")
    assert not [m for m in messages if "preload" in m], messages
