"""pad (§8.9.36): constant, edge and reflection padding of every axis."""
from __future__ import annotations

import numpy as np

from ..base.casting import cast_number
from ..base.descriptor import OperandDescriptor
from .convolution import valid_dimension
from .registry import ANY, BuildContext, register

MODES = {"constant": "constant", "edge": "edge", "reflection": "reflect"}   # spec mode -> np.pad mode


def build(ctx: BuildContext, input, beginning_padding, ending_padding, options: dict):
    """§8.9.36 pad(input, beginningPadding, endingPadding, options), steps 2-11."""
    input_desc = ctx.check("input", input)                                  # step 2
    beginning = [int(p) for p in beginning_padding]
    ending = [int(p) for p in ending_padding]
    if len(beginning) != input_desc.rank or len(ending) != input_desc.rank:  # step 3
        ctx.fail(f"beginningPadding ({len(beginning)} items) and endingPadding ({len(ending)} items) "
                 f"must both have the input's rank {input_desc.rank} items")
    mode = options.get("mode", "constant")
    shape = list(input_desc.shape)                                          # steps 4-6
    for index in range(len(shape)):
        if mode == "reflection":
            # Reflection mirrors without repeating the edge: at most size - 1 elements.
            if beginning[index] >= shape[index]:
                ctx.fail(f"beginningPadding[{index}] {beginning[index]} must be smaller than the input's "
                         f"dimension {shape[index]} for reflection")
            if ending[index] >= shape[index]:
                ctx.fail(f"endingPadding[{index}] {ending[index]} must be smaller than the input's "
                         f"dimension {shape[index]} for reflection")
        shape[index] += beginning[index] + ending[index]
    for size in shape:                                                      # step 7
        if not valid_dimension(size):
            ctx.fail(f"the output dimension {size} (shape {shape}) is not a valid dimension")
    value = cast_number(options.get("value", 0), input_desc.data_type)      # step 8
    attributes = {"beginningPadding": beginning, "endingPadding": ending, "mode": mode, "value": value}
    return ctx.emit([input], [OperandDescriptor(input_desc.data_type, tuple(shape))], attributes)[0]


def kernel(inputs, attributes, outputs):
    x = inputs[0]
    if x.ndim == 0:
        return [x.copy()]
    widths = list(zip(attributes["beginningPadding"], attributes["endingPadding"]))
    mode = MODES[attributes["mode"]]
    if mode == "constant":
        return [np.pad(x, widths, mode="constant", constant_values=np.array(attributes["value"], dtype=x.dtype))]
    return [np.pad(x, widths, mode=mode)]


register("pad", build=build, kernel=kernel, limits={"input": ANY, "output": ANY})
