"""CTCGreedyDecoder-1 and CTCGreedyDecoderSeqLen-6: per time step the most
likely class (argMax, the first among equals); a step is kept when it is
within the sequence, is not the blank class, and (with merge_repeated)
differs from the previous step's class. The kept classes are packed to the
front of each row, the rest is -1.

The packing is a scatter: kept step t goes to position (number of kept steps
up to t) - 1, every other step to an extra last slot, which is then cut off,
so the result has the static shape [N, T] whatever the data keeps.
"""
from __future__ import annotations

import numpy as np


def _decode(t, classes, valid, blank, merge: bool, index_type: str):
    """(decoded [N, T] of index_type, kept counts [N] int32) from classes
    [N, T] (int32), valid [N, T] (uint8) and the blank class (an operand)."""
    n, steps = classes.shape
    keep = t.b.logicalAnd(valid, t.b.notEqual(classes, blank))
    if merge and steps > 1:
        earlier = t.b.concat([t.operand(np.full((n, 1), -1, np.int32)),
                              t.b.slice(classes, [0, 0], [n, steps - 1])], 1)
        keep = t.b.logicalAnd(keep, t.b.notEqual(classes, earlier))
    kept = t.b.cast(keep, "int32")
    position = t.b.sub(t.b.cumulativeSum(kept, 1), t.operand(np.ones((), np.int32)))
    target = t.b.where(keep, position, t.operand(np.array(steps, np.int32)))
    empty = t.operand(np.full((n, steps + 1), -1, np.int32))
    packed = t.b.slice(t.b.scatterElements(empty, target, classes, {"axis": 1}), [0, 0], [n, steps])
    if index_type != "int32":
        packed = t.b.cast(packed, index_type)
    return packed, t.b.reduceSum(kept, {"axes": [1]})


def ctc_greedy_decoder(t, inputs):
    """CTCGreedyDecoder-1: data [T, N, C], sequence_mask [T, N] (a step is in
    the sequence while the mask has had no 0 yet); the result [N, T, 1, 1] as
    floats, the blank class C - 1."""
    t.arity(inputs, 2)
    data, mask = (t.operand(v) for v in inputs)
    if len(data.shape) != 3 or list(mask.shape) != list(data.shape[:2]):
        raise t.malformed(f"data {list(data.shape)} and sequence_mask {list(mask.shape)} are not [T, N, C] and [T, N]")
    steps, n, count = data.shape
    classes = t.b.transpose(t.b.argMax(data, 2, {"outputDataType": "int32"}), {"permutation": [1, 0]})
    ended = t.b.cumulativeSum(t.b.cast(t.b.equal(mask, t.operand(np.zeros((), np.dtype(mask.dataType)))),
                                       "int32"), 0)
    valid = t.b.transpose(t.b.equal(ended, t.operand(np.zeros((), np.int32))), {"permutation": [1, 0]})
    blank = t.operand(np.array(count - 1, np.int32))
    decoded, _ = _decode(t, classes, valid, blank, t.attr_flag("ctc_merge_repeated", True), "int32")
    return [t.b.reshape(t.b.cast(decoded, data.dataType), [n, steps, 1, 1])]


def ctc_greedy_decoder_seq_len(t, inputs):
    """CTCGreedyDecoderSeqLen-6: data [N, T, C], sequence_length [N], the blank
    class an optional input (default C - 1); outputs the decoded [N, T] and
    each row's decoded length."""
    t.arity(inputs, 2, 3)
    data, lengths = t.operand(inputs[0]), t.operand(inputs[1])
    if len(data.shape) != 3 or list(lengths.shape) != [data.shape[0]]:
        raise t.malformed(f"data {list(data.shape)} and sequence_length {list(lengths.shape)} are not [N, T, C], [N]")
    n, steps, count = data.shape
    types = {"i32": "int32", "i64": "int64"}
    index_type = types.get(t.layer.data.get("classes_index_type", "i32"))
    length_type = types.get(t.layer.data.get("sequence_length_type", "i32"))
    if index_type is None or length_type is None:
        raise t.malformed("classes_index_type / sequence_length_type are not i32 or i64")
    classes = t.b.argMax(data, 2, {"outputDataType": "int32"})
    if len(inputs) == 3:
        blank = t.one_int(inputs[2], "blank_index")
        blank_value = blank + count if blank < 0 else blank
    else:
        blank_value = count - 1
    steps_row = t.operand(np.arange(steps, dtype=np.dtype(lengths.dataType)).reshape(1, steps))
    valid = t.b.lesser(steps_row, t.b.reshape(lengths, [n, 1]))
    decoded, kept = _decode(t, classes, valid, t.operand(np.array(blank_value, np.int32)),
                            t.attr_flag("merge_repeated", True), index_type)
    return [decoded, kept if length_type == "int32" else t.b.cast(kept, length_type)]


TRANSLATORS = {"CTCGreedyDecoder": ctc_greedy_decoder, "CTCGreedyDecoderSeqLen": ctc_greedy_decoder_seq_len}
