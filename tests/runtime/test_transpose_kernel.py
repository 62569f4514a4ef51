"""transpose between NCHW and NHWC in the C kernels (specialise.py _transpose, kernels.c
copy_2d): the values numpy's transpose gives, bit for bit, for contiguous inputs, for views
whose merged axes are evenly strided (a split along the first axes' neighbour) and for views
that are not (numpy's copy), with both kernel builds."""
import numpy as np
import pytest

from tests.runtime.test_compiler import assert_same_bits, build, kinds
from tests.runtime.test_transformer_fusion import gemm_path  # noqa: F401 - the fixture

RNG = np.random.default_rng(23)
PERMUTATIONS = [[0, 2, 3, 1], [0, 3, 1, 2]]


@pytest.mark.parametrize("permutation", PERMUTATIONS, ids=str)
@pytest.mark.parametrize("shape", [(1, 3, 7, 5), (2, 4, 1, 9), (1, 1, 1, 1), (3, 5, 4, 1)])
def test_transpose_of_a_graph_input(gemm_path, permutation, shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    plan, _ = build(lambda g, o: {"y": g.relu(g.transpose(o["x"], {"permutation": permutation}))}, {"x": x})
    assert kinds(plan) == ["transpose+relu"], kinds(plan)
    assert_same_bits(plan.execute({"x": x})["y"], np.maximum(x.transpose(permutation), np.float32(0)))


@pytest.mark.parametrize("permutation", PERMUTATIONS, ids=str)
@pytest.mark.parametrize("axis", [1, 2, 3])
def test_transpose_of_a_split_view(gemm_path, permutation, axis):
    """The transposed value is one part of a split: a view with gaps along `axis`."""
    x = RNG.standard_normal((2, 6, 4, 8)).astype(np.float32)

    def make(g, o):
        parts = g.split(o["x"], 2, {"axis": axis})
        return {"y": g.transpose(parts[1], {"permutation": permutation}), "z": g.relu(parts[0])}
    plan, _ = build(make, {"x": x})
    assert "transpose" in kinds(plan)
    second = np.split(x, 2, axis=axis)[1]
    assert_same_bits(plan.execute({"x": x})["y"], np.ascontiguousarray(second.transpose(permutation)))
