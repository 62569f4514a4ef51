"""A cross-origin isolated page (COOP: same-origin, COEP: require-corp) including the
polyfill from another origin (webnn_py.serve sends CORS and CORP on the polyfill's
files), and the data paths that need or exercise such pages: SharedArrayBuffer-backed
views, BigInt64Array/BigUint64Array for int64/uint64, float16 as Uint16Array bits and as
Float16Array where the engine has it. Every engine; expected values are hand-computed."""
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from . import lacks

PAGES = Path(__file__).parent / "pages"
ISOLATION = {"Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp"}

# What the page fetched, as Resource Timing saw it (every engine has it; no
# automation protocol's network events needed). responseStatus is missing
# where an engine does not report it.
RESOURCES = "performance.getEntriesByType('resource').map(e => ({url: e.name, status: e.responseStatus}))"


@pytest.fixture(scope="module")
def outcome(browser):
    from webnn_py.serve import PolyfillServer

    # Two ports: two origins. Only the page's server sends the isolation headers.
    with PolyfillServer(root=PAGES, headers=ISOLATION) as pages, PolyfillServer() as polyfill, \
            browser.new_page() as page:
        page.goto(f"{pages.url}/isolated.html?polyfill={polyfill.url}")
        page.wait_for("window.isolatedFacts !== undefined")
        facts = page.evaluate("window.isolatedFacts")
        resources = page.evaluate(RESOURCES)
        # The headers each fetched URL carries, asked of the same server again.
        headers = {}
        for url in {r["url"] for r in resources if r["url"].startswith(polyfill.url)}:
            with urllib.request.urlopen(url) as response:
                headers[url] = (response.status, {k.lower(): v for k, v in response.headers.items()})
        yield facts, polyfill.url, resources, headers, browser


def test_the_page_is_isolated_and_the_polyfill_comes_from_another_origin(outcome):
    facts, polyfill_url, resources, _, browser = outcome
    assert "error" not in facts, facts.get("error")
    assert facts["crossOriginIsolated"] is True
    assert facts["sharedArrayBufferName"] == "SharedArrayBuffer"
    if browser.engine != "webkit":   # WebKitGTK: SharedArrayBuffers exist, the global does not (isolated.html)
        assert facts["sharedArrayBuffer"] == "function"
    assert facts["polyfillOrigin"] == polyfill_url and facts["pageOrigin"] != polyfill_url
    failed = [r for r in resources if r["url"].startswith(polyfill_url) and r.get("status") not in (None, 0, 200)]
    assert not failed, failed


def test_every_runtime_asset_carries_cors_and_corp(outcome):
    _, polyfill_url, _, headers, _ = outcome
    names = {url.rsplit("/", 1)[-1] for url in headers}
    # The script, Pyodide's loader, wasm, standard library, lock file, numpy and our wheel.
    for expected in ["webnn-polyfill.js", "pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip",
                     "pyodide-lock.json"]:
        assert expected in names, sorted(names)
    assert any(n.startswith("numpy-") and n.endswith(".whl") for n in names), sorted(names)
    assert any(n.startswith("webnn_py-") and n.endswith(".whl") for n in names), sorted(names)
    for url, (status, fields) in headers.items():
        assert status == 200, url
        assert fields.get("access-control-allow-origin") == "*", url
        assert fields.get("cross-origin-resource-policy") == "cross-origin", url


def test_shared_array_buffer_views_in_and_out(outcome):
    facts = outcome[0]
    assert facts["sab"] == {"same": True, "shared": True, "values": [3, -4, 6.5, 200]}
    assert facts["sabOffsets"] == [0, 0, 1, 2, 3, 4, 0, 0, 1.5, 2.5, 3.5, 4.5, 0, 0, 0, 0]


def test_int64_and_uint64_through_bigint_arrays(outcome):
    facts = outcome[0]
    assert facts["int64"] == [str(2**60 + 1), "-1", str(-(2**63) + 7)]
    assert facts["uint64"] == [str(2**64 - 1), str(2**53 + 1)]


def test_float16_as_bits_and_as_float16array(outcome):
    facts, browser = outcome[0], outcome[4]
    # 1.5+1.5 = 3 (0x4200), -2-2 = -4 (0xc400), 65504+65504 overflows to +inf (0x7c00),
    # 2^-24 + 2^-24 = 2^-23 (0x0002, still subnormal).
    assert facts["float16Bits"] == [0x4200, 0xC400, 0x7C00, 0x0002]
    if facts["float16Array"] == "undefined":
        pytest.skip(lacks(browser, "Float16Array"))
    # 0.1 is 0x2e66 in float16; times 2 is exact (0x3266). 2000 = 0x67d0.
    assert facts["float16ArrayBits"] == [0x3C00, 0xC600, 0x67D0, 0x3266]
    assert facts["float16Array"] == np.array([1, -6, 2000, 0.2], np.float16).astype(float).tolist()
