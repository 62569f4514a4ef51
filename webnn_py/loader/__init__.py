"""The Model Loader API (MLModelLoader, MLModel) and its format importers.

Importers translate a model file into ordinary MLGraphBuilder calls, so a
loaded model goes through the same validation and runtime as a hand-built
graph. Imports point one way: loader uses api, api never imports loader."""
from .api import MLModel, MLModelLoader  # noqa: F401
