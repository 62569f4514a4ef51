"""Element-wise IR operations: arithmetic (with FloorMod, Mod, Power,
SquaredDifference), comparisons, logic, Select, Relu/Sigmoid/Tanh, Convert,
FakeQuantize and Softmax (OpenVINO opset1-opset15 semantics; other activations: ops_activation.py).

OpenVINO's "numpy" auto-broadcast is WebNN's bidirectional broadcast (§7.7.4
"bidirectionally broadcasting"), so those ops map one to one; "none" demands
equal shapes, which is checked here.
"""
from __future__ import annotations

import numpy as np

from .ir import ELEMENT_TYPES

FLOATS = ("float32", "float16")

# Results of these folds on constants are exact in numpy, so shape computations
# written as Consts + arithmetic stay constants.
_FOLD = {"Add": np.add, "Subtract": np.subtract, "Multiply": np.multiply, "Maximum": np.maximum,
         "Minimum": np.minimum}


def _broadcast_check(t, a, b) -> None:
    mode = t.layer.data.get("auto_broadcast", "numpy").lower()
    if mode == "none":
        if t.shape(a) != t.shape(b):
            raise t.malformed(f'auto_broadcast "none" needs equal shapes, got {list(t.shape(a))} and '
                              f"{list(t.shape(b))}")
    elif mode != "numpy":
        raise t.unsupported(f"auto_broadcast {mode!r} is not supported (numpy and none are)")


def _binary(method: str):
    def translate(t, inputs):
        a, b = _two(t, inputs)
        _broadcast_check(t, a, b)
        fold = _FOLD.get(t.layer.type)
        if fold is not None and isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype:
            return [fold(a, b).astype(a.dtype)]
        return [getattr(t.b, method)(t.operand(a), t.operand(b))]
    return translate


def _two(t, inputs):
    t.arity(inputs, 2)
    return inputs


def divide(t, inputs):
    a, b = _two(t, inputs)
    _broadcast_check(t, a, b)
    python_division = t.attr_flag("m_pythondiv", True)
    integers = t.data_type(a) not in FLOATS
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and integers and (b != 0).all():
        return [(np.floor_divide(a, b) if python_division else np.trunc(a / b)).astype(a.dtype)]
    x, y = t.operand(a), t.operand(b)
    if not integers or not python_division:
        return [t.b.div(x, y)]
    return [_floor_divide(t, x, y)]


def _floor_divide(t, x, y):
    """Integer division rounding toward -inf (Python's //; Divide-1 with
    m_pythondiv, the default). WebNN's div truncates: subtract 1 where the
    remainder is non-zero and its sign differs from the divisor's."""
    q = t.b.div(x, y)
    zero = t.operand(np.zeros((), dtype=np.dtype(x.dataType)))
    remainder = t.b.sub(x, t.b.mul(q, y))
    adjust = t.b.logicalAnd(t.b.notEqual(remainder, zero),
                            t.b.logicalXor(t.b.lesser(remainder, zero), t.b.lesser(y, zero)))
    return t.b.sub(q, t.b.cast(adjust, x.dataType))


def _truncate(t, x):
    """trunc(x) for floats: sign(x) floor(|x|)."""
    return t.b.mul(t.b.sign(x), t.b.floor(t.b.abs(x)))


def floor_mod(t, inputs):
    """FloorMod-1: the remainder of division rounding toward -inf (the divisor's
    sign): a - floor(a / b) b."""
    a, b = _two(t, inputs)
    _broadcast_check(t, a, b)
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and (b != 0).all():
        return [np.mod(a, b).astype(a.dtype)]
    x, y = t.operand(a), t.operand(b)
    q = t.b.floor(t.b.div(x, y)) if x.dataType in FLOATS else _floor_divide(t, x, y)
    return [t.b.sub(x, t.b.mul(q, y))]


def mod(t, inputs):
    """Mod-1: the remainder of truncated division (the dividend's sign):
    a - trunc(a / b) b."""
    a, b = _two(t, inputs)
    _broadcast_check(t, a, b)
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and (b != 0).all():
        return [np.fmod(a, b).astype(a.dtype)]
    x, y = t.operand(a), t.operand(b)
    q = _truncate(t, t.b.div(x, y)) if x.dataType in FLOATS else t.b.div(x, y)
    return [t.b.sub(x, t.b.mul(q, y))]


def squared_difference(t, inputs):
    """SquaredDifference-1: (a - b)^2."""
    a, b = _two(t, inputs)
    _broadcast_check(t, a, b)
    d = t.b.sub(t.operand(a), t.operand(b))
    return [t.b.mul(d, d)]


def convert_like(t, inputs):
    """ConvertLike-1: Convert to the element type of the second input."""
    value, like = _two(t, inputs)
    target = {"float32": "f32", "float16": "f16", "int32": "i32", "int64": "i64", "uint8": "u8"}[t.data_type(like)]
    return _convert_to(t, value, target)


def _unary(method: str):
    def translate(t, inputs):
        t.arity(inputs, 1)
        return [getattr(t.b, method)(t.operand(inputs[0]))]
    return translate


def select(t, inputs):
    t.arity(inputs, 3)
    condition, then, otherwise = inputs
    mode = t.layer.data.get("auto_broadcast", "numpy").lower()
    if mode == "none" and not (t.shape(condition) == t.shape(then) == t.shape(otherwise)):
        raise t.malformed('auto_broadcast "none" needs equal shapes')
    if mode not in ("none", "numpy"):
        raise t.unsupported(f"auto_broadcast {mode!r} is not supported (numpy and none are)")
    if t.data_type(condition) != "uint8":
        raise t.malformed(f"the condition is {t.data_type(condition)}, not boolean")
    return [t.b.where(t.operand(condition), t.operand(then), t.operand(otherwise))]


def convert(t, inputs):
    t.arity(inputs, 1)
    target = t.layer.data.get("destination_type")
    if target not in ELEMENT_TYPES:
        raise t.unsupported(f"destination_type {target!r} is not supported (supported: {', '.join(ELEMENT_TYPES)})")
    return _convert_to(t, inputs[0], target)


def _convert_to(t, value, target: str):
    if isinstance(value, np.ndarray):
        if target == "boolean":
            return [(value != 0).astype(np.uint8)]
        if value.dtype.kind == "f" and np.dtype(ELEMENT_TYPES[target][0]).kind in "iu":
            value = np.trunc(value)        # Convert-1: float -> integer rounds toward zero
        return [value.astype(ELEMENT_TYPES[target][0])]
    if target == "boolean":
        # Non-zero is true; WebNN booleans are uint8 0/1.
        zero = t.operand(np.zeros((), dtype=np.dtype(t.data_type(value))))
        return [t.b.notEqual(value, zero)]
    data_type = ELEMENT_TYPES[target][1]
    if data_type == value.dataType:
        return [value]
    return [t.b.cast(value, data_type)]


# ConvertPromoteTypes-14 over the element types the importer has: category
# (boolean < integer < floating), then width within a category.
_PROMOTION_ORDER = {"uint8": (1, 0), "int32": (1, 1), "int64": (1, 2), "float16": (2, 0), "float32": (2, 1)}
_IR_NAMES = {"float32": "f32", "float16": "f16", "int32": "i32", "int64": "i64", "uint8": "u8"}


def convert_promote_types(t, inputs):
    """ConvertPromoteTypes-14: both inputs converted to their common type: the
    higher category's type (a float beats any integer), the wider within a
    category; with pytorch_scalar_promotion a 0-d input of a category no higher
    than the other's takes the other's type. Without promote_unsafe an integer
    meets only floats at least twice its width, as the operation demands."""
    a, b = _two(t, inputs)
    kinds = [t.data_type(a), t.data_type(b)]
    # WebNN booleans are uint8: the ports' precision tells a boolean from a u8.
    booleans = [port.precision.upper() in ("BOOL", "BOOLEAN") for port in t.layer.inputs[:2]]
    if any(k not in _PROMOTION_ORDER for k in kinds):
        raise t.unsupported(f"promoting {kinds[0]} and {kinds[1]} is not supported")
    rank = [(0, 0) if boolean else _PROMOTION_ORDER[k] for k, boolean in zip(kinds, booleans)]
    scalar_rule = t.attr_flag("pytorch_scalar_promotion")
    scalars = [len(t.shape(v)) == 0 for v in (a, b)]
    if scalar_rule and scalars[0] != scalars[1]:
        tensor = 0 if scalars[1] else 1
        winner = tensor if rank[1 - tensor][0] <= rank[tensor][0] else 1 - tensor
    else:
        winner = 0 if rank[0] >= rank[1] else 1
    other = 1 - winner
    bits = {"uint8": 8, "int32": 32, "int64": 64, "float16": 16, "float32": 32}
    unsafe = t.attr_flag("promote_unsafe")
    if rank[other] > rank[winner] and not unsafe:
        raise t.malformed(f"the 0-d {kinds[other]} would narrow to {kinds[winner]} (promote_unsafe is false)")
    if (rank[winner][0] == 2 and rank[other][0] == 1 and not unsafe
            and bits[kinds[winner]] < 2 * bits[kinds[other]]):
        raise t.malformed(f"{kinds[other]} cannot be promoted to {kinds[winner]} exactly (promote_unsafe is false)")
    target = _IR_NAMES[kinds[winner]]
    if booleans[winner]:
        target = "boolean"
    return [_convert_to(t, a, target)[0], _convert_to(t, b, target)[0]]


def _bitwise(method: str):
    """BitwiseAnd/Or/Xor/Not-13 on booleans are the logical operators; WebNN has
    no bitwise operators on integers."""
    def translate(t, inputs):
        t.arity(inputs, 1 if method == "logicalNot" else 2)
        if any(port.precision.upper() not in ("BOOL", "BOOLEAN") for port in t.layer.inputs):
            raise t.unsupported(f"{t.layer.type} of integers is not supported (WebNN has no bitwise operators; "
                                "booleans are)")
        return [getattr(t.b, method)(*(t.operand(v) for v in inputs))]
    return translate


def softmax(t, inputs):
    t.arity(inputs, 1)
    x = t.operand(inputs[0])
    rank = len(x.shape)
    # Softmax-1: axis in [0, rank); Softmax-8: [-rank, rank), negative from the end.
    axis = t.attr_int("axis", 1)
    if t.layer.version == "opset1" and axis < 0:
        raise t.malformed(f"Softmax-1 takes a non-negative axis, not {axis}")
    return [t.b.softmax(x, t.axis(axis, rank))]


def fake_quantize(t, inputs):
    """FakeQuantize-1: x at or below min(input_low, input_high) becomes
    output_low, above max(...) output_high, and in between
    round((x - il) / (ih - il) (levels - 1)) / (levels - 1) (oh - ol) + ol,
    rounding halves to even (nearbyint in the default rounding mode)."""
    t.arity(inputs, 5)
    x, il, ih, ol, oh = (t.operand(v) for v in inputs)
    if x.dataType not in FLOATS:
        raise t.unsupported(f"FakeQuantize of {x.dataType} is not supported (floats only)")
    levels = t.attr_int("levels")
    if levels < 2:
        raise t.malformed(f"levels {levels} is below 2")
    steps = t.operand(np.array(levels - 1, np.dtype(x.dataType)))
    level = t.b.roundEven(t.b.mul(t.b.div(t.b.sub(x, il), t.b.sub(ih, il)), steps))
    inside = t.b.add(t.b.mul(t.b.div(level, steps), t.b.sub(oh, ol)), ol)
    low = t.b.lesserOrEqual(x, t.b.min(il, ih))
    high = t.b.greater(x, t.b.max(il, ih))
    return [t.b.where(low, ol, t.b.where(high, oh, inside))]


# Keys are the type names IR files carry (OpenVINO's serializer writes Relu as
# "ReLU", Softmax-1/8 as "SoftMax", PRelu as "PReLU").
TRANSLATORS = {
    "Add": _binary("add"), "Subtract": _binary("sub"), "Multiply": _binary("mul"), "Divide": divide,
    "Less": _binary("lesser"), "Greater": _binary("greater"), "Equal": _binary("equal"),
    "LessEqual": _binary("lesserOrEqual"), "GreaterEqual": _binary("greaterOrEqual"),
    "NotEqual": _binary("notEqual"), "Maximum": _binary("max"), "Minimum": _binary("min"),
    "LogicalAnd": _binary("logicalAnd"), "LogicalOr": _binary("logicalOr"), "LogicalXor": _binary("logicalXor"),
    "LogicalNot": _unary("logicalNot"),
    "ReLU": _unary("relu"), "Sigmoid": _unary("sigmoid"), "Tanh": _unary("tanh"),
    "Select": select, "Convert": convert, "ConvertLike": convert_like, "ConvertPromoteTypes": convert_promote_types, "SoftMax": softmax,
    "BitwiseAnd": _bitwise("logicalAnd"), "BitwiseOr": _bitwise("logicalOr"), "BitwiseXor": _bitwise("logicalXor"),
    "BitwiseNot": _bitwise("logicalNot"), "FakeQuantize": fake_quantize, "Power": _binary("pow"), "SquaredDifference": squared_difference, "FloorMod": floor_mod, "Mod": mod,
}
