"""Corrupted models: truncations, byte flips, random bytes and crafted hostile
offsets/lengths give only clean exceptions (DataError for malformed bytes,
NotSupportedError for what we do not translate), never a crash, a hang, a huge
allocation or another exception type. Each load's work is bounded structurally,
not by a clock (the machine is shared): the values the flatbuffer reader examined
stay within its read budget (linear in the file's size) and the operators
translated within the importer's operator budget (linear in the operators the
file holds)."""
from __future__ import annotations

import asyncio
import struct

import numpy as np
import pytest

from webnn_py.base.errors import DataError, NotSupportedError
from webnn_py.loader import tflite
from webnn_py.loader.tflite import parse, schema, translate
from webnn_py.loader.tflite.flatbuffer import Buffer, READ_BUDGET_FACTOR, READ_BUDGET_MIN
from webnn_py.loader.tflite.importer import OPERATOR_BUDGET_FACTOR, OPERATOR_BUDGET_MIN
from webnn_py.api.builder import MLGraphBuilder
from webnn_py.api.context import MLContext

from .test_ops import _quantized_conv, conv_opts, rand
from .tflite_writer import ModelWriter, options

CLEAN = (DataError, NotSupportedError)


def small_model() -> bytes:
    """A few ops with constants, options and names: conv, depthwise, pool, reshape, softmax."""
    w = ModelWriter()
    g = w.subgraph("main")
    x = g.tensor([1, 6, 6, 2], name="x0")
    a = g.tensor([1, 6, 6, 3])
    g.op("CONV_2D", [x, g.const(rand(3, 3, 3, 2)), g.const(rand(3))], [a], conv_opts(0, act=3))
    b = g.tensor([1, 3, 3, 3])
    g.op("MAX_POOL_2D", [a], [b], options("Pool2DOptions", padding=0, strideW=2, strideH=2, filterWidth=2,
                                          filterHeight=2))
    c = g.tensor([1, 27])
    g.op("RESHAPE", [b, g.const(np.array([1, 27], np.int32))], [c])
    y = g.tensor([1, 27], name="y")
    g.op("SOFTMAX", [c], [y], options("SoftmaxOptions", beta=1.0))
    g.io([x], [y])
    w.signature("serving_default", 0, {"x0": x}, {"y": y})
    return w.finish()


_LOOP = asyncio.new_event_loop()


def _translate(data: bytes):
    """Parse and translate (what MLModelLoader.load does before build), in a
    running event loop as MLContext needs."""
    async def go():
        return await translate(MLGraphBuilder(MLContext("default", True)), data)
    return _LOOP.run_until_complete(go())


class Meter:
    """The work of the loads made while it is installed: the flatbuffer readers
    (Buffer.examined: values read) and the importers' sessions (operators
    translated: how much of Session.budget they spent)."""

    def __init__(self, monkeypatch):
        self.buffers: list[Buffer] = []
        self.sessions: list[tflite.Session] = []
        meter = self

        class CountedBuffer(Buffer):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                meter.buffers.append(self)

        class CountedSession(tflite.Session):
            def __post_init__(self):
                super().__post_init__()
                self.initial_budget = self.budget
                meter.sessions.append(self)

        monkeypatch.setattr(schema, "Buffer", CountedBuffer)
        monkeypatch.setattr(tflite, "Session", CountedSession)

    def check(self, data: bytes, what: str) -> None:
        """The last load examined at most READ_BUDGET_FACTOR values per byte (+ READ_BUDGET_MIN)
        and translated at most OPERATOR_BUDGET_FACTOR times the file's operators (+ the minimum)."""
        buffer = self.buffers[-1]
        assert buffer.size == len(data)
        assert buffer.examined <= READ_BUDGET_FACTOR * len(data) + READ_BUDGET_MIN, \
            f"{what}: {buffer.examined} values examined in {len(data)} bytes"
        if self.sessions:
            session = self.sessions[-1]
            in_file = sum(len(g.operators) for g in session.model.subgraphs)
            translated = session.initial_budget - session.budget
            assert translated <= OPERATOR_BUDGET_FACTOR * in_file + OPERATOR_BUDGET_MIN + 1, \
                f"{what}: {translated} operators translated, the file holds {in_file}"


@pytest.fixture(autouse=True)
def meter(monkeypatch) -> Meter:
    return Meter(monkeypatch)


def load(data: bytes) -> None:
    """_translate; clean exceptions are expected and fine."""
    try:
        _translate(data)
    except CLEAN as exc:
        assert str(exc), "an error without a message"


def assert_clean(meter: Meter, data: bytes, what: str) -> None:
    meter.buffers.clear()
    meter.sessions.clear()
    try:
        load(data)
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"{what}: {type(exc).__name__}: {exc}")
    meter.check(data, what)


@pytest.fixture(scope="module")
def small() -> bytes:
    data = small_model()
    load(data)          # itself valid
    return data


def test_the_small_model_is_valid(small):
    inputs, outputs, _, state = _translate(small)
    assert state is None
    assert [i.name for i in inputs] == ["x0"] and [o.name for o in outputs] == ["y"]


def test_truncated_at_every_offset(small, meter):
    for end in range(len(small)):
        assert_clean(meter, small[:end], f"truncated to {end} bytes")


def test_truncated_real_model(models_dir, meter):
    data = (models_dir / "selfie_segmentation.tflite").read_bytes()
    for end in np.linspace(0, len(data) - 1, 60).astype(int):
        assert_clean(meter, data[:end], f"selfie truncated to {end} bytes")


def test_single_byte_flips(small, meter):
    rng = np.random.default_rng(1)
    for position in range(len(small)):
        corrupted = bytearray(small)
        corrupted[position] ^= int(rng.integers(1, 256))
        assert_clean(meter, bytes(corrupted), f"byte {position} flipped")


def test_random_byte_flips_in_real_models(models_dir, meter):
    rng = np.random.default_rng(2)
    for name in ("selfie_segmentation.tflite", "face_detection_full_range_sparse.tflite"):
        data = (models_dir / name).read_bytes()
        # The flatbuffer's tables sit at the file's end, the weights in between:
        # flips are drawn over the whole file and over the last 4 KiB.
        for trial in range(40):
            corrupted = bytearray(data)
            low = 0 if trial % 2 else max(0, len(data) - 4096)
            for position in rng.integers(low, len(data), size=8):
                corrupted[position] = int(rng.integers(0, 256))
            assert_clean(meter, bytes(corrupted), f"{name} trial {trial}")


def test_random_bytes(meter):
    rng = np.random.default_rng(3)
    for size in (0, 1, 7, 8, 16, 100, 4096, 65536):
        for _ in range(5):
            data = bytearray(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
            assert_clean(meter, bytes(data), f"{size} random bytes")
            if size >= 8:
                data[4:8] = b"TFL3"     # past the identifier check
                assert_clean(meter, bytes(data), f"{size} random bytes with the TFL3 identifier")


@pytest.mark.parametrize("value", [0, 1, 4, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFC, 0xFFFFFFFF])
def test_hostile_u32_at_every_aligned_position(small, value, meter):
    """Every aligned 32-bit word (offsets, vector lengths, scalars) replaced by a
    hostile value: offsets to itself (0), just past (4), far outside, negative
    when read as a soffset, and huge vector lengths."""
    for position in range(0, len(small) - 3, 4):
        corrupted = bytearray(small)
        struct.pack_into("<I", corrupted, position, value)
        assert_clean(meter, bytes(corrupted), f"u32 {value:#x} at byte {position}")


def test_cyclic_subgraph_offset_points_back_at_the_root(small, meter):
    """The subgraphs vector's element offset redirected to the model table itself."""
    from webnn_py.loader.tflite.flatbuffer import Buffer
    root = Buffer(small).root(b"TFL3")
    start, count = root._vector(2, 4, "subgraphs")
    assert count == 1
    corrupted = bytearray(small)
    struct.pack_into("<I", corrupted, start, (root.pos - start) & 0xFFFFFFFF)
    assert_clean(meter, bytes(corrupted), "subgraph offset back to the root")


def test_huge_vector_length_is_rejected_before_allocating(small):
    from webnn_py.loader.tflite.flatbuffer import Buffer
    root = Buffer(small).root(b"TFL3")
    target = root._target(4, "buffers")
    corrupted = bytearray(small)
    struct.pack_into("<I", corrupted, target, 0x3FFFFFFF)
    with pytest.raises(DataError, match="claims 1073741823 elements"):
        parse(bytes(corrupted))


def test_offsets_sharing_one_table_exhaust_the_read_budget(meter):
    """A DAG of offsets: 2,000 operator entries all pointing at one operator whose
    inputs vector holds 2,000 indices -- 4,000,000 values to read from ~90 kB.
    The reader stops at its budget (linear in the file) with a DataError."""
    from webnn_py.loader.tflite.flatbuffer import Buffer as Reader
    count = 2000
    w = ModelWriter()
    g = w.subgraph("main")
    x, y = g.tensor([1], name="x"), g.tensor([1], name="y")
    g.op("ADD", [x] * count, [y])
    for _ in range(count - 1):
        g.op("ADD", [x, x], [y])
    g.io([x], [y])
    data = bytearray(w.finish())
    subgraph = Reader(bytes(data)).root(b"TFL3").tables(2, "subgraphs")[0]
    start, entries = subgraph._vector(3, 4, "operators")
    assert entries == count
    shared = start + struct.unpack_from("<I", data, start)[0]      # operator 0, the big one
    for i in range(count):
        at = start + 4 * i
        struct.pack_into("<I", data, at, shared - at)
    try:
        _translate(bytes(data))
        error = None
    except CLEAN as exc:
        error = exc
    meter.check(bytes(data), "2,000 offsets to one operator")
    assert isinstance(error, DataError) and "over and over" in str(error), repr(error)


def test_expanding_whiles_stay_within_the_operator_budget(meter):
    """WHILEs that expand 4**12 times (test_while.expanding_model) are cut off by the
    importer's operator budget: a clean NotSupportedError after a bounded number of
    operators translated."""
    from .test_while import expanding_model
    assert_clean(meter, expanding_model(), "WHILEs expanding 4**12 times")


def test_wrong_identifier_and_version(small):
    with pytest.raises(DataError, match="file identifier"):
        parse(small[:4] + b"XXXX" + small[8:])
    with pytest.raises(DataError, match="holds only 3 bytes"):
        parse(b"TFL")


def test_quantized_model_byte_flips(meter):
    data = _quantized_conv(np.int8)
    rng = np.random.default_rng(4)
    for position in rng.integers(0, len(data), size=300):
        corrupted = bytearray(data)
        corrupted[position] ^= 0xFF
        assert_clean(meter, bytes(corrupted), f"quantized model byte {position} inverted")
