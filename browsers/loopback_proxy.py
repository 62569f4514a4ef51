"""An HTTP forwarding proxy that sends requests for a few host names to
127.0.0.1 (same port), so that an engine without a host-resolver switch
(WebKitGTK) can load http://name.test:PORT/ — a non-secure origin served
locally. 127.0.0.1 and localhost pass through too (the engine sends every
request here: see browsers/webkit.py on noProxy). Any other host is refused
(502): the proxy reaches nothing but this machine's loopback."""
from __future__ import annotations

import http.client
import http.server
import urllib.parse

from webnn_py.serve import BackgroundServer

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
              "proxy-authorization", "proxy-authenticate"}


LOOPBACK = frozenset({"127.0.0.1", "localhost"})


class _Forward(http.server.BaseHTTPRequestHandler):
    names: frozenset[str] = frozenset()
    protocol_version = "HTTP/1.1"

    def _forward(self) -> None:
        target = urllib.parse.urlsplit(self.path)
        if target.scheme != "http" or target.hostname not in self.names:
            self.send_error(502, f"this proxy only forwards {', '.join(sorted(self.names))}")
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        upstream = http.client.HTTPConnection("127.0.0.1", target.port or 80, timeout=120)
        try:
            path = target.path or "/"
            upstream.request(self.command, path + (f"?{target.query}" if target.query else ""), body, headers)
            response = upstream.getresponse()
            payload = response.read()
        finally:
            upstream.close()
        self.send_response(response.status, response.reason)
        for key, value in response.getheaders():
            if key.lower() not in HOP_BY_HOP | {"content-length"}:
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_HEAD = do_POST = _forward  # noqa: N815

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        pass


class LoopbackProxy(BackgroundServer):
    def __init__(self, names) -> None:
        handler = type("BoundForward", (_Forward,), {"names": frozenset(names) | LOOPBACK})
        super().__init__(http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler))
