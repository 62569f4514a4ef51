"""Per-operator timings on MobileNet-sized inputs, on host CPython and inside Pyodide, side by side.

    .venv/bin/python bench/operators.py [--repeat N] [--only NAME ...]

Each case is one operator in a graph of its own, run through the public API
(writeTensor → dispatch → readTensor); the median of N runs after one warm-up
is reported. The Pyodide column runs this same file inside Pyodide 0.27.7
under Node.js (bench/run_in_pyodide.mjs), from build/pyodide (./dev setup).
The table is sorted by the Pyodide time, slowest first.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

# One BLAS thread, like Pyodide (which has one) and like the side-by-side benchmark's
# onnxruntime (intra_op_num_threads=1); a setting in the environment wins.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import webnn_py  # noqa: E402


def f32(*shape):
    return {"dataType": "float32", "shape": list(shape)}


# name -> (input descriptors, constant shapes, build(builder, operands) -> output)
CASES = {
    "conv2d 3→32 3x3/2 (224)": ({"x": f32(1, 3, 224, 224)}, {"w": (32, 3, 3, 3), "b": (32,)},
                                lambda g, o: g.conv2d(o["x"], o["w"], {"strides": [2, 2], "padding": [0, 1, 0, 1],
                                                                       "bias": o["b"]})),
    "conv2d depthwise 32 3x3 (112)": ({"x": f32(1, 32, 112, 112)}, {"w": (32, 1, 3, 3)},
                                      lambda g, o: g.conv2d(o["x"], o["w"], {"groups": 32, "padding": [1, 1, 1, 1]})),
    "conv2d pointwise 32→64 (112)": ({"x": f32(1, 32, 112, 112)}, {"w": (64, 32, 1, 1)},
                                     lambda g, o: g.conv2d(o["x"], o["w"])),
    "conv2d 96→24 1x1 nhwc (56)": ({"x": f32(1, 56, 56, 96)}, {"w": (24, 1, 1, 96)},
                                   lambda g, o: g.conv2d(o["x"], o["w"], {"inputLayout": "nhwc",
                                                                          "filterLayout": "ohwi"})),
    "convTranspose2d 32→16 3x3/2 (56)": ({"x": f32(1, 32, 56, 56)}, {"w": (32, 16, 3, 3)},
                                         lambda g, o: g.convTranspose2d(o["x"], o["w"], {"strides": [2, 2]})),
    "clamp relu6 (32x112x112)": ({"x": f32(1, 32, 112, 112)}, {},
                                 lambda g, o: g.clamp(o["x"], {"minValue": 0, "maxValue": 6})),
    "relu (32x112x112)": ({"x": f32(1, 32, 112, 112)}, {}, lambda g, o: g.relu(o["x"])),
    "hardSwish (32x112x112)": ({"x": f32(1, 32, 112, 112)}, {}, lambda g, o: g.hardSwish(o["x"])),
    "sigmoid (32x112x112)": ({"x": f32(1, 32, 112, 112)}, {}, lambda g, o: g.sigmoid(o["x"])),
    "add (32x112x112)": ({"x": f32(1, 32, 112, 112), "y": f32(1, 32, 112, 112)}, {},
                         lambda g, o: g.add(o["x"], o["y"])),
    "batchNormalization (32x112x112)": ({"x": f32(1, 32, 112, 112)}, {"m": (32,), "v": (32,)},
                                        lambda g, o: g.batchNormalization(o["x"], o["m"], o["v"])),
    "maxPool2d 3x3/2 (64x112x112)": ({"x": f32(1, 64, 112, 112)}, {},
                                     lambda g, o: g.maxPool2d(o["x"], {"windowDimensions": [3, 3], "strides": [2, 2]})),
    "averagePool2d global (1280x7x7)": ({"x": f32(1, 1280, 7, 7)}, {}, lambda g, o: g.averagePool2d(o["x"])),
    "conv2d+bias+relu6 fused pointwise 16→96 (112)": ({"x": f32(1, 16, 112, 112)}, {"w": (96, 16, 1, 1), "b": (96,)},
                                                       lambda g, o: g.clamp(g.conv2d(o["x"], o["w"], {"bias": o["b"]}),
                                                                            {"minValue": 0, "maxValue": 6})),
    "conv2d depthwise 96 3x3/2 (112)": ({"x": f32(1, 96, 112, 112)}, {"w": (96, 1, 3, 3)},
                                        lambda g, o: g.conv2d(o["x"], o["w"], {"groups": 96, "strides": [2, 2],
                                                                               "padding": [0, 1, 0, 1]})),
    "matmul+add+gelu 128x256·256x1024": ({"x": f32(128, 256)}, {"w": (256, 1024), "b": (1024,)},
                                         lambda g, o: g.gelu(g.add(g.matmul(o["x"], o["w"]), o["b"]))),
    "gemm 1280→1000": ({"x": f32(1, 1280)}, {"w": (1000, 1280), "b": (1000,)},
                       lambda g, o: g.gemm(o["x"], o["w"], {"c": o["b"], "bTranspose": True})),
    "matmul 128x256·256x256": ({"x": f32(128, 256)}, {"w": (256, 256)}, lambda g, o: g.matmul(o["x"], o["w"])),
    "softmax (1x1000)": ({"x": f32(1, 1000)}, {}, lambda g, o: g.softmax(o["x"], 1)),
    "layerNormalization (128x256)": ({"x": f32(128, 256)}, {}, lambda g, o: g.layerNormalization(o["x"], {"axes": [1]})),
    "gelu (128x1024)": ({"x": f32(128, 1024)}, {}, lambda g, o: g.gelu(o["x"])),
    "reduceMean spatial (1280x7x7)": ({"x": f32(1, 1280, 7, 7)}, {},
                                      lambda g, o: g.reduceMean(o["x"], {"axes": [2, 3]})),
    "transpose nchw→nhwc (32x112x112)": ({"x": f32(1, 32, 112, 112)}, {},
                                         lambda g, o: g.transpose(o["x"], {"permutation": [0, 2, 3, 1]})),
    "resample2d linear x2 (32x56x56)": ({"x": f32(1, 32, 56, 56)}, {},
                                        lambda g, o: g.resample2d(o["x"], {"mode": "linear", "scales": [2.0, 2.0]})),
    "concat channels (2x 32x56x56)": ({"x": f32(1, 32, 56, 56), "y": f32(1, 32, 56, 56)}, {},
                                      lambda g, o: g.concat([o["x"], o["y"]], 1)),
    "lstm 16 steps h=128": ({"x": f32(16, 1, 64)}, {"w": (1, 512, 64), "r": (1, 512, 128)},
                            lambda g, o: g.lstm(o["x"], o["w"], o["r"], 16, 128)[0]),
}


async def run_case(name: str, repeat: int) -> float:
    inputs, constants, build = CASES[name]
    rng = np.random.default_rng(0)
    context = await webnn_py.ml.createContext()
    builder = webnn_py.MLGraphBuilder(context)
    operands = {n: builder.input(n, d) for n, d in inputs.items()}
    for n, shape in constants.items():
        data = rng.uniform(0.5, 1.5, size=shape).astype(np.float32)
        operands[n] = builder.constant(f32(*shape), data)
    out = build(builder, operands)
    graph = await builder.build({"out": out})
    tensors = {}
    for n, d in inputs.items():
        tensors[n] = await context.createTensor({**d, "writable": True})
        context.writeTensor(tensors[n], rng.standard_normal(d["shape"]).astype(np.float32))
    result = await context.createTensor({"dataType": out.dataType, "shape": out.shape, "readable": True})
    times = []
    for _ in range(repeat + 1):
        start = time.perf_counter()
        context.dispatch(graph, tensors, {"out": result})
        await context.readTensor(result)
        times.append(time.perf_counter() - start)
    context.destroy()
    return float(np.median(times[1:])) * 1000


async def run_all(repeat: int = 5, only: list[str] | None = None) -> dict[str, float]:
    return {name: await run_case(name, repeat) for name in CASES if not only or any(o in name for o in only)}


def pyodide_timings(repeat: int, only: list[str]) -> dict[str, float]:
    runtime = REPO / "build" / "pyodide"
    proc = subprocess.run(["node", str(REPO / "bench" / "run_in_pyodide.mjs"), str(runtime), str(REPO),
                           json.dumps({"repeat": repeat, "only": only})],
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"the Pyodide run failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", nargs="*", default=[], help="substrings of case names")
    args = parser.parse_args(argv)
    host = asyncio.run(run_all(args.repeat, args.only))
    wasm = pyodide_timings(args.repeat, args.only)
    print(f"{'operator (input)':40} {'host ms':>9} {'pyodide ms':>11} {'pyodide/host':>13}")
    for name in sorted(host, key=lambda n: -wasm[n]):
        print(f"{name:40} {host[name]:9.2f} {wasm[name]:11.2f} {wasm[name] / host[name]:13.1f}")
    print(f"{'total':40} {sum(host.values()):9.2f} {sum(wasm.values()):11.2f} "
          f"{sum(wasm.values()) / sum(host.values()):13.1f}")


if __name__ == "__main__":
    main()
