"""dist/ from static servers that are not ours, at a sub-path: the slice (a graph computed via
navigator.ml) and the demo, in a normal page and in cross-origin isolated pages, by a script
tag (with its integrity attribute) and by a side-effect module import."""
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.dist import EXPECTED, graph_page, isolating_server, plain_http_server, run_page

REPO = Path(__file__).resolve().parents[2]
MOUNT = "static/webnn-py"   # the sub-path dist/ is copied to


@pytest.fixture(scope="module")
def site(dist, tmp_path_factory) -> Path:
    """A site folder: pages at its root, a copy of dist/ under /static/webnn-py/."""
    root = tmp_path_factory.mktemp("site")
    shutil.copytree(dist, root / MOUNT)
    # The copy's own manifest: dist/ may be rebuilt meanwhile (another session's new wheel).
    manifest = json.loads((root / MOUNT / "manifest.json").read_text(encoding="utf-8"))
    script = f"/{MOUNT}/webnn-polyfill.js"
    (root / "tag.html").write_text(graph_page(script, "tag", manifest["integrity"]))
    (root / "import.html").write_text(graph_page(script, "import"))
    (root / "relative.html").write_text(graph_page(f"{MOUNT}/webnn-polyfill.js", "tag"))
    (root / "bad-integrity.html").write_text(graph_page(script, "tag", "sha384-" + "A" * 64))
    return root


def fetched_from(outcome: dict, prefix: str) -> set[str]:
    return {url[len(prefix):] for url in outcome["resources"] if url.startswith(prefix)}


@pytest.fixture(scope="module")
def manifest(site) -> dict:
    return json.loads((site / MOUNT / "manifest.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", ["tag.html", "import.html", "relative.html"])
def test_a_plain_static_server_at_a_sub_path(site, manifest, browser, page):
    with plain_http_server(site) as url:
        outcome = run_page(browser, f"{url}/{page}")
    assert "error" not in outcome, outcome["error"]
    assert outcome["values"] == EXPECTED
    fetched = fetched_from(outcome, f"{url}/{MOUNT}/")
    runtime, pyodide = manifest["runtime"], manifest["pyodide"]
    assert {runtime + n for n in ("python_stdlib.zip", "pyodide-lock.json")} | {pyodide + "pyodide.asm.wasm"} <= fetched, fetched
    assert all(name.startswith((runtime, pyodide)) or name == "webnn-polyfill.js" for name in fetched), fetched
    # Nothing outside the mount (e.g. a /pyodide/ of the dev server's layout); the browser's own
    # favicon request aside.
    assert not [u for u in outcome["resources"] if u.startswith(url) and f"/{MOUNT}/" not in u
                and not u.endswith("/favicon.ico")]


def test_a_wrong_integrity_attribute_blocks_the_script(site, browser):
    with plain_http_server(site) as url:
        page = browser.new_page()
        try:
            page.goto(f"{url}/bad-integrity.html")
            page.wait_for_function("window.pageResult !== undefined")
            outcome = page.evaluate("window.pageResult")
        finally:
            page.close()
    # The script never ran: there is no navigator.ml to call createContext() on.
    assert "reading 'createContext'" in outcome["error"], outcome
    assert "values" not in outcome


def test_a_cross_origin_isolated_page_same_origin(site, browser):
    # A static server that adds only COOP/COEP; same origin, so no CORS or CORP is needed.
    with isolating_server(site) as url:
        outcome = run_page(browser, f"{url}/tag.html")
    assert "error" not in outcome, outcome["error"]
    assert outcome["crossOriginIsolated"] is True and outcome["values"] == EXPECTED


def test_a_cross_origin_isolated_page_with_dist_from_another_origin(site, manifest, tmp_path, browser):
    # dist/ from webnn_py.serve's /dist/ (the headers a static host must send: CORS + CORP),
    # the page from a server that adds only COOP/COEP.
    from webnn_py.serve import PolyfillServer

    with PolyfillServer(dist=site / MOUNT) as host:
        script = f"{host.url}/dist/webnn-polyfill.js"
        (tmp_path / "tag.html").write_text(graph_page(script, "tag", manifest["integrity"]))
        (tmp_path / "import.html").write_text(graph_page(script, "import"))
        with isolating_server(tmp_path) as url:
            outcomes = [run_page(browser, f"{url}/{page}") for page in ("tag.html", "import.html")]
    for outcome in outcomes:
        assert "error" not in outcome, outcome["error"]
        assert outcome["crossOriginIsolated"] is True and outcome["values"] == EXPECTED
        assert f"{manifest['pyodide']}pyodide.asm.wasm" in fetched_from(outcome, f"{host.url}/dist/")


def test_the_demo_from_a_plain_static_server(site, browser):
    from demo.run import DEMO_DIR, mask_check, prepare

    prepare()
    html = (DEMO_DIR / "index.html").read_text(encoding="utf-8")
    assert html.count('<script src="/webnn-polyfill.js"></script>') == 1
    demo = site / "demo"
    demo.mkdir()
    (demo / "index.html").write_text(html.replace('<script src="/webnn-polyfill.js">',
                                                  f'<script src="../{MOUNT}/webnn-polyfill.js">'))
    for folder in ("models", "images"):
        shutil.copytree(DEMO_DIR / folder, demo / folder)
    with plain_http_server(site) as url:
        outcome = run_page(browser, f"{url}/demo/index.html", "window.demoResult")
    mask = np.asarray(outcome["mask"], np.float32).reshape(outcome["maskDimensions"])[0, :, :, 0]
    ok, detail = mask_check(mask)
    assert ok, detail
