"""The kernel pool (webnn_py/kernels/pool.py, pool.js; README "Kernels", Threads) in Chromium
(and the kernel-level checks in Firefox too):
in a cross-origin isolated page, large GEMMs with a constant B, im2col and depthwise
convolutions are split with dedicated workers and come out bit for bit as the one-thread kernels
compute them (and within float32
rounding of numpy's float64 product); a page that is not isolated, or that sets
`kernelThreads: 0`, never creates a worker. The page boots Pyodide directly
(pages/kernel_pool.html) and runs kernel_pool_checks.py; pages/kernel_pool_api.html runs a
conv2d through navigator.ml (the polyfill) against torch."""
import json
from pathlib import Path

import numpy as np
import pytest

import browsers
from webnn_py.serve import PolyfillServer

from .conftest import require

PAGES = Path(__file__).parent / "pages"
CHECKS = (Path(__file__).parent / "kernel_pool_checks.py").read_text()
ISOLATION = {"Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp"}


def run_checks(query: str = "", isolated: bool = True, engine: str = "chromium", entry: str = "checks"):
    with PolyfillServer(root=PAGES, headers=ISOLATION if isolated else None) as server, \
            browsers.launch(engine) as browser, browser.new_page() as page:
        page.goto(f"{server.url}/kernel_pool.html{query}")
        facts = page.evaluate("window.booted", timeout=300)
        assert "error" not in facts, facts
        result = page.evaluate(f"window.runPython({json.dumps(CHECKS + chr(10) + f'await {entry}()')})", timeout=600)
        return facts, result, page.evaluate("window.workersCreated")


# WebKitGTK 2.50 cannot post a shared WebAssembly.Memory to a worker (DataCloneError), so the
# pool does not start there (one thread, README "Kernels", Threads).
@pytest.fixture(scope="module", params=["chromium", "firefox"])
def isolated(request, pyodide_runtime):
    require(request.param)
    return run_checks(engine=request.param)


def test_isolated_page_starts_the_workers(isolated):
    facts, result, created = isolated
    assert facts["crossOriginIsolated"] is True
    assert result["threads"] is True
    expected = min(facts["cores"] - 1, 3)
    if expected < 1:
        pytest.skip("one core: the pool never starts")
    assert result["workers"] == expected
    assert created == [f"webnn-py kernels {w + 1}" for w in range(expected)]


def test_the_page_loads_the_relaxed_build_where_the_engine_validates_it(isolated):
    """kernels_relaxed.wasm (the FMA) where the engine validates it, kernels.wasm elsewhere; the
    workers run its shared build (the bit-for-bit checks below would fail on a mix)."""
    _, result, _ = isolated
    assert result["variant"] == ("kernels_relaxed.wasm" if result["relaxed_validates"] else "kernels.wasm"), result


def test_pool_is_bit_identical_to_one_thread_and_close_to_numpy(isolated):
    _, result, _ = isolated
    assert len(result["cases"]) == 8
    for case in result["cases"]:
        assert case["pooled"], case            # the pool ran it (the one-thread run is the reference)
        assert case["identical"], case
        assert case["max_error"] < 1e-3, case


def test_pooled_depthwise_is_bit_identical_to_one_thread_and_close_to_numpy(isolated):
    _, result, _ = isolated
    assert len(result["depthwise_cases"]) == 4
    for case in result["depthwise_cases"]:
        assert case["pooled"], case
        assert case["identical"], case
        assert case["max_error"] < 1e-4, case


def test_depthwise_whose_copies_outweigh_the_work_stays_on_one_thread(isolated):
    _, result, _ = isolated
    case = result["depthwise_stride_2"]
    assert not case["pooled"], case
    assert case["identical"] and case["max_error"] < 1e-4, case


def test_pooled_im2col_convolution_is_bit_identical_to_one_thread_and_close_to_numpy(isolated):
    _, result, _ = isolated
    assert len(result["conv_cases"]) == 5
    for case in result["conv_cases"]:
        assert case["took"] and case["pooled"], case
        assert case["identical"], case
        assert case["max_error"] < 1e-3, case


def test_workers_took_tiles_and_the_pool_ran_every_case(isolated):
    _, result, _ = isolated
    stats = result["stats"]
    assert stats["workerTiles"] > 0, stats
    # Every call above the thresholds went through the pool, which chose the way per shape.
    assert stats["calls"] + stats["oneThread"] >= 8 + 40, stats
    assert stats["tiles"] == stats["workerTiles"] + stats["late"] + stats["stolen"], stats
    # The workers' own accounting: they computed (in sgemm, for some multiply-adds) and
    # claimed a tile in some calls.
    assert stats["workerMs"] > 0 and stats["workerMacs"] > 0 and stats["workerCalls"] > 0, stats


def test_dead_constants_are_released(isolated):
    _, result, _ = isolated
    assert "released_wrong" not in result, result
    # 40 short-lived Bs: their arena blocks were released as they died (a few may still be
    # waiting for the next call, none piles up).
    assert result["kept"] < 10, result


def test_workers_linger_by_default_only_while_pooled_calls_win(isolated):
    """Without kernelThreadsLingerMs the workers poll 0.5 ms after a call while the last 16 pooled
    calls took under 0.95 of their shape's one-thread time (a second core is free), else they
    sleep at once (pool.js autoLinger); which of the two depends on this machine's load."""
    _, result, _ = isolated
    gain, linger = result["stats"]["poolGain"], result["stats"]["lingerMs"]
    assert gain is not None and gain > 0, result["stats"]
    assert linger == (0.5 if gain < 0.95 else 0.0), result["stats"]


def test_lingering_workers_need_no_wake_up_after_any_kind_of_call(pyodide_runtime):
    """kernelThreadsLingerMs: a worker polls that long after a call, whatever the call's kind
    (a depthwise or convolution call's arguments must not overwrite the setting)."""
    require("chromium")
    facts, wakes, _ = run_checks("?linger=10000", entry="linger_checks")
    if facts["cores"] < 2:
        pytest.skip("one core: the pool never starts")
    assert [kind for kind, _, _ in wakes] == ["gemm", "depthwise", "gemm", "depthwise", "gemm"]
    assert all(pooled == 1 for _, pooled, _ in wakes), wakes        # every call went through the pool
    assert all(woken == 0 for _, _, woken in wakes), wakes         # to a worker still polling


def test_no_worker_when_turned_off(pyodide_runtime):
    """kernelThreads: 0 in an isolated page (a plain page: test_a_convolution_through_the_polyfill)."""
    require("chromium")
    facts, result, created = run_checks("?threads=0")
    assert facts["crossOriginIsolated"] is True
    assert result["threads"] is False
    assert result["max_error"] < 1e-2
    assert created == []


def pattern(length: int, salt: int) -> np.ndarray:
    """kernel_pool_api.html's inputs: (i * 7919 + salt) mod 1000 / 1000 - 0.5 in float32."""
    return ((((np.arange(length) * 7919 + salt) % 1000) / 1000) - 0.5).astype(np.float32)


@pytest.mark.parametrize("isolated_page", [True, False])
def test_a_convolution_through_the_polyfill(pyodide_runtime, isolated_page):
    import torch

    require("chromium")
    with PolyfillServer(root=PAGES, headers=ISOLATION if isolated_page else None) as server, \
            browsers.launch("chromium") as browser, browser.new_page() as page:
        page.goto(f"{server.url}/kernel_pool_api.html")
        page.wait_for("window.outcome !== undefined", timeout=300)
        outcome = page.evaluate("window.outcome", timeout=600)
    assert "error" not in outcome, outcome
    assert outcome["crossOriginIsolated"] is isolated_page
    x = torch.from_numpy(pattern(32 * 56 * 56, 0).reshape(1, 32, 56, 56))
    w = torch.from_numpy(pattern(64 * 32 * 9, 1).reshape(64, 32, 3, 3))
    bias = torch.from_numpy(pattern(64, 2))
    expected = torch.relu(torch.nn.functional.conv2d(x.double(), w.double(), bias.double(), padding=1)).numpy()
    for result in outcome["results"]:
        np.testing.assert_allclose(np.array(result, np.float32).reshape(expected.shape), expected, rtol=1e-4,
                                   atol=1e-4)
    # Every run the same bits, whichever thread computed which rows.
    assert outcome["results"][0] == outcome["results"][1] == outcome["results"][2]
    expected_workers = min(outcome["cores"] - 1, 3) if isolated_page else 0
    assert outcome["workers"] == [f"webnn-py kernels {w + 1}" for w in range(expected_workers)]
