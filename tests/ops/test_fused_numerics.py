"""The fused and C-kernel paths within WPT's budgets (tests/ops/fused_numerics_checks.py):
on the host here (the native build of kernels.c, GEMMs in BLAS), and inside Pyodide
under Node.js, where the same checks run on kernels.wasm. Also checks that the float64
references of the check module agree with torch, so the budgets are measured against
something independent and right."""
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.ops import fused_numerics_checks as checks
from tests.ops import wpt_budgets as budget
from tests.ops.fused_numerics_checks import (  # noqa: F401 - collected and run by pytest on the host
    test_batch_normalization_with_scale_bias_then_activations, test_conv2d_paths_with_activation_epilogues,
    test_conv2d_residual_add_relu_epilogue, test_gelu_kernel_over_wpt_ranges_and_its_short_path,
    test_gemm_alpha_beta_c_and_activation_epilogues, test_layer_normalization_kernel,
    test_layer_normalization_spelled_out_is_recognised, test_matmul_add_gelu_epilogue, test_matmul_bias_relu_epilogue,
    test_softmax_kernel_and_numpy_axes, test_softmax_spelled_out_is_recognised_and_within_softmax_budget,
    test_subgraph_batch_normalization_axis_0_then_gelu, test_subgraph_conv2d_default_then_relu,
)
from tests.portable.expect import ulp_distance

from .conftest import torch

REPO = Path(__file__).resolve().parents[2]
CHECKS = [name for name in vars(checks) if name.startswith("test_")]


def test_every_check_is_collected_here():
    assert sorted(CHECKS) == sorted(n for n in globals() if n.startswith("test_") and n in vars(checks))


def test_references_agree_with_torch():
    F = torch.nn.functional
    t = lambda a: torch.from_numpy(np.asarray(a, np.float64))   # noqa: E731
    rng = np.random.default_rng(3)
    x = rng.uniform(-10, 10, (2, 3, 6, 5))
    # torch's float64 gelu is 0.5 x (1 + erf): 1 + erf cancels in the negative tail, so
    # compare there with torch's erfc instead.
    tail = x < -3
    np.testing.assert_allclose(checks.gelu64(x)[~tail], F.gelu(t(x)).numpy()[~tail], rtol=1e-14)
    np.testing.assert_allclose(checks.gelu64(x), (0.5 * t(x) * torch.special.erfc(-t(x) / 2 ** 0.5)).numpy(),
                               rtol=1e-14, atol=0)
    np.testing.assert_allclose(checks.softmax64(x, 2), torch.softmax(t(x), 2).numpy(), rtol=1e-14)
    scale, bias = rng.uniform(-2, 2, (6, 5)), rng.uniform(-1, 1, (6, 5))
    np.testing.assert_allclose(checks.layer_norm64(x, [2, 3], scale, bias),
                               F.layer_norm(t(x), (6, 5), t(scale), t(bias), 1e-5).numpy(), rtol=1e-12, atol=1e-12)
    mean, var = rng.uniform(-1, 1, 3), rng.uniform(0.5, 2, 3)
    np.testing.assert_allclose(checks.batch_norm64(x, mean, var, 1, scale=mean, bias=var, epsilon=1e-3),
                               F.batch_norm(t(x), t(mean), t(var), t(mean), t(var), eps=1e-3).numpy(), rtol=1e-12)
    w = rng.uniform(-1, 1, (4, 3, 3, 2))
    bias4 = rng.uniform(-1, 1, 4)
    for groups, weight in ((1, w), (3, rng.uniform(-1, 1, (6, 1, 3, 2)))):
        got = checks.conv2d64(x, weight, bias4 if groups == 1 else None, (1, 0, 2, 1), (2, 1), groups)
        want = F.conv2d(F.pad(t(x), (2, 1, 1, 0)), t(weight), t(bias4) if groups == 1 else None, stride=(2, 1),
                        groups=groups).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_budgets_follow_wpt_rules():
    # Hand-computed from the rules: conv 3x3 over 4 channels in 2 groups, gemm width 10 with
    # alpha, c and beta, softmax over 33, and a subgraph sum.
    assert budget.conv2d(3, 3, 4, 2) == 36
    assert budget.gemm(10) == 20 and budget.gemm(10, 2.0, True, 0.5) == 23 and budget.gemm(10, c=True, beta=0.0) == 20
    assert budget.softmax(33) == 102 and budget.matmul(7) == 14
    assert budget.fixed("batchNormalization") + budget.fixed("gelu") == 24
    assert budget.fixed("add") == 0 and budget.fixed("sigmoid", "float16") == 10


def test_ulp_distance_is_wpt_sign_magnitude_distance():
    one = np.float32(1.0)
    assert ulp_distance(np.nextafter(one, np.float32(2)), one) == 1
    # Across zero: -tiny to +tiny is 2 (sign-magnitude integers -1 and +1), not 2**31.
    tiny = np.float32(1.4e-45)
    assert ulp_distance(np.array([tiny]), np.array([-tiny]))[0] == 2
    assert ulp_distance(np.array([0.0], np.float32), np.array([-0.0], np.float32))[0] == 0


def test_the_wpt_gelu_expectation_is_34_ulp_from_the_exact_value():
    """Why WPT's subgraph case fails everywhere (see wpt_runner/expectations): its expected
    value, not our result, is off. The exact float64 value rounds to -0.035951305f."""
    exact = checks.gelu64(checks.batch_norm64(np.array([[[3.0]]]), [6.0], [2.0], 0))[0, 0, 0]
    wpt = np.float32(-0.03595117852091789)
    assert ulp_distance(np.array([wpt]), np.array([exact], np.float32))[0] == 34
    assert 34 > budget.fixed("batchNormalization") + budget.fixed("gelu")


def test_checks_inside_pyodide_on_kernels_wasm(pyodide_runtime):
    proc = subprocess.run(
        ["node", str(REPO / "tests" / "pyodide" / "run_portable.mjs"), str(pyodide_runtime), str(REPO),
         "tests.ops.fused_numerics_checks", "tests.ops.wasm_numerics_probe"],
        capture_output=True, text=True, timeout=600)
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(results) == len(CHECKS) + 1, f"{proc.stdout}\n{proc.stderr}"
    assert all(r["platform"] == "emscripten" for r in results)
    failures = [f"{r['test']}\n{r['detail']}" for r in results if r["outcome"] != "passed"]
    assert not failures, "\n".join(failures)
