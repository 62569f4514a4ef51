"""webnn_py's two wasm kernel builds side by side: kernels.wasm (SIMD128: a multiply and an add)
against kernels_relaxed.wasm (relaxed SIMD's fused multiply-add in the GEMM and depthwise conv2d).

    .venv/bin/python bench/kernel_builds.py [--browser chromium|firefox|webkit] [--rounds N]

In one page of a headless engine (the browsers/ layer), both modules on one WebAssembly.Memory,
page script times sgemm (packed constant B, bias + relu6 epilogue) on the zoo CNNs' GEMM shapes and
depthwise_nhwc (bias + hardSwish) on mobilenet_v2/v3's depthwise shapes: each sample repeats a call
for >= 20 ms, the two builds alternate (order rotated every round) for --rounds rounds after as
many untimed ones, and the medians, their ratio and the load average are printed. An engine that
does not validate the relaxed build (WebKitGTK 2.50) prints the plain build alone.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

KERNELS = REPO / "webnn_py" / "kernels" / "wasm"
PAGES = REPO / "tests" / "browser" / "pages"
BUILDS = ("kernels.wasm", "kernels_relaxed.wasm")
# (m, n, k): output pixels x output channels x depth, as bench/threads.py's GEMMS.
GEMMS = [(12544, 32, 16), (3136, 144, 24), (784, 192, 32), (196, 576, 96), (3025, 64, 144), (729, 128, 288),
         (169, 256, 432), (196, 2304, 256), (49, 576, 96), (128, 1024, 256)]
# (h, w, channels, window, stride): mobilenet_v2's and mobilenet_v3_small's depthwise layers.
DEPTHWISE = [(112, 112, 32, 3, 1), (112, 112, 16, 3, 2), (56, 56, 144, 3, 1), (56, 56, 72, 3, 2),
             (28, 28, 88, 3, 1), (28, 28, 96, 5, 2), (14, 14, 240, 5, 1), (7, 7, 576, 5, 1)]

MEASURE = """(async ({builds, gemms, depthwise, rounds}) => {
  const memory = new WebAssembly.Memory({ initial: 2048, maximum: 65536 });
  const available = [];
  const exports = {};
  for (const name of builds) {
    const bytes = await (await fetch(`/kernels/${name}`)).arrayBuffer();
    if (!WebAssembly.validate(bytes)) continue;
    exports[name] = (await WebAssembly.instantiate(bytes, { env: { memory } })).instance.exports;
    available.push(name);
  }
  const f32 = new Float32Array(memory.buffer);
  for (let i = 0; i < f32.length; i++) f32[i] = ((i * 7919) % 17 - 8) / 16;
  const time = (call) => {          // ms per call: one sample repeats the call for >= 20 ms
    let calls = 0;
    const t0 = performance.now();
    do { call(); calls++; } while (performance.now() - t0 < 20);
    return (performance.now() - t0) / calls;
  };
  const alternate = (calls) => {    // {build: median ms}, the builds alternating
    const samples = Object.fromEntries(available.map((b) => [b, []]));
    for (let r = 0; r < 2 * rounds; r++) {
      const order = r % 2 ? available.slice().reverse() : available;
      for (const b of order) { const ms = time(calls[b]); if (r >= rounds) samples[b].push(ms); }
    }
    return Object.fromEntries(available.map((b) => {
      const s = samples[b].sort((x, y) => x - y);
      return [b, s[s.length >> 1]];
    }));
  };
  const A = 1 << 20, rows = [];
  for (const [m, n, k] of gemms) {
    const B = A + m * k * 4, P = B + k * n * 4, C = P + k * n * 4, BIAS = C + m * n * 4;
    const calls = {};
    for (const b of available) {
      exports[b].gemm_pack_b(k, n, B, n, P);
      calls[b] = () => exports[b].sgemm(m, n, k, A, k, 1, B, n, C, n, 0, BIAS, 0, 1, 0, 6, P, 1);
    }
    rows.push({ kind: "sgemm", shape: `${m}x${n}x${k}`, macs: m * n * k, ms: alternate(calls) });
  }
  for (const [h, w, ch, win, s] of depthwise) {
    const pad = win >> 1, oh = Math.floor((h + 2 * pad - win) / s) + 1, ow = Math.floor((w + 2 * pad - win) / s) + 1;
    const F = A + h * w * ch * 4, BIAS = F + win * win * ch * 4, O = BIAS + ch * 4;
    const calls = {};
    for (const b of available) {
      calls[b] = () => exports[b].depthwise_nhwc(1, h, w, ch, A, F, win, win, BIAS, O, oh, ow, s, s, 1, 1, pad, pad,
                                                  2, 0, 0);
    }
    rows.push({ kind: "depthwise", shape: `${h}x${w}x${ch} ${win}x${win}/${s}`, macs: oh * ow * ch * win * win,
                ms: alternate(calls) });
  }
  return { available, rows };
})"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--browser", choices=["chromium", "firefox", "webkit"], default="chromium")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per shape (default 7)")
    args = parser.parse_args(argv)

    import browsers
    from tools.build_kernels import main as build_kernels
    from webnn_py.serve import PolyfillServer

    if build_kernels([]) != 0:
        return 1
    load = [os.getloadavg()[0]]
    with browsers.launch(args.browser) as browser, \
            PolyfillServer(root=PAGES, mounts={"/kernels/": KERNELS}) as server, browser.new_page() as page:
        page.goto(f"{server.url}/layer.html")
        arguments = json.dumps({"builds": BUILDS, "gemms": GEMMS, "depthwise": DEPTHWISE, "rounds": args.rounds})
        result = page.evaluate(f"{MEASURE}({arguments})", timeout=1800)
        engine = f"{browser.engine} {browser.version}"
    load.append(os.getloadavg()[0])
    available = result["available"]
    print(f"{engine}; builds validated: {', '.join(available)}; machine: {os.cpu_count()} CPUs, "
          f"1-minute load average {load[0]:.1f} → {load[1]:.1f}")
    print("medians ms (GFLOP/s)" + ("; ratio = relaxed / plain (below 1: the FMA build is faster)"
                                    if len(available) == 2 else ""))
    header = f"{'kernel':10s} {'shape':22s}" + "".join(f"{b:>28s}" for b in available)
    print(header + ("       ratio" if len(available) == 2 else ""))
    for row in result["rows"]:
        cells = "".join(f"{row['ms'][b]:13.4f} ({2 * row['macs'] / row['ms'][b] / 1e6:6.1f})       " for b in available)
        ratio = f"{row['ms'][available[1]] / row['ms'][available[0]]:10.2f}×" if len(available) == 2 else ""
        print(f"{row['kind']:10s} {row['shape']:22s}{cells}{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
