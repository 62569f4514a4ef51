"""Einsum-7 where it is a transpose, a sum over axes, or a (batched) matrix
product: WebNN's transpose, reduceSum, reshape and matmul.

One operand: labels missing from the output are summed over, the rest
transposed into the output's order. Two operands: labels only one side has
and the output lacks are summed over first; then the labels both sides and the
output have are batch axes, those both sides have and the output lacks are
contracted, and the rest are each side's free axes; A becomes
[batch, free_A, contracted], B [batch, contracted, free_B], and one matmul
(with reshapes grouping the axes) gives [batch, free_A, free_B], transposed
into the output's order. Ellipses, a label repeated in one operand
(diagonals) and more than two operands are not supported.
"""
from __future__ import annotations

import numpy as np


def _parse(t, count: int):
    equation = t.layer.data.get("equation", "").replace(" ", "")
    if "->" not in equation:
        raise t.unsupported(f"equation {equation!r} has no explicit output ('->'), which is not supported")
    left, output = equation.split("->")
    terms = left.split(",")
    if len(terms) != count:
        raise t.malformed(f"equation {equation!r} names {len(terms)} operands, the layer has {count}")
    for term in terms + [output]:
        if "." in term:
            raise t.unsupported(f"equation {equation!r}: ellipses are not supported")
        if not term.isalpha() and term:
            raise t.malformed(f"equation {equation!r}: labels must be letters")
        if len(set(term)) != len(term):
            raise t.unsupported(f"equation {equation!r}: a label repeated in one term (a diagonal) is not supported")
    if not set(output) <= set("".join(terms)):
        raise t.malformed(f"equation {equation!r}: the output names a label no operand has")
    return terms, output


def _sum_out(t, x, labels: str, keep: set[str]):
    """Sum over the axes whose labels are not in `keep`."""
    axes = [i for i, label in enumerate(labels) if label not in keep]
    if axes:
        x = t.b.reduceSum(x, {"axes": axes})
    return x, "".join(label for label in labels if label in keep)


def _arrange(t, x, labels: str, order: str):
    if labels == order:
        return x
    return t.b.transpose(x, {"permutation": [labels.index(label) for label in order]})


def einsum(t, inputs):
    if len(inputs) not in (1, 2):
        raise t.unsupported(f"Einsum of {len(inputs)} operands is not supported (1 or 2 are)")
    terms, output = _parse(t, len(inputs))
    operands = [t.operand(v) for v in inputs]
    sizes: dict[str, int] = {}
    for x, term in zip(operands, terms):
        if len(term) != len(x.shape):
            raise t.malformed(f"term {term!r} has {len(term)} labels for a rank-{len(x.shape)} operand")
        for label, size in zip(term, x.shape):
            if sizes.setdefault(label, size) != size:
                raise t.unsupported(f"label {label!r} has sizes {sizes[label]} and {size} (broadcasting a label "
                                    "is not supported)")
    if len(operands) == 1:
        x, labels = _sum_out(t, operands[0], terms[0], set(output))
        return [_arrange(t, x, labels, output)]

    (a, b), (la, lb) = operands, terms
    a, la = _sum_out(t, a, la, set(output) | set(lb))
    b, lb = _sum_out(t, b, lb, set(output) | set(la))
    batch = [c for c in output if c in la and c in lb]
    contracted = [c for c in la if c in lb and c not in output]
    free_a = [c for c in la if c not in lb]
    free_b = [c for c in lb if c not in la]

    def product(labels):
        return int(np.prod([sizes[c] for c in labels], dtype=np.int64))

    a = _arrange(t, a, la, "".join(batch + free_a + contracted))
    b = _arrange(t, b, lb, "".join(batch + contracted + free_b))
    batch_shape = [sizes[c] for c in batch]
    a = t.b.reshape(a, batch_shape + [product(free_a), product(contracted)])
    b = t.b.reshape(b, batch_shape + [product(contracted), product(free_b)])
    out = t.b.matmul(a, b)
    labels = "".join(batch + free_a + free_b)
    out = t.b.reshape(out, [sizes[c] for c in labels]) if labels else t.b.reshape(out, [])
    return [_arrange(t, out, labels, output)]


TRANSLATORS = {"Einsum": einsum}
