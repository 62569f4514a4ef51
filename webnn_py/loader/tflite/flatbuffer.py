"""A bounds-checked FlatBuffers reader: only what reading a TFLite model needs.

FlatBuffers' generated readers trust every offset in the file. A model handed
to `MLModelLoader.load()` is untrusted input, so every read here checks that it
lies inside the buffer, every vector's length is checked against the bytes that
remain (so a hostile length cannot make us allocate more than the file holds),
and the reader never follows offsets recursively on its own: callers walk a
fixed schema of bounded depth, so cyclic offsets cannot make it loop. Offsets
can still make a DAG: a vector of N offsets to one table holding a vector of M
elements costs N * M reads in N * 4 + M * 4 bytes. So every value examined
(a scalar, a vector's element, a byte) is counted against a budget linear in
the file's size, and a file that exceeds it is refused (`Buffer.examined`).

Layout facts used (FlatBuffers "binary format" internals):
  * the file starts with a uoffset (u32, little endian) to the root table,
    then an optional 4-byte file identifier;
  * a table starts with a soffset (i32) back to its vtable: vtable = table - soffset;
  * a vtable is u16 vtable byte size, u16 table byte size, then one u16 per
    field: the field's offset inside the table, 0 when absent (default value);
  * a reference field (table, vector, string) holds a uoffset relative to the
    field's own position; a vector/string is a u32 element count followed by
    the elements (a string also by a NUL byte).
"""
from __future__ import annotations

import struct

import numpy as np

from ...base.errors import DataError

_U8, _U16, _U32, _I32 = struct.Struct("<B"), struct.Struct("<H"), struct.Struct("<I"), struct.Struct("<i")
_SCALARS = {
    "bool": struct.Struct("<?"), "i8": struct.Struct("<b"), "u8": _U8, "i16": struct.Struct("<h"),
    "u16": _U16, "i32": _I32, "u32": _U32, "i64": struct.Struct("<q"), "u64": struct.Struct("<Q"),
    "f32": struct.Struct("<f"), "f64": struct.Struct("<d"),
}
_NUMPY = {"u8": "<u1", "i8": "<i1", "u16": "<u2", "i16": "<i2", "i32": "<i4", "u32": "<u4",
          "i64": "<i8", "u64": "<u8", "f32": "<f4", "f64": "<f8"}


# Values examined per byte of the file, plus a floor for small files. A well-formed
# file is read about once (its vtables, shared by many tables, a few times more);
# the translators re-read operators' options when a WHILE expands a subgraph again.
READ_BUDGET_FACTOR = 16
READ_BUDGET_MIN = 1 << 16


class FlatBufferError(DataError):
    """The bytes are not a well-formed FlatBuffer (of the expected schema)."""


class Buffer:
    def __init__(self, data: bytes, what: str = "model"):
        self.data = memoryview(bytes(data)) if not isinstance(data, bytes) else memoryview(data)
        self.size = len(self.data)
        self.what = what
        self.examined = 0           # values read so far (scalars, vector elements, bytes)
        self.budget = READ_BUDGET_FACTOR * self.size + READ_BUDGET_MIN

    def fail(self, problem: str) -> FlatBufferError:
        return FlatBufferError(f"load: the {self.what} is malformed: {problem}")

    def _check(self, pos: int, length: int, what: str) -> None:
        if pos < 0 or length < 0 or pos + length > self.size:
            raise self.fail(f"{what} at byte {pos} (+{length}) lies outside the {self.size}-byte buffer")

    def spend(self, count: int) -> None:
        """Count `count` values examined against the read budget."""
        if self.examined + count > self.budget:
            raise self.fail(f"reading it takes more than {self.budget} values for {self.size} bytes "
                            "(its offsets refer to the same tables over and over)")
        self.examined += count

    def scalar(self, kind: str, pos: int, what: str = "a value"):
        s = _SCALARS[kind]
        self.spend(1)
        self._check(pos, s.size, what)
        return s.unpack_from(self.data, pos)[0]

    def root(self, identifier: bytes | None = None) -> "Table":
        if self.size < 8:
            raise self.fail(f"it holds only {self.size} bytes")
        if identifier is not None and bytes(self.data[4:8]) != identifier:
            raise self.fail(f"the file identifier is {bytes(self.data[4:8])!r}, expected {identifier!r}")
        return Table(self, self.scalar("u32", 0, "the root offset"), "the root table")


class Table:
    """One table: field access by slot number (the field's index in the schema)."""

    __slots__ = ("buf", "pos", "vtable", "vtable_size", "what")

    def __init__(self, buf: Buffer, pos: int, what: str):
        self.buf, self.pos, self.what = buf, pos, what
        soffset = buf.scalar("i32", pos, f"{what}'s vtable offset")
        self.vtable = pos - soffset
        self.vtable_size = buf.scalar("u16", self.vtable, f"{what}'s vtable")
        if self.vtable_size < 4 or self.vtable_size % 2:
            raise buf.fail(f"{what}'s vtable size {self.vtable_size} is invalid")
        buf._check(self.vtable, self.vtable_size, f"{what}'s vtable")

    def _field(self, slot: int) -> int:
        """The absolute position of field `slot`, or 0 when it is absent."""
        entry = 4 + 2 * slot
        if entry + 2 > self.vtable_size:
            return 0
        offset = self.buf.scalar("u16", self.vtable + entry)
        return self.pos + offset if offset else 0

    def has(self, slot: int) -> bool:
        return self._field(slot) != 0

    def scalar(self, slot: int, kind: str, default=0):
        at = self._field(slot)
        if not at:
            return default
        return self.buf.scalar(kind, at, f"{self.what}: field {slot}")

    def _target(self, slot: int, what: str) -> int:
        at = self._field(slot)
        if not at:
            return 0
        target = at + self.buf.scalar("u32", at, what)
        return target

    def table(self, slot: int, what: str) -> "Table | None":
        target = self._target(slot, what)
        return Table(self.buf, target, what) if target else None

    def _vector(self, slot: int, element_size: int, what: str) -> tuple[int, int]:
        """(position of the first element, element count); (0, 0) when absent."""
        target = self._target(slot, what)
        if not target:
            return 0, 0
        count = self.buf.scalar("u32", target, f"{what}'s length")
        start = target + 4
        # Checked before anything is allocated: a count must fit in the bytes that remain.
        if count * element_size > self.buf.size - start:
            raise self.buf.fail(f"{what} claims {count} elements of {element_size} bytes at byte {start}, "
                                f"past the end of the {self.buf.size}-byte buffer")
        return start, count

    def array(self, slot: int, kind: str, what: str) -> np.ndarray | None:
        """A vector of scalars as a (read-only) numpy array, or None when absent."""
        dtype = np.dtype(_NUMPY[kind])
        start, count = self._vector(slot, dtype.itemsize, what)
        if not start:
            return None
        self.buf.spend(count)
        return np.frombuffer(self.buf.data, dtype=dtype, count=count, offset=start)

    def ints(self, slot: int, what: str, kind: str = "i32") -> list[int]:
        arr = self.array(slot, kind, what)
        return [] if arr is None else [int(v) for v in arr]

    def bytes(self, slot: int, what: str) -> memoryview | None:
        start, count = self._vector(slot, 1, what)
        if not start:
            return None
        self.buf.spend(count)
        return self.buf.data[start:start + count]

    def string(self, slot: int, what: str) -> str | None:
        raw = self.bytes(slot, what)
        if raw is None:
            return None
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            raise self.buf.fail(f"{what} is not UTF-8") from None

    def tables(self, slot: int, what: str) -> list["Table"]:
        start, count = self._vector(slot, 4, what)
        out = []
        for i in range(count):
            at = start + 4 * i
            out.append(Table(self.buf, at + self.buf.scalar("u32", at), f"{what}[{i}]"))
        return out

    def table_count(self, slot: int, what: str) -> int:
        return self._vector(slot, 4, what)[1]
