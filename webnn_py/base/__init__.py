"""Shared foundations: error types, data types and operand descriptors.

Every other layer (bindings aside) may import from here; nothing here imports
from the rest of webnn_py, so `ops` can validate without depending on `api`.
"""
