"""A minimal W3C WebDriver (classic, HTTP + JSON) client: one session, its
commands as (method, path, body) calls. WebKitWebDriver speaks only this."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


class WebDriverError(RuntimeError):
    """An error answer: {"value": {"error": ..., "message": ...}}."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(f"{error}: {message}")
        self.error = error


def request(base_url: str, method: str, path: str, body: dict | None = None, timeout: float = 60.0) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base_url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json; charset=utf-8"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            answer = json.load(response)
    except urllib.error.HTTPError as exc:
        answer = json.load(exc)
    value = answer.get("value")
    if isinstance(value, dict) and "error" in value:
        raise WebDriverError(value["error"], value.get("message", ""))
    return value


class WebDriverSession:
    def __init__(self, base_url: str, capabilities: dict, timeout: float = 120.0) -> None:
        self.base_url = base_url
        created = request(base_url, "POST", "/session", {"capabilities": capabilities}, timeout=timeout)
        self.id = created["sessionId"]
        self.capabilities = created["capabilities"]

    def call(self, method: str, path: str, body: dict | None = None, timeout: float = 60.0) -> Any:
        return request(self.base_url, method, f"/session/{self.id}{path}", body, timeout=timeout)

    def end(self) -> None:
        request(self.base_url, "DELETE", f"/session/{self.id}", timeout=60)
