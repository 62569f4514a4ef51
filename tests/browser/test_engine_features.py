"""What the polyfill relies on, asked of every engine directly (no polyfill, no
Python): our WebAssembly SIMD kernels validate, memory may grow to wasm32's 4 GiB,
and the typed arrays int64/uint64 data travels in exist. Where an engine lacks an
optional feature (Float16Array, scheduler.postTask, relaxed SIMD) the polyfill has a fallback,
which the other browser tests exercise; here the test names what is missing."""
from pathlib import Path

import pytest

from . import PAGES, lacks

KERNELS = Path(__file__).resolve().parents[2] / "webnn_py" / "kernels" / "wasm"

FEATURES = """(async () => {
  const kernels = await (await fetch("/kernels/kernels.wasm")).arrayBuffer();
  const relaxed = await (await fetch("/kernels/kernels_relaxed.wasm")).arrayBuffer();
  let maxMemory;
  try { new WebAssembly.Memory({ initial: 1, maximum: 65536 }); maxMemory = 65536; } catch (e) { maxMemory = String(e); }
  return {
    kernelsValidate: WebAssembly.validate(kernels),
    kernelsCompile: await WebAssembly.compile(kernels).then(() => true, (e) => String(e)),
    relaxedValidate: WebAssembly.validate(relaxed),
    relaxedCompile: await WebAssembly.compile(relaxed).then(() => true, (e) => String(e)),
    maxMemoryPages: maxMemory,
    bigInt64Array: typeof BigInt64Array, bigUint64Array: typeof BigUint64Array,
    float16Array: typeof Float16Array,
    postTask: typeof scheduler === "object" && typeof scheduler.postTask === "function",
  };
})()"""


@pytest.fixture(scope="module")
def features(browser):
    from webnn_py.serve import PolyfillServer

    with PolyfillServer(root=PAGES, mounts={"/kernels/": KERNELS}) as server, browser.new_page() as page:
        page.goto(f"{server.url}/layer.html")
        return page.evaluate(FEATURES)


def test_simd_kernels_compile(features):
    assert features["kernelsValidate"] is True
    assert features["kernelsCompile"] is True


def test_relaxed_simd_kernels(features, browser):
    """kernels_relaxed.wasm (the GEMM's FMA) is what webnn_py.kernels loads where the engine
    validates it; an engine that validates it must also compile it, one that does not gets
    kernels.wasm."""
    assert features["relaxedCompile"] is True or features["relaxedValidate"] is False, features["relaxedCompile"]
    if not features["relaxedValidate"]:
        pytest.skip(lacks(browser, "relaxed SIMD (the kernels run kernels.wasm: a multiply and an add, no FMA)"))


def test_memory_can_grow_to_4_gib(features):
    assert features["maxMemoryPages"] == 65536


def test_bigint_typed_arrays(features):
    assert (features["bigInt64Array"], features["bigUint64Array"]) == ("function", "function")


def test_float16array(features, browser):
    if features["float16Array"] != "function":
        pytest.skip(lacks(browser, "Float16Array (the polyfill takes Uint16Array bits instead)"))


def test_scheduler_post_task(features, browser):
    if not features["postTask"]:
        pytest.skip(lacks(browser, "scheduler.postTask (sliced dispatches continue with Pyodide's postMessage tasks)"))
