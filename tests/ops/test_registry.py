"""The operator package's structure and the value classes its table is made of: every
family module in the folder is imported (and registered) by the package, in the order
of its name; descriptors and limits compare, hash and refuse assignment as frozen
values do (webnn_py/base/values.py)."""
import copy
import pickle
from pathlib import Path

import numpy as np
import pytest

import webnn_py.ops as ops
from webnn_py.base.datatypes import DATA_TYPES, DataType
from webnn_py.base.descriptor import OperandDescriptor
from webnn_py.ops.registry import OPERATORS, TensorLimits


def test_every_family_module_in_the_folder_is_imported_in_name_order():
    folder = Path(ops.__file__).parent
    modules = sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))
    assert list(ops.FAMILIES) == [m for m in modules if m not in {"registry", "broadcast"}]
    assert all(f"{ops.__name__}.{family}" in __import__("sys").modules for family in ops.FAMILIES)


def test_descriptors_are_equal_by_value_hashable_and_frozen():
    a = OperandDescriptor("float32", (2, 3))
    b = OperandDescriptor(data_type="float32", shape=(2, 3))
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != OperandDescriptor("float16", (2, 3)) and a != OperandDescriptor("float32", (3, 2))
    assert a != ("float32", (2, 3))
    assert repr(a) == "OperandDescriptor(data_type='float32', shape=(2, 3))"
    assert str(a) == "float32[2, 3]"
    with pytest.raises(AttributeError):
        a.shape = (1,)
    with pytest.raises(AttributeError):
        del a.data_type
    with pytest.raises(AttributeError):
        a.other = 1                     # no instance dictionary either
    assert (a.rank, a.element_count, a.byte_length) == (2, 6, 24)


def test_limits_and_data_types_are_frozen_values():
    assert TensorLimits(("int8",)) == TensorLimits(("int8",), 0, 8) != TensorLimits(("int8",), 1)
    assert hash(TensorLimits(("int8",), 1, 4)) == hash(TensorLimits(data_types=("int8",), min_rank=1, max_rank=4))
    assert TensorLimits(("int8",)).rank(2) == TensorLimits(("int8",), 2, 2)
    assert repr(TensorLimits(("int8",), 1, 4)) == "TensorLimits(data_types=('int8',), min_rank=1, max_rank=4)"
    with pytest.raises(AttributeError):
        TensorLimits(("int8",)).min_rank = 2
    assert DATA_TYPES["float16"] == DataType("float16", np.dtype(np.float16), "Float16Array")
    assert DATA_TYPES["int64"].byte_size == 8 and DATA_TYPES["float16"].is_float
    with pytest.raises(TypeError):          # the limits dict makes an operator's entry unhashable, as before
        hash(OPERATORS["add"])
    assert OPERATORS["add"] == OPERATORS["add"]


def test_frozen_values_copy_and_pickle_as_dataclasses_did():
    for value in (OperandDescriptor("int8", (4,)), TensorLimits(("int8",), 1, 4), DATA_TYPES["uint32"]):
        for clone in (copy.copy(value), copy.deepcopy(value), pickle.loads(pickle.dumps(value))):
            assert clone == value and type(clone) is type(value) and hash(clone) == hash(value)
