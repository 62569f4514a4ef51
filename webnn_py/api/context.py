"""The MLContext interface (§8.3)."""
from __future__ import annotations

import logging
import sys
import weakref

import numpy as np

from ..base.descriptor import OperandDescriptor, check_dimensions
from ..base.errors import InvalidStateError, OperationError, UnknownError, out_of_memory
from ..bindings import host_buffer_source
from ..ops.registry import support_limits
from ..runtime.timeline import NOT_RUN, Timeline, new_future, queue_ml_task
from .buffers import copy_of_bytes, validate_buffer_with_descriptor, write_bytes_into
from .graph import MLGraph
from .idl import operation, register_interface, rejected
from .tensor import MLTensor


_log = logging.getLogger("webnn_py")


# -- the per-run calls' fast conversions (api/idl.py, `fast=`) -----------------------------------
# Each returns what convert_arguments() returns for its operation -- (overload index, converted
# arguments) -- when the arguments are exactly the plain Python types whose WebIDL conversion
# gives them back as they are, else None: the generic conversion then runs, with its errors.

def _plain_named_tensors(record) -> bool:
    """Is `record` a plain dict of str keys and MLTensor values (exact types), whose
    MLNamedTensors (record<USVString, MLTensor>) conversion is an equal dict? ASCII keys
    only: a USVString conversion replaces lone surrogates, which other strings may hold."""
    if type(record) is not dict:
        return False
    for key, value in record.items():
        if type(key) is not str or type(value) is not MLTensor or not key.isascii():
            return False
    return True


def _plain_dispatch_arguments(args: tuple) -> tuple | None:
    """dispatch(graph, inputs, outputs). The caller's dicts are handed on as they are, not
    copied: the steps read them before dispatch() returns and queue copies (_dispatch)."""
    if len(args) == 3:
        graph, inputs, outputs = args
        if type(graph) is MLGraph and _plain_named_tensors(inputs) and _plain_named_tensors(outputs):
            return 0, args
    return None


def _plain_write_arguments(args: tuple) -> tuple | None:
    """writeTensor(tensor, inputData)."""
    if len(args) == 2 and type(args[0]) is MLTensor:
        buffer = host_buffer_source(args[1])
        if buffer is not None:
            return 0, (args[0], buffer)
    return None


def _plain_read_arguments(args: tuple) -> tuple | None:
    """readTensor(tensor) (overload 0) and readTensor(tensor, outputData) (overload 1)."""
    if not 1 <= len(args) <= 2 or type(args[0]) is not MLTensor:
        return None
    if len(args) == 1:
        return 0, args
    buffer = host_buffer_source(args[1])
    return None if buffer is None else (1, (args[0], buffer))


class MLContext:
    @classmethod
    def _create(cls, options: dict) -> "MLContext":
        """§8.2.2 "create a context" for MLContextOptions."""
        return cls(options.get("powerPreference", "default"), options.get("accelerated", True))

    def __init__(self, power_preference: str, accelerated: bool):
        self._context_type = "default"
        self._power_preference = power_preference
        # This implementation computes on the CPU only, whatever was asked for.
        self._accelerated = False
        self._lost = new_future()
        self._timeline = Timeline()
        self._graphs: weakref.WeakSet = weakref.WeakSet()
        self._tensors: weakref.WeakSet = weakref.WeakSet()

    # -- attributes ---------------------------------------------------------------------------

    @property
    def accelerated(self) -> bool:
        return self._accelerated

    @property
    def lost(self):
        return self._lost

    @property
    def _is_lost(self) -> bool:
        """§8.3.9: a context is lost when its [[lost]] promise is settled."""
        return self._lost.done()

    # -- dispatch -----------------------------------------------------------------------------

    @operation("MLContext", fast=_plain_dispatch_arguments)
    def dispatch(self, graph: MLGraph, inputs: dict, outputs: dict) -> None:
        """§8.3.1 dispatch(graph, inputs, outputs)."""
        self._dispatch(graph, inputs, outputs)

    def _dispatch(self, graph: MLGraph, inputs: dict, outputs: dict) -> None:
        """§8.3.1's steps for arguments already converted (by dispatch()'s WebIDL conversion,
        or by the browser bridge's: _dispatch_records)."""
        for binding in graph._dispatch_bindings:
            if (binding.context is self and binding.key is None and binding.inputs == inputs
                    and binding.outputs == outputs):
                _check_bound(graph, binding)
                break
        else:
            binding = self._bind(graph, inputs, outputs, None)
        self._enqueue_bound(graph, binding, None)

    def _dispatch_records(self, graph: MLGraph, input_count: int, pairs: tuple) -> None:
        """_dispatch() for records the browser shim read (bridge.dispatch): `pairs` holds
        `input_count` name, tensor pairs of inputs, then those of outputs, a later duplicate
        name replacing an earlier one as in a converted record. A page binds the same tensors
        to a graph every frame (or a few sets in turn): when `pairs` is a remembered binding's,
        no dict is built."""
        key = (input_count, pairs)
        for binding in graph._dispatch_bindings:
            if binding.context is self and binding.key == key:
                _check_bound(graph, binding)
                break
        else:
            n = 2 * input_count
            inputs = dict(zip(pairs[0:n:2], pairs[1:n:2]))
            outputs = dict(zip(pairs[n::2], pairs[n + 1::2]))
            binding = self._bind(graph, inputs, outputs, key)
        self._enqueue_bound(graph, binding, None)

    def _bind(self, graph: MLGraph, inputs: dict, outputs: dict, key) -> "_DispatchBinding":
        """§8.3.1 steps 1-7 in full; what passed is remembered on the graph (_DispatchBinding)."""
        if graph._context is not self:
            raise TypeError("dispatch: the graph belongs to another context")
        if graph._is_destroyed:
            raise InvalidStateError("dispatch: the graph has been destroyed")
        all_tensors = list(inputs.values()) + list(outputs.values())
        if len({id(t) for t in all_tensors}) != len(all_tensors):
            raise TypeError("dispatch: the same MLTensor is bound more than once")
        for tensor in all_tensors:
            if tensor._context is not self:
                raise TypeError("dispatch: a tensor belongs to another context")
            if tensor._is_destroyed:
                raise TypeError("dispatch: a tensor has been destroyed")
        _validate_tensors_with_descriptors("inputs", inputs, graph._input_descriptors)
        _validate_tensors_with_descriptors("outputs", outputs, graph._output_descriptors)
        binding = _DispatchBinding(self, key, dict(inputs), dict(outputs))
        graph._dispatch_bindings = (binding, *graph._dispatch_bindings[:KEPT_BINDINGS - 1])
        return binding

    def _enqueue_dispatch(self, graph: MLGraph, inputs: dict, outputs: dict, on_failure=None) -> None:
        """§8.3.1 step 8, for arguments already validated (MLModel.compute())."""
        self._enqueue_bound(graph, _DispatchBinding(self, None, inputs, outputs), on_failure)

    def _enqueue_bound(self, graph: MLGraph, binding: "_DispatchBinding", on_failure) -> None:
        """§8.3.1 step 8 for a validated binding.

        The step is a generator walking the plan (ExecutionPlan.execute_iter), so the
        timeline can suspend it between operations and loop iterations and keep the
        page responsive (runtime/timeline.py). While it is suspended nothing else on
        the timeline runs: a writeTensor(), destroy() or dispatch() made meanwhile is
        queued behind it, and the input arrays it took at its start are never written
        in place (writeTensor replaces a tensor's array), so they cannot change under
        it. "Abort when this is lost" (step 8.1): losing the context closes the
        generator, and no output is written. `on_failure(exc)` is told of a failure.
        """
        input_items, output_items = binding.input_items, binding.output_items

        def run():
            plan = graph._implementation
            if plan is None:
                return
            feeds = _data_of(input_items)
            # The output tensors' [[data]], written in place once the plan has run (nothing
            # queued behind this step -- a writeTensor() or destroy() of them -- runs before).
            into = _data_of(output_items)
            if feeds is None or into is None:
                return
            try:
                try:
                    yield from plan.execute_iter(feeds, into=into)
                except MemoryError:
                    # Logged like any dispatch failure (issue #778), by name, without a trace.
                    raise OperationError("dispatch: out of memory while computing the graph (its intermediates "
                                         "need more than this platform can allocate now)") from None
            except Exception as exc:  # noqa: BLE001
                # The spec has no way to report dispatch errors yet (issue #778):
                # outputs keep their previous contents and nothing else is
                # touched. Log it, so that it is not silent (the browser bridge
                # shows it in the console; the tests fail on it) -- unless the
                # caller is told (MLModel.compute() rejects with it).
                if on_failure is not None:
                    on_failure(exc)
                else:
                    _log.exception("dispatch failed; the output tensors were left unchanged")
                return

        self._timeline.enqueue(run, start=True)

    # -- tensors ------------------------------------------------------------------------------

    @operation("MLContext", promise=True)
    def createTensor(self, descriptor: dict):
        """§8.3.2 createTensor(descriptor)."""
        if self._is_lost:
            return rejected(InvalidStateError("createTensor: the context is lost"))
        desc = OperandDescriptor.from_dict(descriptor)
        problem = check_dimensions(desc)
        if problem:
            # Not in the spec's steps, but [[data]] cannot be created for such a
            # descriptor, and WebNN implementations reject it up front.
            return rejected(TypeError(f"createTensor: {problem}"))
        tensor = MLTensor(self, desc, descriptor.get("readable", False), descriptor.get("writable", False), False)
        self._tensors.add(tensor)
        promise = new_future()

        def run():
            try:
                tensor._allocate()
            except MemoryError:       # §8.3.2 step 6.1.2
                _settle(promise, exc=out_of_memory("createTensor", desc.byte_length, f"[[data]] of {desc}"))
                return
            _settle(promise, tensor)

        self._timeline.enqueue(run, lambda: _settle(promise, exc=InvalidStateError("createTensor: the context is lost")))
        return promise

    @operation("MLContext", promise=True)
    def createConstantTensor(self, descriptor: dict, input_data):
        """§8.3.3 createConstantTensor(descriptor, inputData)."""
        if self._is_lost:
            return rejected(InvalidStateError("createConstantTensor: the context is lost"))
        desc = OperandDescriptor.from_dict(descriptor)
        problem = check_dimensions(desc)
        if problem:
            return rejected(TypeError(f"createConstantTensor: {problem}"))
        problem = validate_buffer_with_descriptor(input_data, desc)
        if problem:
            return rejected(TypeError(f"createConstantTensor: {problem}"))
        data = copy_of_bytes(input_data, desc, "createConstantTensor")
        tensor = MLTensor(self, desc, False, False, True)
        self._tensors.add(tensor)
        promise = new_future()

        def run():
            tensor._data = data
            _settle(promise, tensor)

        self._timeline.enqueue(run, lambda: _settle(promise, exc=InvalidStateError("createConstantTensor: the context is lost")))
        return promise

    @operation("MLContext", promise=True, overloaded=True, fast=_plain_read_arguments)
    def readTensor(self, overload: int, tensor: MLTensor, output_data=None):
        """§8.3.4 readTensor(tensor) and §8.3.5 readTensor(tensor, outputData)."""
        promise = new_future()
        self._read_tensor(promise, tensor, output_data if overload == 1 else None)
        return promise

    def _read_tensor(self, promise, tensor: MLTensor, output_data=None, copy_out=None) -> None:
        """readTensor()'s steps for arguments already converted: §8.3.5 when `output_data`
        (a BufferSource) is given, else §8.3.4. `promise` is settled through done(),
        set_result() and set_exception() (an asyncio future, or the browser bridge's
        stand-in for the page's own promise). `copy_out(array)`: §8.3.4's copy of
        [[data]], the promise's value (by default a bytearray; the bridge makes the
        page's ArrayBuffer straight from the array); MemoryError when it cannot be had."""
        problem = _unusable(self, tensor, "readTensor", tensor._readable, "readable")
        if problem is None and output_data is not None:
            problem = validate_buffer_with_descriptor(output_data, tensor._descriptor, "readTensor(tensor, outputData)")
            if problem:
                problem = TypeError(f"readTensor: {problem}")
        if problem is not None:
            _settle(promise, exc=problem)
            return
        tensor._pending_promises.add(promise)

        def in_ml_task(steps):
            # §8.3.4 step 8.1.2-8.1.3 / §8.3.5 step 9.1.2-9.1.3: an ML task removes the promise from
            # [[pendingPromises]] and settles it (and fills outputData), so a destroy() of
            # the tensor (or its context), or a detach of outputData, before that task is seen
            # (§8.8.2 step 2). On the host the task is a later callback of the event loop (or
            # the caller's await: runtime/timeline.py), as for the bridge's promise of a read
            # into outputData; readTensor(tensor) in the page runs at once when it can
            # (_read_tensor_at_once).
            def task():
                tensor._pending_promises.discard(promise)
                steps()
            queue_ml_task(promise, task)

        def settle(value=None, exc=None):
            in_ml_task(lambda: _settle(promise, value, exc))

        def run():
            try:
                data = _copy_of_data(tensor, copy_out or _bytearray_copy) if output_data is None else \
                    _copy_of_data(tensor, np.copy)
            except Exception as exc:  # noqa: BLE001 - the rejection, made by _copy_of_data
                settle(exc=exc)
                return
            if output_data is None:
                settle(data)
                return

            def write_into_output_data():
                try:
                    write_bytes_into(output_data, data)
                except TypeError as exc:     # detached since the call (§8.3.5 step 9.1.3.2)
                    _settle(promise, exc=exc)
                    return
                _settle(promise, None)
            in_ml_task(write_into_output_data)

        def abort():
            tensor._pending_promises.discard(promise)
            _settle(promise, exc=InvalidStateError("readTensor: the context is lost"))

        # Started at once when nothing is queued ahead (runtime/timeline.py): the copy is
        # then made before this returns, and the page's await needs no task of ours.
        self._timeline.enqueue(run, abort, start=True)

    def _read_tensor_at_once(self, tensor: MLTensor, copy_out):
        """§8.3.4 readTensor(tensor) in the page when its timeline step can run in the call
        (an idle timeline: Timeline.run_at_once): steps 3-5's TypeErrors and step 8.1.1's
        copy of [[data]] (`copy_out(array)`, the page's ArrayBuffer) or its failure are raised
        or returned here, NOT_RUN when the step must wait for the timeline (the caller then
        takes _read_tensor). The promise is the browser shim's: it settles it one microtask
        later, rejecting it instead if a destroy() came in between (§8.8.2 step 2; js_shim,
        TENSOR_LANES.readTensor), as the ML task of step 8.1.3 would; nothing else of the
        page runs between the copy and that microtask, so [[pendingPromises]] is not needed."""
        problem = _unusable(self, tensor, "readTensor", tensor._readable, "readable")
        if problem is not None:
            raise problem
        return self._timeline.run_at_once(_copy_of_data, tensor, copy_out)

    @operation("MLContext", fast=_plain_write_arguments)
    def writeTensor(self, tensor: MLTensor, input_data) -> None:
        """§8.3.6 writeTensor(tensor, inputData)."""
        self._write_tensor(tensor, input_data)

    def _write_tensor(self, tensor: MLTensor, input_data) -> None:
        """§8.3.6's steps for arguments already converted (`input_data`: a BufferSource)."""
        problem = _unusable(self, tensor, "writeTensor", tensor._writable, "writable")
        if problem is not None:
            raise problem
        # §8.3.6 step 4, "validate buffer with descriptor": in full unless the byte length is
        # right and the buffer is no view or a view of the tensor's own type or Uint8Array.
        if input_data.byte_length != tensor._byte_length or (
                input_data.is_view and input_data.element_type not in tensor._plain_views):
            problem = validate_buffer_with_descriptor(input_data, tensor._descriptor, "writeTensor(tensor, inputData)")
            if problem:
                raise TypeError(f"writeTensor: {problem}")
        data = copy_of_bytes(input_data, tensor._descriptor, "writeTensor")
        # Step 7's timeline step replaces [[data]] (never writes into it: a suspended dispatch
        # keeps the arrays it started with), a step of constant cost: at once when it can be.
        if self._timeline.run_at_once(_replace_data, tensor, data) is NOT_RUN:
            self._timeline.enqueue(lambda: _replace_data(tensor, data), start=True)

    # -- the rest -----------------------------------------------------------------------------

    @operation("MLContext")
    def opSupportLimits(self) -> dict:
        """§8.3.7 opSupportLimits()."""
        return support_limits()

    @operation("MLContext")
    def destroy(self) -> None:
        """§8.3.8 destroy()."""
        if self._is_lost:
            return
        self._lose("destroy() was called")

    def _lose(self, message: str) -> None:
        """§8.3.9 "lose" the context."""
        self._lost.set_result({"message": message})
        for graph in list(self._graphs):
            graph.destroy()
        for tensor in list(self._tensors):
            tensor.destroy()
        self._timeline.abort_all()

    def _compile(self, graph: MLGraph, build_plan, promise) -> None:
        """§8.9.4 build() step 18, run on this context's timeline."""
        self._graphs.add(graph)

        def run():
            try:
                plan = build_plan()
                _check_fits_in_memory(plan, graph)
            except Exception as exc:  # noqa: BLE001
                # Step 18.2: the conversion failed.
                _settle(promise, exc=OperationError(f"build: compiling the graph failed: {exc}"))
                return
            graph._implementation = plan
            _settle(promise, graph)

        self._timeline.enqueue(run, lambda: _settle(promise, exc=InvalidStateError("build: the context is lost")))


# The bytes one dispatch can address: wasm32 (Pyodide) has a 4 GiB linear memory for
# everything (Python, numpy, the tensors); a 64-bit host has no such wall.
ADDRESS_SPACE_BYTES = 2**32 if sys.maxsize < 2**32 else None


def _check_fits_in_memory(plan, graph: MLGraph) -> None:
    """§8.9.4 step 18.1 on this platform: a graph whose dispatch needs more memory
    than the address space has (inputs, outputs, constants and the largest set of
    intermediates alive at once, from the plan's steps) cannot be converted into
    something that runs, so build() fails with OperationError rather than every
    dispatch failing later. It is a lower bound (kernels need scratch space too),
    so a graph it rejects can never run here; one it accepts still may not."""
    if ADDRESS_SPACE_BYTES is None:
        return
    needed = _dispatch_memory_lower_bound(plan, graph)
    if needed > ADDRESS_SPACE_BYTES:
        raise MemoryError(f"one dispatch needs at least {needed:,} bytes (inputs, outputs, constants and the "
                          f"intermediates alive at once), more than this platform's {ADDRESS_SPACE_BYTES:,}-byte "
                          "wasm32 address space")


def _dispatch_memory_lower_bound(plan, graph: MLGraph) -> int:
    steps = plan.steps
    final = len(steps)
    last_use: dict[int, int] = {slot: final for slot in plan.output_slots.values()}
    for index, step in enumerate(steps):
        for slot in step.input_slots:
            if slot >= 0:
                last_use[slot] = max(last_use.get(slot, -1), index)
    persistent = set(plan.constants) | set(plan.input_slots.values())
    freed_after: dict[int, list[int]] = {}
    for slot, index in last_use.items():
        if slot not in persistent and index < final:
            freed_after.setdefault(index, []).append(slot)
    sizes: dict[int, int] = {}
    tensors = sum(d.byte_length for d in graph._input_descriptors.values())
    tensors += sum(d.byte_length for d in graph._output_descriptors.values())
    live = tensors + sum(int(a.nbytes) for a in plan.constants.values())
    peak = live
    for index, step in enumerate(steps):
        created = [(slot, desc.byte_length) for slot, desc in zip(step.output_slots, step.output_descriptors)
                   if slot not in persistent]
        live += sum(size for _, size in created)
        peak = max(peak, live)
        # Results nobody reads later die now; the others when their last reader has run.
        live -= sum(size for slot, size in created if last_use.get(slot, index) <= index)
        for slot in freed_after.get(index, ()):
            live -= sizes.get(slot, 0)
        for slot, size in created:
            sizes[slot] = size
    return peak


# How many validated bindings a graph remembers (the newest first). ORT-web's WebNN EP hands
# dispatch() a model's same-shaped tensors in turn (its tensor manager reuses whichever was
# released first: the add model's two inputs and output rotate through three bindings), and
# a page may double-buffer its frames; with one remembered binding each of those dispatches
# took §8.3.1's full steps: add's session.run() took 0.125-0.145 ms in a loop, its dispatch()
# 0.074 ms, against 0.090-0.100 and 0.037 with the rotation remembered (headless Chromium, one
# page). A binding holds its tensors, so the number is small.
KEPT_BINDINGS = 4


class _DispatchBinding:
    """A graph's validated dispatch() binding: the context, the records (and the
    bridge's flat `key` of them, or None), each a copy of its own. What §8.3.1 steps 1-7
    check depends on the graph and the tensors bound, which never change (a tensor's
    context, descriptor and constness; the graph's context and descriptors), except two
    flags: whether the graph and whether a tensor has been destroyed. So a dispatch()
    with the same tensors under the same names checks only those (_check_bound)."""

    __slots__ = ("context", "key", "inputs", "outputs", "input_items", "output_items", "tensors")

    def __init__(self, context: MLContext, key, inputs: dict, outputs: dict):
        self.context, self.key, self.inputs, self.outputs = context, key, inputs, outputs
        self.input_items = tuple(inputs.items())
        self.output_items = tuple(outputs.items())
        self.tensors = tuple(inputs.values()) + tuple(outputs.values())


def _check_bound(graph: MLGraph, binding: _DispatchBinding) -> None:
    """§8.3.1 steps 1-7 for a binding that passed them before (MLContext._bind): the
    destroyed flags, with the messages the full steps give."""
    if graph._is_destroyed:
        raise InvalidStateError("dispatch: the graph has been destroyed")
    for tensor in binding.tensors:
        if tensor._is_destroyed:
            raise TypeError("dispatch: a tensor has been destroyed")


def _validate_tensors_with_descriptors(what: str, named_tensors: dict, descriptors: dict) -> None:
    """§8.3 "validate tensors with descriptors", failing with a message that says why."""
    if len(named_tensors) != len(descriptors):
        raise TypeError(f"dispatch: {what} has {len(named_tensors)} tensors, the graph has {len(descriptors)} "
                        f"({', '.join(sorted(descriptors))})")
    for name, tensor in named_tensors.items():
        if tensor._is_constant:
            raise TypeError(f"dispatch: {what}[{name!r}] is a constant tensor")
        if name not in descriptors:
            raise TypeError(f"dispatch: the graph has no {what[:-1]} named {name!r}")
        if tensor._descriptor != descriptors[name]:
            raise TypeError(f"dispatch: {what}[{name!r}] is {tensor._descriptor}, the graph expects {descriptors[name]}")


def _data_of(named_tensors) -> dict | None:
    """name -> each tensor's [[data]], or None when one of them has been destroyed."""
    arrays = {}
    for name, tensor in named_tensors:
        data = tensor._data
        if data is None:
            return None
        arrays[name] = data
    return arrays


def _unusable(context: MLContext, tensor: MLTensor, method: str, allowed: bool, access: str) -> TypeError | None:
    """readTensor's (§8.3.4 / §8.3.5 steps 3-5) or writeTensor's (§8.3.6 steps 1-3) checks of
    `tensor`: why `method` cannot use it (`allowed`: its descriptor's `access`, readable or
    writable), or None."""
    if tensor._context is not context:
        return TypeError(f"{method}: the tensor belongs to another context")
    if tensor._is_destroyed:
        return TypeError(f"{method}: the tensor has been destroyed")
    if not allowed:
        return TypeError(f"{method}: the tensor is not {access}")
    return None


def _copy_of_data(tensor: MLTensor, copy):
    """readTensor's timeline step (§8.3.4 step 8.1.1, §8.3.5 step 9.1.1): `copy(tensor._data)`,
    a copy of [[data]]; raises the promise's rejection when there is none: InvalidStateError
    for a tensor destroyed since the call, UnknownError when the copy cannot be allocated
    (step 8.1.2 / 9.1.2), OperationError (logged) for a failure of any other kind (a bug of ours)."""
    data = tensor._data
    if data is None:
        raise InvalidStateError("readTensor: the tensor was destroyed")
    try:
        return copy(data)
    except MemoryError:
        raise out_of_memory("readTensor", tensor._descriptor.byte_length, f"the copy of {tensor._descriptor}") from None
    except Exception as exc:  # noqa: BLE001 - a bug of ours: logged, and the promise still settles
        _log.exception("readTensor: the copy of [[data]] failed")
        raise OperationError(f"readTensor: the copy of {tensor._descriptor} failed ({type(exc).__name__})") from None


def _replace_data(tensor: MLTensor, data: np.ndarray) -> None:
    """writeTensor's timeline step (§8.3.6 step 7.1.1): [[data]] becomes the copy of inputData,
    unless the tensor was destroyed meanwhile."""
    if tensor._data is not None:
        tensor._data = data


def _bytearray_copy(array: np.ndarray) -> bytearray:
    if array.flags.c_contiguous:
        return bytearray(memoryview(array).cast("B"))      # one copy, no zero-filling first
    out = bytearray(array.nbytes)
    np.frombuffer(out, dtype=array.dtype)[:] = array.reshape(-1)
    return out


def _settle(future, value=None, exc: BaseException | None = None) -> None:
    if future.done():
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(value)


register_interface("MLContext", MLContext)
