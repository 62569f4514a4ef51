"""What keeps step replay (webnn_py/runtime/replay.py) from replaying memory it does not hold:
the table of the exports' address arguments against kernels.c itself, the refusal of a
recording that met a numpy path, and the owners of recorded addresses (a temporary that died
with the call has none). tests/portable/test_replay.py runs the replay itself in Pyodide."""
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from webnn_py import kernels
from webnn_py.runtime import replay

KERNELS_C = Path(kernels.__file__).parent / "wasm" / "kernels.c"


def _exports() -> dict[str, list[str]]:
    source = KERNELS_C.read_text()
    return {m.group(1): [p.strip() for p in m.group(2).replace("\n", " ").split(",")]
            for m in re.finditer(r"EXPORT\s+\w+\s+(\w+)\s*\(([^)]*)\)", source)}


def _pool_calls() -> dict[str, list[str]]:
    source = (KERNELS_C.parent.parent / "pool.js").read_text()
    return {f"pool.{m.group(1)}": [p.strip() for p in m.group(2).replace("\n", " ").split(",")]
            for m in re.finditer(r"^    (gemm|conv|depthwise)\(([^)]*)\) \{", source, re.M)}


def test_the_address_table_is_kernels_c_s_pointer_parameters():
    exports = _exports()
    assert exports, "no EXPORT found in kernels.c"
    assert set(kernels.POINTER_ARGUMENTS) == set(exports) | {"pool.gemm", "pool.conv", "pool.depthwise"}
    for name, parameters in exports.items():
        pointers = tuple(i for i, p in enumerate(parameters) if "*" in p)
        assert kernels.POINTER_ARGUMENTS[name] == pointers, name


def test_the_address_table_is_the_pool_calls_address_parameters():
    """pool.js names its address parameters ...Ptr, and biasM, biasN, res (kept is an offset
    in its own arena)."""
    calls = _pool_calls()
    assert set(calls) == {"pool.gemm", "pool.conv", "pool.depthwise"}
    for name, parameters in calls.items():
        pointers = tuple(i for i, p in enumerate(parameters) if p.endswith("Ptr") or p in ("biasM", "biasN", "res"))
        assert kernels.POINTER_ARGUMENTS[name] == pointers, name


class _State(SimpleNamespace):
    """The JS recorder state as Recorder reads it (on, count, calls by index as attributes)."""


def _recorder_with(calls) -> kernels.Recorder:
    state = _State(on=False, count=0, calls=_State())
    recorder = kernels.Recorder(state)
    recorder.start()
    for index, (name, values) in enumerate(calls):
        args = SimpleNamespace(to_py=lambda values=values: list(values))
        setattr(state.calls, str(index), SimpleNamespace(name=name, f=name, args=args))
    state.count = len(calls)
    return recorder


def test_a_recording_that_met_a_numpy_path_is_refused():
    recorder = _recorder_with([("clamp_f32", (64, 128, 4, 0.0, 6.0))])
    kernels.untraceable()
    assert recorder.stop() is None
    recorder = _recorder_with([("clamp_f32", (64, 128, 4, 0.0, 6.0))])
    assert [call.values for call in recorder.stop()] == [(64, 128, 4, 0.0, 6.0)]
    kernels.untraceable()                    # not recording: nothing to refuse, nothing kept
    assert kernels._recording is None


def test_numpy_copy_path_of_copy_2d_is_untraceable():
    """copy_2d's numpy fallback (strides that are not whole elements) calls untraceable()."""
    recorder = _recorder_with([])
    raw = np.zeros(64, np.uint8)
    x = np.ndarray((2, 2), np.float32, buffer=raw, strides=(14, 6))
    kernels.Kernels.copy_2d(SimpleNamespace(), x, np.empty((2, 2), np.float32))
    assert recorder.stop() is None


def _call(name, values):
    return kernels.RecordedCall(name, None, tuple(values))


def test_every_address_must_lie_in_a_live_array():
    held = np.zeros(100, np.float32)
    out = np.zeros(10, np.float32)
    start = held.__array_interface__["data"][0]
    known = replay.Spans([(start, held)])
    inside = _call("clamp_f32", (start + 40, out.__array_interface__["data"][0], 10, 0.0, 1.0))
    assert replay._owners([inside], [out], known) == (held, out)
    # A view of the step's own array counts as that array (its base owns the memory).
    assert replay._owners([inside], [out[2:5]], known) == (held, out)
    # Past the end of the known array, or in an array that died: no owner, not bound.
    beyond = _call("clamp_f32", (start + held.nbytes, out.__array_interface__["data"][0], 10, 0.0, 1.0))
    assert replay._owners([beyond], [out], known) is None
    temporary = np.ones(1000, np.float32)
    dead = temporary.__array_interface__["data"][0]
    del temporary
    assert replay._owners([_call("clamp_f32", (dead, 0, 10, 0.0, 1.0))], [out], known) is None
    # A null address (an absent bias) needs no owner.
    assert replay._owners([_call("global_avgpool_nhwc", (1, 4, 4, 0, 0))], [], known) == ()
