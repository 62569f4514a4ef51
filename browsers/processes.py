"""Starting and stopping the browser-side processes (Firefox, WebKitWebDriver, Xvfb)."""
from __future__ import annotations

import re
import socket
import subprocess
import threading
import time


def free_port() -> int:
    """A loopback TCP port nobody listens on now (the driver binds it right after)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_until(process: subprocess.Popen, stream, pattern: str, timeout: float, what: str) -> re.Match:
    """Read `stream` (a text pipe of `process`) line by line until `pattern` matches;
    keep draining it in the background afterwards so the process never blocks on a full pipe."""
    found: list[re.Match] = []
    seen: list[str] = []
    done = threading.Event()

    def pump() -> None:
        for line in stream:
            if not done.is_set():
                seen.append(line.rstrip())
                match = re.search(pattern, line)
                if match:
                    found.append(match)
                    done.set()
        done.set()

    threading.Thread(target=pump, daemon=True).start()
    if not done.wait(timeout) or not found:
        stop(process)
        tail = "\n".join(seen[-20:])
        raise RuntimeError(f"{what} did not start within {timeout:.0f} s (exit code {process.poll()}):\n{tail}")
    return found[0]


def stop(process: subprocess.Popen, grace: float = 10.0) -> None:
    """Terminate, then kill if it does not exit within `grace` seconds."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def wait_until(predicate, timeout: float, what: str, interval: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready within {timeout:.0f} s")
        time.sleep(interval)
