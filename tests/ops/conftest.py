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
    execute = ExecutionPlan.execute

    def recording_execute(self, inputs):
        for step in self.steps:
            first = next((v for v in step.node.inputs if v is not None), None)
            data_type = first.descriptor.data_type if first is not None else step.output_descriptors[0].data_type
            seen.add((step.node.kind, data_type))
        return execute(self, inputs)

    monkeypatch.setattr(ExecutionPlan, "execute", recording_execute)
    yield
    if getattr(request.node, "operator_test_passed", False):
        COVERAGE.update(seen)
