"""Assertion helpers for the portable tests, which also run inside Pyodide where pytest is absent."""
from __future__ import annotations

import contextlib
import re


@contextlib.contextmanager
def raises(exc_type, match: str | None = None):
    """Like pytest.raises: the block must raise `exc_type` whose message matches `match`."""
    try:
        yield
    except exc_type as exc:
        if match is not None and not re.search(match, str(exc)):
            raise AssertionError(f"{type(exc).__name__} message {str(exc)!r} does not match {match!r}") from exc
        return
    raise AssertionError(f"{exc_type.__name__} was not raised")


async def rejects(awaitable, exc_type, match: str | None = None):
    with raises(exc_type, match):
        await awaitable
