"""Shape broadcasting algorithms of §9.1."""
from __future__ import annotations

from typing import Sequence


def broadcast_unidirectional(shape_from: Sequence[int], shape_to: Sequence[int]) -> tuple[int, ...] | None:
    """§9.1 "unidirectionally broadcast the shapes"; None stands for failure."""
    if len(shape_from) > len(shape_to):
        return None
    padded = (1,) * (len(shape_to) - len(shape_from)) + tuple(shape_from)
    for dim_from, dim_to in zip(padded, shape_to):
        if dim_from != dim_to and dim_from != 1:
            return None
    return tuple(shape_to)


def broadcast_bidirectional(shape_a: Sequence[int], shape_b: Sequence[int]) -> tuple[int, ...] | None:
    """§9.1 "bidirectionally broadcast the shapes"; None stands for failure."""
    size = max(len(shape_a), len(shape_b))
    padded_a = (1,) * (size - len(shape_a)) + tuple(shape_a)
    padded_b = (1,) * (size - len(shape_b)) + tuple(shape_b)
    out = []
    for dim_a, dim_b in zip(padded_a, padded_b):
        if dim_a != dim_b and dim_a != 1 and dim_b != 1:
            return None
        out.append(max(dim_a, dim_b))
    return tuple(out)


def blockwise_broadcastable(shape_from: Sequence[int], shape_to: Sequence[int]) -> bool:
    """§9.1 "blockwise broadcast the shapes"."""
    if len(shape_from) != len(shape_to):
        return False
    return all(to % frm == 0 for frm, to in zip(shape_from, shape_to))
