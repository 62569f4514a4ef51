"""The WebNN interfaces (§8): ML, MLContext, MLGraphBuilder, MLOperand, MLGraph, MLTensor."""
from .ml import ML  # noqa: F401
from .context import MLContext  # noqa: F401
from .tensor import MLTensor  # noqa: F401
from .graph import MLGraph  # noqa: F401
from .operand import MLOperand  # noqa: F401
from .builder import MLGraphBuilder  # noqa: F401
