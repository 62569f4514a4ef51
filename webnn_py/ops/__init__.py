"""Operators: one module per family, each with its validation (shape and data
type inference, pure and shared by the builder and the model loaders) beside
its numpy kernel, registered in one table (registry.py)."""
from .registry import OPERATORS, BuildContext, OperatorKind, TensorLimits, operator_kind  # noqa: F401
from . import elementwise_binary  # noqa: F401  (each module registers its operators)
