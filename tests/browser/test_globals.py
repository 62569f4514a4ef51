"""[Exposed=(Window, Worker)]: the same graph in a window and in every kind of worker
(dedicated, shared, module, service) gives identical, hand-computed results, in every engine."""

import numpy as np
import pytest

from . import lacks, page_facts


@pytest.fixture(scope="module")
def results(browser):
    return page_facts("globals.html", "window.globalsResult", browser)


def expected():
    a = np.array([1, 2, 3, 4, 5, 6], np.float32).reshape(2, 3)
    b = np.array([0.25, -1, 7], np.float32)
    c = np.float32(0.5)
    # ((a - b) * c) / (b + c), each step rounded to float32
    return (((a - b).astype(np.float32) * c).astype(np.float32) / (b + c).astype(np.float32)).astype(np.float32)


@pytest.mark.parametrize("where,global_name", [("window", "Window"), ("dedicatedWorker", "DedicatedWorkerGlobalScope"),
                                               ("sharedWorker", "SharedWorkerGlobalScope"),
                                               ("moduleWorker", "DedicatedWorkerGlobalScope"),
                                               ("serviceWorker", "ServiceWorkerGlobalScope")])
def test_same_results_in_every_global(results, browser, where, global_name):
    outcome = results[where]
    if "missing" in outcome:
        pytest.skip(lacks(browser, outcome["missing"]))
    assert outcome["ok"], outcome.get("error")
    assert outcome["result"]["global"] == global_name
    assert outcome["result"]["interfaces"] == ["ML", "MLContext", "MLGraphBuilder", "MLOperand", "MLGraph", "MLTensor"]
    assert outcome["result"]["values"] == expected().ravel().tolist()
