"""Operators: one module per family, each with its validation (shape and data
type inference, pure and shared by the builder and the model loaders) beside
its numpy kernel. Importing this package registers every family."""
from .registry import OPERATORS, OperatorKind, operator_kind  # noqa: F401
from . import elementwise_binary  # noqa: F401  (registers its operators)
