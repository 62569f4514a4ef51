"""kernels.wasm inside the real Pyodide 0.27.7 runtime under Node.js
(tests/kernels/pyodide_wasm_checks.py, run by tests/pyodide/run_portable.mjs), plus
the build's own guarantees on the binary."""
import json
import subprocess
from pathlib import Path

import pytest

from tests.kernels.conftest import build_kernels

REPO = Path(__file__).resolve().parents[2]
WASM = REPO / "webnn_py" / "kernels" / "wasm" / "kernels.wasm"


def test_wasm_binary_imports_only_memory_and_has_no_data():
    build_kernels()
    script = ("const m = new WebAssembly.Module(require('fs').readFileSync(process.argv[1]));"
              "console.log(JSON.stringify({imports: WebAssembly.Module.imports(m),"
              " exports: WebAssembly.Module.exports(m)}))")
    info = json.loads(subprocess.run(["node", "-e", script, str(WASM)], capture_output=True, text=True,
                                     check=True).stdout)
    assert info["imports"] == [{"module": "env", "name": "memory", "kind": "memory"}]
    assert {e["name"] for e in info["exports"]} == {"sgemm", "sgemm_batch", "gemm_pack_b", "gemm_epilogue", "depthwise_nhwc",
                                                "conv2d_direct", "clamp_f32", "gelu_f32",
                                                "softmax_rows_f32", "im2col_nhwc", "layernorm_rows_f32",
                                                "lstm_sequence_f32", "gru_sequence_f32", "recurrent_activation_f32",
                                                "maxpool_nhwc", "global_avgpool_nhwc", "scale_channels_f32",
                                                "copy_2d_f32"}
    import tools.build_kernels as bk
    assert not bk.wasm_has_data_segment(WASM)


def test_wasm_kernels_in_pyodide(pyodide_runtime):
    build_kernels()
    proc = subprocess.run(
        ["node", str(REPO / "tests" / "pyodide" / "run_portable.mjs"), str(pyodide_runtime), str(REPO),
         "tests.kernels.pyodide_wasm_checks"],
        capture_output=True, text=True, timeout=300,
    )
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(results) == 18, f"{proc.stdout}\n{proc.stderr}"
    assert all(r["platform"] == "emscripten" for r in results)
    failures = [f"{r['test']}\n{r['detail']}" for r in results if r["outcome"] != "passed"]
    assert not failures, "\n".join(failures)
