"""Corrupted models: truncations, byte flips, random bytes and crafted hostile
offsets/lengths give only clean exceptions (DataError for malformed bytes,
NotSupportedError for what we do not translate), each within a time bound;
never a crash, a hang, a huge allocation or another exception type."""
from __future__ import annotations

import asyncio
import struct
import time

import numpy as np
import pytest

from webnn_py.base.errors import DataError, NotSupportedError
from webnn_py.loader.tflite import parse, translate
from webnn_py.api.builder import MLGraphBuilder
from webnn_py.api.context import MLContext

from .test_ops import _quantized_conv, conv_opts, rand
from .tflite_writer import ModelWriter, options

CLEAN = (DataError, NotSupportedError)
TIME_BOUND = 5.0   # seconds for one load; the real models load in well under 0.1 s


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


def load(data: bytes) -> float:
    """_translate; the time it took. Clean exceptions are expected and fine."""
    started = time.perf_counter()
    try:
        _translate(data)
    except CLEAN as exc:
        assert str(exc), "an error without a message"
    return time.perf_counter() - started


def assert_clean(data: bytes, what: str) -> None:
    try:
        elapsed = load(data)
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"{what}: {type(exc).__name__}: {exc}")
    assert elapsed < TIME_BOUND, f"{what}: took {elapsed:.1f} s"


@pytest.fixture(scope="module")
def small() -> bytes:
    data = small_model()
    load(data)          # itself valid
    return data


def test_the_small_model_is_valid(small):
    inputs, outputs, _, state = _translate(small)
    assert state is None
    assert [i.name for i in inputs] == ["x0"] and [o.name for o in outputs] == ["y"]


def test_truncated_at_every_offset(small):
    for end in range(len(small)):
        assert_clean(small[:end], f"truncated to {end} bytes")


def test_truncated_real_model(models_dir):
    data = (models_dir / "selfie_segmentation.tflite").read_bytes()
    for end in np.linspace(0, len(data) - 1, 60).astype(int):
        assert_clean(data[:end], f"selfie truncated to {end} bytes")


def test_single_byte_flips(small):
    rng = np.random.default_rng(1)
    for position in range(len(small)):
        corrupted = bytearray(small)
        corrupted[position] ^= int(rng.integers(1, 256))
        assert_clean(bytes(corrupted), f"byte {position} flipped")


def test_random_byte_flips_in_real_models(models_dir):
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
            assert_clean(bytes(corrupted), f"{name} trial {trial}")


def test_random_bytes():
    rng = np.random.default_rng(3)
    for size in (0, 1, 7, 8, 16, 100, 4096, 65536):
        for _ in range(5):
            data = bytearray(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
            assert_clean(bytes(data), f"{size} random bytes")
            if size >= 8:
                data[4:8] = b"TFL3"     # past the identifier check
                assert_clean(bytes(data), f"{size} random bytes with the TFL3 identifier")


@pytest.mark.parametrize("value", [0, 1, 4, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFC, 0xFFFFFFFF])
def test_hostile_u32_at_every_aligned_position(small, value):
    """Every aligned 32-bit word (offsets, vector lengths, scalars) replaced by a
    hostile value: offsets to itself (0), just past (4), far outside, negative
    when read as a soffset, and huge vector lengths."""
    for position in range(0, len(small) - 3, 4):
        corrupted = bytearray(small)
        struct.pack_into("<I", corrupted, position, value)
        assert_clean(bytes(corrupted), f"u32 {value:#x} at byte {position}")


def test_cyclic_subgraph_offset_points_back_at_the_root(small):
    """The subgraphs vector's element offset redirected to the model table itself."""
    from webnn_py.loader.tflite.flatbuffer import Buffer
    root = Buffer(small).root(b"TFL3")
    start, count = root._vector(2, 4, "subgraphs")
    assert count == 1
    corrupted = bytearray(small)
    struct.pack_into("<I", corrupted, start, (root.pos - start) & 0xFFFFFFFF)
    assert_clean(bytes(corrupted), "subgraph offset back to the root")


def test_huge_vector_length_is_rejected_before_allocating(small):
    from webnn_py.loader.tflite.flatbuffer import Buffer
    root = Buffer(small).root(b"TFL3")
    target = root._target(4, "buffers")
    corrupted = bytearray(small)
    struct.pack_into("<I", corrupted, target, 0x3FFFFFFF)
    with pytest.raises(DataError, match="claims 1073741823 elements"):
        parse(bytes(corrupted))


def test_wrong_identifier_and_version(small):
    with pytest.raises(DataError, match="file identifier"):
        parse(small[:4] + b"XXXX" + small[8:])
    with pytest.raises(DataError, match="holds only 3 bytes"):
        parse(b"TFL")


def test_quantized_model_byte_flips():
    data = _quantized_conv(np.int8)
    rng = np.random.default_rng(4)
    for position in rng.integers(0, len(data), size=300):
        corrupted = bytearray(data)
        corrupted[position] ^= 0xFF
        assert_clean(bytes(corrupted), f"quantized model byte {position} inverted")
