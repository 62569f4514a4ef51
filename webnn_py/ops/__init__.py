"""Operators: one module per family, each with its validation (shape and data
type inference, pure and shared by the builder and the model loaders) beside
its numpy kernel, registered in one table (registry.py).

Every module of this package other than the infrastructure (registry, broadcast)
is an operator family, named in FAMILIES; importing the package imports them all,
in this order, which registers their operators (and orders opSupportLimits()).
Named rather than listed from the folder with pkgutil, whose import every page's
boot paid (tests/ops/test_registry.py checks the list against the folder).
"""
import importlib

from .registry import OPERATORS, BuildContext, OperatorKind, TensorLimits, operator_kind  # noqa: F401

FAMILIES = ("activations", "cast", "convolution", "elementwise_binary", "elementwise_unary", "gather_scatter",
            "logical", "loop", "matmul", "normalization", "pad", "pooling", "quantization", "recurrent",
            "reduction", "resample", "reshaping")

for _module in FAMILIES:
    importlib.import_module(f"{__name__}.{_module}")
