"""webnn_py.serve (issue 19 item 12, issue 14): percent-encoded paths, no dotfiles, CORS/CORP
only on the polyfill's own files, and dist/ with the headers a good static host sends."""
import gzip
import http.client
from pathlib import Path

import brotli
import pytest

from webnn_py.serve import RUNTIME_DIR, PolyfillServer

IMMUTABLE = "public, max-age=31536000, immutable"


def get(server, path, headers=None):
    """(status, headers, body) of GET `path`, sent exactly as written (no client-side normalising)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


@pytest.fixture()
def root(tmp_path) -> Path:
    (tmp_path / "a b.txt").write_text("space")
    (tmp_path / "é.txt").write_text("accent")
    (tmp_path / "page.html").write_text("<p>mine</p>")
    (tmp_path / ".secret").write_text("token")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".env").write_text("KEY=1")
    return tmp_path


def test_percent_encoded_paths_are_decoded(root):
    with PolyfillServer(root=root) as server:
        assert get(server, "/a%20b.txt")[::2] == (200, b"space")
        assert get(server, "/%C3%A9.txt")[::2] == (200, b"accent")
        assert get(server, "/%70age.html")[::2] == (200, b"<p>mine</p>")
        assert get(server, "/%FF.txt")[0] == 404            # not UTF-8


@pytest.mark.parametrize("path", ["/.secret", "/%2Esecret", "/.git/config", "/sub/.env", "/sub/%2eenv",
                                  "/sub/../.secret", "/%2e%2e/%2e%2e/etc/passwd", "/pyodide/.webnn-py-lock.json",
                                  "/dist/%2E%2E/README.md"])
def test_dotfiles_and_dot_segments_are_never_served(root, path):
    if path.startswith("/pyodide/"):
        assert (RUNTIME_DIR / ".webnn-py-lock.json").is_file()   # it exists, and stays private
    with PolyfillServer(root=root) as server:
        status, headers, body = get(server, path)
    assert status == 404, path
    assert b"token" not in body and b"KEY" not in body
    assert "access-control-allow-origin" not in headers


def test_cors_and_corp_only_on_the_polyfills_files(root, pyodide_runtime, dist):
    with PolyfillServer(root=root, mounts={"/m/": root}) as server:
        for path in ["/webnn-polyfill.js", "/pyodide/pyodide.js", "/pyodide/pyodide-lock.json",
                     "/dist/webnn-polyfill.js"]:
            status, headers, _ = get(server, path)
            assert status == 200, path
            assert headers.get("access-control-allow-origin") == "*", path
            assert headers.get("cross-origin-resource-policy") == "cross-origin", path
        for path in ["/page.html", "/a%20b.txt", "/m/page.html", "/missing.js", "/pyodide/missing.whl"]:
            _, headers, _ = get(server, path)
            assert "access-control-allow-origin" not in headers, path
            assert "cross-origin-resource-policy" not in headers, path


def test_dist_is_served_as_a_static_host_should(dist, manifest):
    wasm = f"/dist/{manifest['pyodide']}pyodide.asm.wasm"
    raw = (dist / manifest["pyodide"] / "pyodide.asm.wasm").read_bytes()
    with PolyfillServer(dist=dist) as server:
        status, headers, body = get(server, "/dist/webnn-polyfill.js", {"Accept-Encoding": "gzip, deflate, br"})
        assert status == 200 and headers["cache-control"] == "no-cache"
        assert headers["content-type"] == "text/javascript" and headers["content-encoding"] == "br"
        assert brotli.decompress(body) == (dist / "webnn-polyfill.js").read_bytes()

        status, headers, body = get(server, wasm, {"Accept-Encoding": "br"})
        assert (status, headers["content-type"], headers["cache-control"]) == (200, "application/wasm", IMMUTABLE)
        assert headers["vary"] == "Accept-Encoding" and headers["content-encoding"] == "br"
        assert brotli.decompress(body) == raw
        assert headers["access-control-allow-origin"] == "*"
        assert headers["cross-origin-resource-policy"] == "cross-origin"

        status, headers, body = get(server, wasm, {"Accept-Encoding": "br;q=0, gzip"})
        assert headers["content-encoding"] == "gzip" and gzip.decompress(body) == raw

        status, headers, body = get(server, wasm)
        assert "content-encoding" not in headers and body == raw and headers["cache-control"] == IMMUTABLE

        # The entry script is revalidated: its ETag or Last-Modified gives a 304 without the body.
        _, headers, _ = get(server, "/dist/webnn-polyfill.js", {"Accept-Encoding": "br"})
        status, _, body = get(server, "/dist/webnn-polyfill.js", {"Accept-Encoding": "br", "If-None-Match": headers["etag"]})
        assert (status, body) == (304, b"")
        status, _, body = get(server, "/dist/webnn-polyfill.js", {"Accept-Encoding": "br", "If-Modified-Since": headers["last-modified"]})
        assert (status, body) == (304, b"")
        status, _, body = get(server, "/dist/webnn-polyfill.js", {"If-Modified-Since": "Thu, 01 Jan 1970 00:00:00 GMT"})
        assert status == 200 and body == (dist / "webnn-polyfill.js").read_bytes()

        assert get(server, "/dist/")[0] == 404                       # no listings
        assert get(server, f"/dist/{manifest['runtime']}missing.whl")[0] == 404
