"""A minimal WebDriver BiDi client (the W3C protocol Firefox's built-in remote
agent speaks over a WebSocket): commands with ids answered by futures, events
handed to subscribers, and the RemoteValue → Python conversion of results."""
from __future__ import annotations

import itertools
import json
import math
import threading
from concurrent.futures import Future, TimeoutError as FutureTimeout
from typing import Any, Callable


class BiDiError(RuntimeError):
    """An error response: {"type": "error", "error": ..., "message": ...}."""


class BiDiConnection:
    def __init__(self, url: str) -> None:
        from websockets.sync.client import connect

        # Results (a demo's PNG as a data URL) can be megabytes: no frame size limit.
        # Entered here and closed by close(): the connection outlives this call.
        self._ws = connect(url, max_size=None, open_timeout=30).__enter__()
        self._ids = itertools.count(1)
        self._pending: dict[int, Future] = {}
        self._lock = threading.Lock()
        self._listeners: list[Callable[[str, dict], None]] = []
        self._reader = threading.Thread(target=self._read, daemon=True, name="bidi-reader")
        self._reader.start()

    def on_event(self, listener: Callable[[str, dict], None]) -> None:
        """Call listener(method, params) for every event (from the reader thread)."""
        self._listeners.append(listener)

    def send(self, method: str, params: dict | None = None) -> Future:
        command_id = next(self._ids)
        future: Future = Future()
        with self._lock:
            self._pending[command_id] = future
        self._ws.send(json.dumps({"id": command_id, "method": method, "params": params or {}}))
        return future

    def command(self, method: str, params: dict | None = None, timeout: float = 60.0) -> dict:
        future = self.send(method, params)
        try:
            return future.result(timeout)
        except FutureTimeout:
            raise TimeoutError(f"BiDi {method} got no answer within {timeout:.0f} s") from None

    def _read(self) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            for raw in self._ws:
                message = json.loads(raw)
                if "id" in message and message.get("id") is not None:
                    with self._lock:
                        future = self._pending.pop(message["id"], None)
                    if future is None:
                        continue
                    if message.get("type") == "error":
                        future.set_exception(BiDiError(f"{message.get('error')}: {message.get('message')}"))
                    else:
                        future.set_result(message.get("result", {}))
                elif message.get("type") == "event":
                    for listener in list(self._listeners):
                        listener(message["method"], message.get("params", {}))
        except ConnectionClosed:
            pass
        finally:
            with self._lock:
                pending, self._pending = self._pending, {}
            for future in pending.values():
                future.set_exception(BiDiError("the browser closed the connection"))

    def close(self) -> None:
        self._ws.close()
        self._reader.join(10)


_SPECIAL_NUMBERS = {"NaN": math.nan, "-0": -0.0, "Infinity": math.inf, "-Infinity": -math.inf}


def deserialize(value: dict) -> Any:
    """BiDi's RemoteValue (§ script.RemoteValue) as the JSON-like Python value
    Playwright gives for the same thing: undefined and null are None, bigints ints,
    arrays and sets lists, objects and maps dicts; platform objects their type name."""
    kind = value["type"]
    inner = value.get("value")
    if kind in ("undefined", "null"):
        return None
    if kind in ("string", "boolean"):
        return inner
    if kind == "number":
        return _SPECIAL_NUMBERS.get(inner, inner) if isinstance(inner, str) else inner
    if kind == "bigint":
        return int(inner)
    if kind in ("array", "set"):
        return [deserialize(item) for item in inner or []]
    if kind in ("object", "map"):
        return {(key if isinstance(key, str) else str(deserialize(key))): deserialize(item)
                for key, item in inner or []}
    if kind in ("date", "regexp"):
        return inner if kind == "date" else f"/{inner['pattern']}/{inner.get('flags', '')}"
    return f"[{kind}]"
