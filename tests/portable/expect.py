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


def ulp_distance(actual, expected):
    """Units in the last place between two float arrays of the same type (numpy),
    counted on the ordered integer image of the IEEE bit patterns."""
    import numpy as np

    actual, expected = np.asarray(actual), np.asarray(expected).astype(np.asarray(actual).dtype)
    int_type = {2: np.int16, 4: np.int32, 8: np.int64}[actual.dtype.itemsize]

    def ordered(x):
        bits = x.view(int_type).astype(np.int64)
        return np.where(bits < 0, np.iinfo(int_type).min - bits, bits)

    return np.abs(ordered(actual) - ordered(expected))


def assert_close(actual, expected, *, ulp: int | None = None, atol: float | None = None, what: str = ""):
    """WPT-style comparison: exact for integers; for floats within `ulp` units in
    the last place of the result type, or within `atol`. NaNs must match NaNs."""
    import numpy as np

    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"{what} shape {actual.shape} != expected {expected.shape}"
    if actual.dtype.kind != "f":
        mismatch = actual != expected.astype(actual.dtype)
        assert not mismatch.any(), f"{what} integers differ at {np.argwhere(mismatch)[:5].tolist()}: " \
                                   f"{actual[mismatch][:5]} != {expected.astype(actual.dtype)[mismatch][:5]}"
        return
    exp = expected.astype(np.float64)
    nan = np.isnan(exp)
    assert (np.isnan(actual) == nan).all(), f"{what} NaN positions differ"
    a, e = actual[~nan], expected.astype(actual.dtype)[~nan]
    if ulp is not None:
        bad = ulp_distance(a, e) > ulp
    else:
        bad = np.abs(a.astype(np.float64) - exp[~nan]) > atol
        bad &= ~(np.isinf(a) & (a == exp[~nan]))
    assert not bad.any(), (f"{what} {int(bad.sum())} of {a.size} elements outside "
                           f"{'%d ULP' % ulp if ulp is not None else 'atol %g' % atol}: "
                           f"got {a[bad][:5]}, expected {e[bad][:5]}")
