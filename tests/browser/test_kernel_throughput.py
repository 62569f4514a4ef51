"""kernels.wasm's GEMM (and kernels_relaxed.wasm's, where the engine has relaxed SIMD) runs at
what the engine can do, in every engine.

In Firefox 153 sgemm ran at a third of Chromium's speed (13-32 against ~60 GFLOP/s) while
ONNX Runtime Web's wasm ran alike: SpiderMonkey's optimizing compiler kept the k loop's
accumulators out of registers while the epilogue's activation code sat between them and
their stores (kernels.c `sums8`, README "Browsers"). Here the engine itself is the yardstick:
a reference module, compiled by this test with the build's own flags, holds the same 4 x 8
k loop in a function with nothing else in it, and the packaged sgemm (with a bias and a
clamp in its epilogue) must reach at least REQUIRED of its speed, both timed alternately in
one page (the best sample of each, so a busy machine slows both alike), and give the same
bits where their operations are the same (no epilogue: the same sums in the same k order).
The relaxed build against the same loop built with relaxed SIMD; and its multiply-adds must be
fused where the CPU has an FMA (Chromium's V8 and Firefox's SpiderMonkey lower f32x4.relaxed_madd
to it): its sums closer to float64's than the plain build's, not equal to them.
"""
import subprocess
from pathlib import Path

import pytest

from tools.build_kernels import COMMON, RELAXED_FLAGS, WASM_FLAGS, BuildError, find_clang

from . import PAGES, lacks

KERNELS = Path(__file__).resolve().parents[2] / "webnn_py" / "kernels" / "wasm"
REQUIRED = 0.6     # before the fix Firefox measured 0.35-0.4 of the reference, Chromium ~1.0

# The yardstick: sgemm's 4 x 8 block over B packed by gemm_pack_b (strips of 8 columns,
# each K x 8 contiguous), A row-major, C row-major; m a multiple of 4, n of 8.
REFERENCE_C = r"""
typedef float v4 __attribute__((vector_size(16)));
typedef float v4u __attribute__((vector_size(16), aligned(4)));
static inline v4 load4(const float *p) { return *(const v4u *)p; }
static inline void store4(float *p, v4 v) { *(v4u *)p = v; }
static inline v4 splat(float a) { return (v4){a, a, a, a}; }
#ifdef __wasm_relaxed_simd__
#define MADD(a, b, c) __builtin_wasm_relaxed_madd_f32x4(a, b, c)
#else
#define MADD(a, b, c) ((c) + (a) * (b))
#endif
__attribute__((visibility("default")))
void reference_gemm(int m, int n, int k, const float *a, const float *pack, float *c) {
    for (int j = 0; j + 8 <= n; j += 8)
        for (int i = 0; i + 4 <= m; i += 4) {
            const float *a0 = a + (long)i * k, *a1 = a0 + k, *a2 = a1 + k, *a3 = a2 + k, *bk = pack + (long)j * k;
            v4 c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};
            for (int p = 0; p < k; p++, bk += 8) {
                v4 b0 = load4(bk), b1 = load4(bk + 4);
                v4 x0 = splat(a0[p]), x1 = splat(a1[p]), x2 = splat(a2[p]), x3 = splat(a3[p]);
                c00 = MADD(x0, b0, c00); c01 = MADD(x0, b1, c01); c10 = MADD(x1, b0, c10); c11 = MADD(x1, b1, c11);
                c20 = MADD(x2, b0, c20); c21 = MADD(x2, b1, c21); c30 = MADD(x3, b0, c30); c31 = MADD(x3, b1, c31);
            }
            float *ci = c + (long)i * n + j;
            store4(ci, c00); store4(ci + 4, c01); ci += n;
            store4(ci, c10); store4(ci + 4, c11); ci += n;
            store4(ci, c20); store4(ci + 4, c21); ci += n;
            store4(ci, c30); store4(ci + 4, c31);
        }
}
"""

# Both modules on one memory shaped like Pyodide's (up to 4 GiB); MobileNet-like shapes.
# Each sample repeats a call for >= 20 ms (Firefox's clock has 1 ms steps outside an
# isolated page); the samples of the two alternate for `ms` milliseconds.
MEASURE = """(async ({ms, build, yardstick}) => {
  const memory = new WebAssembly.Memory({ initial: 1024, maximum: 65536 });
  const load = async (url) => (await WebAssembly.instantiate(await (await fetch(url)).arrayBuffer(),
                                                             { env: { memory } })).instance.exports;
  const kernels = await load(`/kernels/${build}`), reference = await load(`/reference/${yardstick}`);
  const results = {};
  for (const [m, k, n] of [[784, 576, 128], [196, 1152, 256]]) {
    const A = 1 << 20, B = A + m * k * 4, P = B + k * n * 4, C = P + k * n * 4, R = C + m * n * 4, BN = R + m * n * 4;
    const f32 = new Float32Array(memory.buffer);
    for (let i = A >> 2; i < (BN >> 2) + n; i++) f32[i] = ((i * 7919) % 13 - 6) / 8;
    kernels.gemm_pack_b(k, n, B, n, P);
    // sgemm(m, n, k, a, a_rs, a_cs, b, ldb, c, ldc, bias_m, bias_n, res, act, lo, hi, pack, packed)
    kernels.sgemm(m, n, k, A, k, 1, B, n, C, n, 0, 0, 0, 0, 0, 0, P, 1);
    reference.reference_gemm(m, n, k, A, P, R);
    const same = new Uint32Array(memory.buffer, C, m * n).every((v, i) => v === new Uint32Array(memory.buffer, R, m * n)[i]);
    const runs = {
      sgemm: () => kernels.sgemm(m, n, k, A, k, 1, B, n, C, n, 0, BN, 0, 1, 0, 6, P, 1),
      reference: () => reference.reference_gemm(m, n, k, A, P, R),
    };
    const best = { sgemm: 0, reference: 0 };
    const until = performance.now() + ms;
    while (performance.now() < until) {
      for (const [name, run] of Object.entries(runs)) {
        let calls = 0;
        const t0 = performance.now();
        do { run(); calls++; } while (performance.now() - t0 < 20);
        best[name] = Math.max(best[name], 2 * m * n * k * calls / (performance.now() - t0) / 1e6);
      }
    }
    results[`${m}x${k}x${n}`] = { same, ...best };
  }
  return results;
})"""


# Both builds' products of one A and B (values that float32 sums round), and float64's.
FUSED = """(async () => {
  const memory = new WebAssembly.Memory({ initial: 64 });
  const load = async (url) => (await WebAssembly.instantiate(await (await fetch(url)).arrayBuffer(),
                                                             { env: { memory } })).instance.exports;
  const plain = await load("/kernels/kernels.wasm"), relaxed = await load("/kernels/kernels_relaxed.wasm");
  const [m, n, k] = [64, 64, 256], A = 1 << 16, B = A + m * k * 4, C1 = B + k * n * 4, C2 = C1 + m * n * 4;
  const f32 = new Float32Array(memory.buffer);
  for (let i = 0; i < m * k + k * n; i++) f32[(A >> 2) + i] = Math.fround(Math.sin(i * 12.9898) * 1.37);
  for (const [e, C] of [[plain, C1], [relaxed, C2]]) e.sgemm(m, n, k, A, k, 1, B, n, C, n, 0, 0, 0, 0, 0, 0, 0, 0);
  let differ = 0, errPlain = 0, errRelaxed = 0;
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let exact = 0;
      for (let p = 0; p < k; p++) exact += f32[(A >> 2) + i * k + p] * f32[(B >> 2) + p * n + j];
      const x = f32[(C1 >> 2) + i * n + j], y = f32[(C2 >> 2) + i * n + j];
      differ += x !== y; errPlain += Math.abs(x - exact); errRelaxed += Math.abs(y - exact);
    }
  return { differ, errPlain, errRelaxed };
})()"""


def cpu_has_fma() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " fma " in f" {line.split(':', 1)[1].strip()} " for line in f)
    except OSError:
        return False


@pytest.fixture(scope="module")
def reference_wasm(tmp_path_factory) -> Path:
    try:
        clang = find_clang()
    except BuildError as e:
        pytest.fail(f"{e}: kernels.wasm is built with it")
    folder = tmp_path_factory.mktemp("reference")
    (folder / "reference.c").write_text(REFERENCE_C)
    for name, flags in (("reference.wasm", []), ("reference_relaxed.wasm", RELAXED_FLAGS)):
        subprocess.run([clang, *COMMON, *WASM_FLAGS, *flags, "-o", str(folder / name), str(folder / "reference.c")],
                       check=True)
    return folder


def relaxed_validates(page) -> bool:
    return page.evaluate("(async () => WebAssembly.validate(await (await fetch('/kernels/kernels_relaxed.wasm'))"
                         ".arrayBuffer()))()")


@pytest.mark.parametrize("build, yardstick", [("kernels.wasm", "reference.wasm"),
                                              ("kernels_relaxed.wasm", "reference_relaxed.wasm")])
def test_sgemm_keeps_up_with_the_engines_own_best(browser, reference_wasm, build, yardstick):
    from webnn_py.serve import PolyfillServer

    mounts = {"/kernels/": KERNELS, "/reference/": reference_wasm}
    with PolyfillServer(root=PAGES, mounts=mounts) as server, browser.new_page() as page:
        page.goto(f"{server.url}/layer.html")
        if build == "kernels_relaxed.wasm" and not relaxed_validates(page):
            pytest.skip(lacks(browser, "relaxed SIMD (webnn_py.kernels loads kernels.wasm)"))
        results = page.evaluate(f"{MEASURE}({{ms: 2500, build: {build!r}, yardstick: {yardstick!r}}})")
    for shape, r in results.items():
        assert r["same"], f"{build}, {shape}: sgemm and the reference loop disagree"
        assert r["sgemm"] >= REQUIRED * r["reference"], (
            f"{browser.engine} {browser.version}, {build}, {shape}: sgemm {r['sgemm']:.1f} GFLOP/s against the "
            f"same loop alone {r['reference']:.1f} GFLOP/s")


def test_relaxed_gemm_is_fused_where_the_cpu_has_fma(browser):
    from webnn_py.serve import PolyfillServer

    with PolyfillServer(root=PAGES, mounts={"/kernels/": KERNELS}) as server, browser.new_page() as page:
        page.goto(f"{server.url}/layer.html")
        if not relaxed_validates(page):
            pytest.skip(lacks(browser, "relaxed SIMD"))
        r = page.evaluate(FUSED)
    # Fused or not, the relaxed build is never further from the exact sums than the plain one.
    assert r["errRelaxed"] <= r["errPlain"], r
    if cpu_has_fma():       # V8 and SpiderMonkey lower relaxed_madd to the FMA (WebKitGTK 2.50 has no relaxed SIMD)
        assert r["differ"] > 0 and r["errRelaxed"] < r["errPlain"], f"no fused multiply-add seen: {r}"
