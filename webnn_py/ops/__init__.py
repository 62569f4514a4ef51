"""Operators: one module per family, each with its validation (shape and data
type inference, pure and shared by the builder and the model loaders) beside
its numpy kernel, registered in one table (registry.py).

Every module of this package other than the infrastructure below is an
operator family; importing the package imports them all, which registers
their operators.
"""
import importlib
import pkgutil

from .registry import OPERATORS, BuildContext, OperatorKind, TensorLimits, operator_kind  # noqa: F401

_INFRASTRUCTURE = {"registry", "broadcast"}

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _module not in _INFRASTRUCTURE and not _module.startswith("_"):
        importlib.import_module(f"{__name__}.{_module}")
