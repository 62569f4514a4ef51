"""One build at a time per checkout.

`./dev` serialises whole set-ups, but test sessions also re-run the kernels and
runtime steps (the pyodide_runtime fixture), and two of them at once (two
terminals, parallel test shards) would write the same files under build/.
"""
from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def build_lock(name: str) -> Iterator[None]:
    """Hold an exclusive lock file build/.NAME.lock for the duration."""
    path = ROOT / "build" / f".{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
