"""Non-maximum suppression: NON_MAX_SUPPRESSION_V4 and V5 (hard suppression,
soft_nms_sigma 0).

LiteRT pops candidates above score_threshold in score order and keeps one unless
its IoU with a box already kept is >= iou_threshold. That is the same as: keep the
best remaining candidate, then drop every candidate overlapping it that much.
With a constant max_output_size the outputs have static shapes, so the loop is
unrolled one output slot at a time: argMax over the remaining scores, the IoU of
that box with every box, a mask update. Slots after the last valid one hold 0,
as LiteRT leaves them.

The kept box itself is dropped by the same rule, its IoU with itself being 1, as in
LiteRT, which puts a kept box back among the candidates: an empty box (IoU 0 with
everything, itself included) is therefore kept again in every remaining slot, and
so it is here.
"""
from __future__ import annotations

import numpy as np

from .ops_shape import _ints

# Output slots one operator may unroll (each costs about twenty builder calls).
MAX_OUTPUT_SLOTS = 1024


def _corners(ctx, boxes):
    """(ymin, xmin, ymax, xmax, area) of boxes [n, 4] given as (y1, x1, y2, x2) in any corner order."""
    b = ctx.b
    n = boxes.shape[0]
    y1, x1, y2, x2 = (b.reshape(part, [n]) for part in b.split(boxes, 4, {"axis": 1}))
    ymin, ymax, xmin, xmax = b.min(y1, y2), b.max(y1, y2), b.min(x1, x2), b.max(x1, x2)
    return ymin, xmin, ymax, xmax, b.mul(b.sub(ymax, ymin), b.sub(xmax, xmin))


def _suppress(with_scores: bool):
    def translate(ctx):
        """boxes [n, 4], scores [n], max_output_size (a constant), iou_threshold,
        score_threshold (, soft_nms_sigma: V5, must be 0). Outputs: selected_indices
        [max_output_size] (, selected_scores: V5), valid_outputs."""
        b = ctx.b
        boxes, scores = ctx.input(0), ctx.input(1)
        size = _ints(ctx.required_const(2, "max_output_size"))
        if len(boxes.shape) != 2 or boxes.shape[1] != 4 or list(scores.shape) != [boxes.shape[0]]:
            raise ctx.fail(f"boxes {list(boxes.shape)} and scores {list(scores.shape)} must be [n, 4] and [n]")
        if len(size) != 1 or not 0 < size[0] <= MAX_OUTPUT_SLOTS:
            raise ctx.fail(f"max_output_size {size} must be one number in 1..{MAX_OUTPUT_SLOTS}")
        if with_scores:
            sigma = np.asarray(ctx.required_const(5, "soft_nms_sigma")).reshape(-1)
            if sigma.size != 1 or sigma[0] != 0:
                raise ctx.fail("soft NMS (soft_nms_sigma > 0) is not supported")
        iou_threshold, score_threshold = (b.reshape(ctx.input(k), []) for k in (3, 4))
        ymin, xmin, ymax, xmax, area = _corners(ctx, boxes)
        lowest = ctx.constant_operand(np.array(np.finfo(np.float32).min, np.float32))
        zero_index = ctx.constant_operand(np.zeros(1, np.int32))
        zero = ctx.constant_operand(np.zeros((), np.float32))
        active = b.greater(scores, score_threshold)
        # LiteRT fills at most as many slots as there were candidates to begin with
        # (a re-kept empty box fills the rest of them, no more).
        candidates = b.reduceSum(b.cast(active, "int32"), {"axes": [0], "keepDimensions": True})
        indices, kept_scores, valid = [], [], []
        for slot in range(size[0]):
            found = b.logicalAnd(b.reshape(b.reduceMax(active, {"axes": [0]}), [1]),
                                 b.greater(candidates, ctx.constant_operand(np.array([slot], np.int32))))
            best = b.argMax(b.where(active, scores, lowest), 0, {"keepDimensions": True, "outputDataType": "int32"})
            indices.append(b.where(found, best, zero_index))
            if with_scores:
                kept_scores.append(b.where(found, b.gather(scores, best, {"axis": 0}), zero))
            valid.append(found)
            # IoU of the chosen box with every box; 0 when either area is empty (LiteRT's rule).
            pick = [b.gather(v, best, {"axis": 0}) for v in (ymin, xmin, ymax, xmax, area)]
            height = b.max(b.sub(b.min(ymax, pick[2]), b.max(ymin, pick[0])), zero)
            width = b.max(b.sub(b.min(xmax, pick[3]), b.max(xmin, pick[1])), zero)
            inter = b.mul(height, width)
            union = b.sub(b.add(area, pick[4]), inter)
            empty = b.logicalOr(b.lesserOrEqual(area, zero), b.lesserOrEqual(pick[4], zero))
            # (the divisor of an empty pair is made non-zero: where() evaluates both sides)
            iou = b.where(empty, zero, b.div(inter, b.where(empty, b.add(union, ctx.scalar(1, union)), union)))
            active = b.logicalAnd(active, b.logicalNot(b.greaterOrEqual(iou, iou_threshold)))
        ctx.set_output(0, indices[0] if len(indices) == 1 else b.concat(indices, 0))
        if with_scores:
            ctx.set_output(1, kept_scores[0] if len(kept_scores) == 1 else b.concat(kept_scores, 0))
        found_all = b.concat(valid, 0) if len(valid) > 1 else valid[0]
        count = b.reduceSum(b.cast(found_all, "int32"), {"axes": [0]})
        last = 2 if with_scores else 1
        ctx.set_output(last, b.reshape(count, list(ctx.output_tensor(last).shape)))
    return translate


TRANSLATORS = {
    "NON_MAX_SUPPRESSION_V4": _suppress(False),
    "NON_MAX_SUPPRESSION_V5": _suppress(True),
}
