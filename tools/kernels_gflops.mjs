// GFLOP/s of float32 products inside Pyodide under Node.js: webnn_py's wasm GEMM
// kernel, scipy's OpenBLAS sgemm and numpy's matmul, on MobileNet and transformer shapes.
//
//   node tools/kernels_gflops.mjs        (after ./dev setup; uses build/pyodide and this checkout)
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const runtime = path.join(root, "build", "pyodide");
const { loadPyodide } = await import(pathToFileURL(path.join(runtime, "pyodide.mjs")).href);
const py = await loadPyodide({ indexURL: runtime + "/" });
await py.loadPackage(["numpy", "scipy"], { messageCallback: () => {} });
py.FS.mkdirTree("/repo");
py.mountNodeFS("/repo", root);
py.runPython(`
import sys, time
sys.path.insert(0, "/repo")
import numpy as np
from scipy.linalg.blas import sgemm
from webnn_py import kernels

k = kernels.available()
assert k is not None, "kernels.wasm did not load"

def seconds(f, n=9):
    """Median of n timed calls (the machine may be shared: the median ignores bursts)."""
    f()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return sorted(times)[n // 2]

# V8 first runs wasm in its baseline compiler and tiers up while it runs: warm up first.
w = np.random.rand(256, 256).astype(np.float32)
for _ in range(50):
    k.gemm(w, w)
print(f"{'m x n x k':>18}  {'wasm':>6}  {'scipy':>6}  {'numpy':>6}  (GFLOP/s)")
for m, n, kk in [(12544, 32, 16), (3136, 144, 24), (784, 192, 32), (196, 576, 96), (128, 256, 256),
                 (128, 1024, 256), (128, 256, 1024), (512, 512, 512)]:
    a = np.random.rand(m, kk).astype(np.float32)
    b = np.random.rand(kk, n).astype(np.float32)
    flops = 2 * m * n * kk
    rates = [flops / seconds(f) / 1e9 for f in (lambda: k.gemm(a, b), lambda: sgemm(1.0, b.T, a.T).T, lambda: a @ b)]
    print(f"{m:>6} x {n:>4} x {kk:>4}  " + "  ".join(f"{r:6.1f}" for r in rates))
`);
