"""Run a model file with the Model Loader API on the host.

    python -m webnn_py.run_model MODEL [--format tflite|openvino] [--weights M.bin]
                                 [--input NAME=FILE.npy ...] [--output OUT.npz] [--repeat N]
                                 [--signature KEY] [--max-iterations N]

An OpenVINO IR model is its .xml with --weights naming its .bin (by default
the .xml's name with .bin, when that file exists).

Prints the inputs and outputs the model declares, the load and compute times,
and a summary of each output. Inputs not given are filled with random values
(uniform in [0, 1) for floats, the type's full range for integers), seeded.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

import numpy as np

from . import ml
from .base.errors import DOMException
from .loader import MLModelLoader

_NUMPY = {"float32": np.float32, "float16": np.float16, "int32": np.int32, "uint32": np.uint32,
          "int64": np.int64, "uint64": np.uint64, "int8": np.int8, "uint8": np.uint8}


def _random(info: dict, rng: np.random.Generator) -> np.ndarray:
    dtype = np.dtype(_NUMPY[info["type"]])
    shape = info["dimensions"]
    if dtype.kind == "f":
        return rng.random(shape).astype(dtype)
    limits = np.iinfo(dtype)
    return rng.integers(limits.min, limits.max, size=shape, dtype=dtype, endpoint=True)


def _describe(infos: list[dict]) -> str:
    return "\n".join(f"  {i['name']}: {i['type']} {i['dimensions']}" for i in infos)


async def run(args) -> int:
    data = open(args.model, "rb").read()
    context = await ml.createContext({"modelFormat": args.format})
    started = time.perf_counter()
    options = {}
    if args.signature:
        options["signature"] = args.signature
    if args.max_iterations is not None:
        options["maxIterations"] = args.max_iterations
    weights = args.weights
    if args.format == "openvino" and weights is None and args.model.endswith(".xml"):
        candidate = args.model[:-4] + ".bin"
        weights = candidate if os.path.exists(candidate) else None
    if weights is not None:
        options["weights"] = open(weights, "rb").read()
    model = await MLModelLoader(context).load(data, options)
    load_seconds = time.perf_counter() - started
    inputs, outputs = model.inputs(), model.outputs()
    print(f"model: {args.model} ({len(data)} bytes, {args.format})"
          + (f", weights {weights} ({len(options['weights'])} bytes)" if weights else ""))
    print(f"inputs:\n{_describe(inputs)}")
    print(f"outputs:\n{_describe(outputs)}")
    print(f"load: {load_seconds * 1000:.1f} ms")

    given = {}
    for item in args.input:
        name, _, path = item.partition("=")
        if not path:
            raise SystemExit(f"--input wants NAME=FILE.npy, got {item!r}")
        given[name] = np.load(path)
    names = {i["name"] for i in inputs}
    unknown = sorted(set(given) - names)
    if unknown:
        raise SystemExit(f"the model has no input named {', '.join(unknown)} (it has {', '.join(sorted(names))})")
    rng = np.random.default_rng(args.seed)
    feeds = {}
    for info in inputs:
        array = given.get(info["name"])
        if array is None:
            if 0 in info["dimensions"]:
                raise SystemExit(f"input {info['name']} has a dynamic dimension ({info['dimensions']}: 0 is "
                                 "not known until run time); give its value with --input")
            array = _random(info, rng)
            print(f"input {info['name']}: random {info['type']} {info['dimensions']} (seed {args.seed})")
        # np.array, not np.ascontiguousarray: that one makes a 0-d array 1-d, and
        # a scalar input must keep dimensions [].
        array = np.array(array, dtype=_NUMPY[info["type"]], order="C")
        feeds[info["name"]] = {"data": array.reshape(-1), "dimensions": list(array.shape)}

    times = []
    result = None
    for _ in range(max(1, args.repeat)):
        started = time.perf_counter()
        result = await model.compute(feeds)
        times.append(time.perf_counter() - started)
    if len(outputs) == 1:
        result = {outputs[0]["name"]: result}
    label = "compute" if len(times) == 1 else f"compute ×{len(times)}"
    print(f"{label}: first {times[0] * 1000:.1f} ms" + (
        f", median of the rest {np.median(times[1:]) * 1000:.1f} ms" if len(times) > 1 else ""))
    arrays = {}
    for name, tensor in result.items():
        array = np.asarray(tensor["data"]).reshape(tensor["dimensions"])
        arrays[name] = array
        stats = (f"min {array.min():.6g} max {array.max():.6g} mean {array.astype(np.float64).mean():.6g}"
                 if array.size else "empty")
        print(f"output {name}: {array.dtype} {list(array.shape)} {stats}")
    if args.output:
        np.savez(args.output, **arrays)
        print(f"wrote {args.output}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m webnn_py.run_model", description=__doc__.splitlines()[0])
    parser.add_argument("model", help="the model file")
    parser.add_argument("--format", default="tflite", choices=["tflite", "openvino"], help="the model's format")
    parser.add_argument("--weights", metavar="M.bin", help="an OpenVINO IR's weights (default: MODEL with .bin)")
    parser.add_argument("--max-iterations", type=int, metavar="N",
                        help="stop loops in the model after N iterations (OperationError)")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                        help="an input's value (repeatable); others are random")
    parser.add_argument("--output", metavar="OUT.npz", help="save the outputs here")
    parser.add_argument("--repeat", type=int, default=1, help="run compute this many times (timing)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    parser.add_argument("--signature", help="the TFLite signature to run (default: the first)")
    args = parser.parse_args(argv)
    try:
        return asyncio.run(run(args))
    except (DOMException, TypeError, OSError) as exc:
        name = getattr(exc, "name", type(exc).__name__)
        print(f"error: {name}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
