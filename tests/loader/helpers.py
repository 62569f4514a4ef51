"""Helpers of the Model Loader tests: LiteRT reference runs, our host runs, the measure."""
from __future__ import annotations

import asyncio

import numpy as np


def litert_run(model: bytes, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Reference outputs from the LiteRT interpreter, by tensor name (inputs by tensor name too)."""
    from ai_edge_litert.interpreter import Interpreter
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    for detail in interpreter.get_input_details():
        interpreter.set_tensor(detail["index"], inputs[detail["name"]])
    interpreter.invoke()
    return {d["name"]: interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()}


def webnn_run(model: bytes, inputs: dict[str, np.ndarray], signature: str | None = None) -> dict[str, np.ndarray]:
    """Our outputs by name: load with MLModelLoader and compute on the host."""
    from webnn_py import ml
    from webnn_py.loader import MLModelLoader

    async def go():
        context = await ml.createContext()
        loaded = await MLModelLoader(context).load(model, {"signature": signature} if signature else None)
        return await compute_arrays(loaded, inputs)

    return asyncio.run(go())


async def compute_arrays(loaded, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One MLModel.compute() on numpy arrays by input name; the outputs by name, shaped."""
    feeds = {k: {"data": np.ascontiguousarray(v).reshape(-1), "dimensions": list(v.shape)} for k, v in inputs.items()}
    result = await loaded.compute(feeds)
    names = [o["name"] for o in loaded.outputs()]
    if len(names) == 1:
        result = {names[0]: result}
    return {k: np.asarray(v["data"]).reshape(v["dimensions"]) for k, v in result.items()}


def relative_error(ours: np.ndarray, reference: np.ndarray) -> float:
    """max |ours - reference| / max(1, max |reference|): issue 6's measure."""
    reference = reference.astype(np.float64)
    return float(np.abs(ours.astype(np.float64) - reference).max() / max(1.0, np.abs(reference).max()))


def astronaut(size: int, low: float, high: float) -> np.ndarray:
    """scikit-image's astronaut photo as a [1, size, size, 3] float32 model input in [low, high]."""
    from PIL import Image
    from skimage import data
    image = Image.fromarray(data.astronaut()).resize((size, size), Image.BILINEAR)
    x = np.asarray(image, np.float32)[None] / 255.0
    return (x * (high - low) + low).astype(np.float32)
