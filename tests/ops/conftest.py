"""Operator tests: host-only (they use torch as the independent reference)."""
import asyncio

import numpy as np
import pytest

from tests.portable.graph import compute

torch = pytest.importorskip("torch")

FLOAT_TYPES = [np.float32, np.float16]
INT_TYPES = [np.int32, np.uint32, np.int64, np.uint64, np.int8, np.uint8]
ALL_TYPES = FLOAT_TYPES + INT_TYPES


def run(build, inputs, constants=None):
    """Synchronous wrapper of tests.portable.graph.compute for plain pytest tests."""
    return asyncio.run(compute(build, inputs, constants))


def random_array(shape, dtype, rng, low=-10, high=10):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.uniform(low, high, size=shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(low, info.min), min(high, info.max) + 1, size=shape, dtype=dtype)


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)


def torch_ref(fn, *arrays, dtype=None):
    """Apply a torch function to numpy arrays; float16 inputs are handed to torch
    as float16 (its CPU kernels compute in float32 and round once, like ours)."""
    tensors = [torch.from_numpy(np.ascontiguousarray(a)) for a in arrays]
    out = fn(*tensors)
    return out.numpy() if dtype is None else out.numpy().astype(dtype)


TYPE_IDS = lambda d: np.dtype(d).name  # noqa: E731  (pytest ids for data-type parameters)


def builder_and_operands(**descriptors):
    """A fresh builder and graph inputs named by keyword, each given as (dataType, shape),
    for tests that only build (validation and shape inference)."""
    import webnn_py

    async def make():
        context = await webnn_py.ml.createContext()
        builder = webnn_py.MLGraphBuilder(context)
        return builder, {name: builder.input(name, {"dataType": dt, "shape": list(shape)})
                         for name, (dt, shape) in descriptors.items()}
    return asyncio.run(make())


# -- bit-exact references for data-movement operators ---------------------------------------------
# torch runs on the bit patterns viewed as a torch integer type of the same width
# (torch lacks uint32/uint64 kernels), so every data type is checked bit for bit.

_TORCH_VIEW = {np.dtype(np.float32): np.int32, np.dtype(np.float16): np.int16, np.dtype(np.int32): np.int32,
               np.dtype(np.uint32): np.int32, np.dtype(np.int64): np.int64, np.dtype(np.uint64): np.int64,
               np.dtype(np.int8): np.int8, np.dtype(np.uint8): np.uint8}
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def random_bits(shape, dtype, rng):
    """An array of `dtype` whose elements are uniformly random bit patterns."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    return rng.integers(0, 256, size=count * dtype.itemsize, dtype=np.uint8).view(dtype).reshape(shape)


def to_torch(array):
    array = np.array(array, order="C")  # (np.ascontiguousarray would make rank 0 rank 1)
    return torch.from_numpy(array.view(_TORCH_VIEW[array.dtype]).copy())


def from_torch(tensor, dtype):
    return tensor.contiguous().numpy().view(np.dtype(dtype))


def torch_bits(fn, *arrays):
    """Apply a data-movement torch function to the arrays' bit patterns."""
    out = fn(*[to_torch(a) for a in arrays])
    if isinstance(out, (list, tuple)):
        return [from_torch(o, arrays[0].dtype) for o in out]
    return from_torch(out, arrays[0].dtype)


def assert_bits(actual, expected, what=""):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    as_uint = _UINT[actual.dtype.itemsize]
    diff = np.array(actual, order="C").view(as_uint) != np.array(expected, order="C").view(as_uint)
    assert not diff.any(), f"{what}: bits differ at {np.argwhere(diff)[:5].tolist()}"


# -- which operator ran with which data type, in passing tests -----------------------------------
# tests/test_op_table.py turns this into the README's operator table (tools/gen_op_table.py).

COVERAGE: set[tuple[str, str]] = set()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when == "call":
        item.operator_test_passed = outcome.get_result().passed


@pytest.fixture(autouse=True)
def record_operator_coverage(request, monkeypatch):
    from webnn_py.runtime.plan import ExecutionPlan

    seen: set[tuple[str, str]] = set()
    execute, execute_iter = ExecutionPlan.execute, ExecutionPlan.execute_iter

    def record(plan):
        # Fused steps compute several nodes; folded nodes ran when the graph was built.
        nodes = [n for step in plan.steps for n in (step.nodes or (step.node,))] + list(plan.folded_nodes)
        for node in nodes:
            first = next((v for v in node.inputs if v is not None), None)
            data_type = first.descriptor.data_type if first is not None else node.outputs[0].descriptor.data_type
            seen.add((node.kind, data_type))

    def recording_execute(self, inputs, *args, **kwargs):
        record(self)
        return execute(self, inputs, *args, **kwargs)

    def recording_execute_iter(self, inputs, *args, **kwargs):
        # dispatch() walks execute_iter (cooperative scheduling).
        record(self)
        return execute_iter(self, inputs, *args, **kwargs)

    monkeypatch.setattr(ExecutionPlan, "execute", recording_execute)
    monkeypatch.setattr(ExecutionPlan, "execute_iter", recording_execute_iter)
    yield
    if getattr(request.node, "operator_test_passed", False):
        COVERAGE.update(seen)
