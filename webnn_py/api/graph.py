"""The MLGraph interface (§8.4)."""
from __future__ import annotations

from .idl import operation, register_interface


class MLGraph:
    def __init__(self, context, input_descriptors: dict, output_descriptors: dict):
        self._context = context
        self._input_descriptors = input_descriptors     # name -> OperandDescriptor
        self._output_descriptors = output_descriptors
        self._implementation = None                     # runtime.plan.ExecutionPlan, set on the timeline
        self._is_destroyed = False
        self._dispatch_bindings = ()        # MLContext's last validated dispatch() bindings

    @operation("MLGraph")
    def destroy(self) -> None:
        """§8.4.1 destroy()."""
        if self._is_destroyed:
            return
        self._is_destroyed = True
        self._dispatch_bindings = ()        # the tensors they hold

        def release():
            self._implementation = None
        self._context._timeline.enqueue(release, release)


register_interface("MLGraph", MLGraph)
