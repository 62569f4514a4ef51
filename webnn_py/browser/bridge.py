"""The Python side of the JS shim (js_shim/webnn-polyfill.js).

The shim stays thin: it owns the interface objects, prototype chains and
brand checks, and forwards every member access here as
`invoke(target, member, args)`. Arguments arrive as raw JS values, and the
generated WebIDL conversions (webnn_py.bindings) convert them exactly as a
native binding would.

Results go back as JS values; API objects (MLContext, MLOperand, ...) as
PyProxies that the shim wraps. A failure comes back as a `BridgeFailure` carrying
the error's name and message instead of being raised, because a Python
exception that crosses into JavaScript loses its class (it becomes a generic
PythonError whose message is a traceback).
"""
from __future__ import annotations

import asyncio
import collections
import logging
import traceback

import js  # Pyodide's view of the JS global scope
import numpy as np
import pyodide_js  # the runtime's JS API object (its _module: Emscripten's, with the heap)
from pyodide.code import run_js
from pyodide.ffi import JsException, JsProxy, create_proxy, to_js

from .. import api
from ..api import buffers
from ..base.errors import DOMException, NotSupportedError, UnknownError, describe, error_name, out_of_memory
from ..bindings import (BufferSource, ScriptException, convert, convert_arguments, parse_type, script_arguments,
                        set_platform_object_unwrapper)
from ..kernels import address_of
from ..runtime.timeline import NOT_RUN, PromiseFuture, Timeline, set_post_task, set_turn_words
from .tensor_memory import TURN_WORDS, record_of, turn_word_index

ml = api.ML()


_box = run_js("(value) => ({ value })")
# One call each, instead of a crossing per global, constructor and method (the built-ins they
# name are the page's pristine ones: the shim puts those back while Python works).
# `n` bytes of Pyodide's memory from `address`, in a new ArrayBuffer (the heap's view is
# read at each call: growing the memory replaces it).
_copy_out = run_js("(module) => (address, n) => { const out = new Uint8Array(n); "
                   "out.set(new Uint8Array(module.HEAPU8.buffer, address, n)); return out.buffer; }")(pyodide_js._module)
# The constructor float16 results are made with: the engine's Float16Array as the shim
# captured it at load (install()), or, where the engine has none, Uint16Array (raw bits,
# as §12.1's note allows). Pyodide 0.27 can neither convert a float16 buffer nor hold a
# Float16Array (both throw), so the view is made and stored in JS: `_put_view` sets
# root[path[0]]...[path[n]] = new View(buffer), and Python never receives it.
_float16_view = js.Uint16Array
_put_view = run_js("(root, path, View, buffer) => { let target = root; const last = path.length - 1; "
                   "for (let i = 0; i < last; i++) target = target[path[i]]; target[path[last]] = new View(buffer); }")


class BridgeFailure:
    """What a failed call returns to the shim, which throws the matching JS error --
    or, when page script threw during the call (a getter, a Proxy trap, an iterator,
    valueOf/toString run by a WebIDL conversion), `thrown`: a JS object whose `value`
    is exactly what it threw, which the shim rethrows as it is (WebIDL's "?")."""

    def __init__(self, exc: BaseException):
        self.thrown = None
        if isinstance(exc, ScriptException):
            self.thrown = exc.box
        elif isinstance(exc, JsException):
            # A JS call outside the conversions' helpers threw (the shim's unwrapping of
            # a Proxy, say): page code too. Pyodide keeps Error objects as they are.
            self.thrown = _box(exc)
        if self.thrown is not None:
            self.name, self.message = "", "an exception thrown by page script"
            return
        if isinstance(exc, MemoryError):
            # An allocation the API's steps do not check themselves: still WebNN's error for
            # memory that cannot be had (base.errors.out_of_memory), not "a bug of ours".
            exc = UnknownError(describe("webnn-py", "", f"out of memory: {exc or 'an allocation failed'}"))
        self.name = error_name(exc)
        self.message = str(exc)
        if self.name == "OperationError" and not isinstance(exc, DOMException):
            # Not a WebNN error but a bug of ours: say what it was, and log the trace.
            self.message = describe("webnn-py", "", f"internal error {type(exc).__name__}: {exc}")
            js.console.error("".join(traceback.format_exception(exc)))


class _ConsoleHandler(logging.Handler):
    """webnn_py's log (dispatch failures, which the spec cannot report yet: its
    issue #778) as console.error lines naming the error, e.g.
    "webnn-py: dispatch failed; ...: OperationError: [label] loop: ..."."""

    def emit(self, record: logging.LogRecord) -> None:
        message = f"webnn-py: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            message += f": {error_name(exc)}: {exc}"
            if not isinstance(exc, DOMException):     # a bug of ours: the trace helps
                message += "\n" + "".join(traceback.format_exception(exc))
        if record.levelno >= logging.ERROR:
            js.console.error(message)
        else:
            js.console.warn(message)


def install(unwrap_platform_object, time_slice_ms=8, post_task=None, strict_buffer_types=False,
            float16_array=None, platform_proxy_of=None) -> int:
    """Called once by the shim with a JS function giving the Python object behind
    one of its wrappers (or undefined), which the WebIDL conversions then use, and
    the time slice of cooperative dispatch (README "Responsiveness"): a dispatch
    hands the thread back to the page after this many milliseconds of work
    (null/undefined or <= 0: never, the whole dispatch runs in one task), and the
    page's `strictBufferTypes` option (buffers.strict_view_types), read by the shim with
    the rest of its configuration, and the constructor of float16 results (the engine's
    Float16Array captured at load, or Uint16Array where it has none), and a JS function
    giving the PyProxy behind a wrapper of a given interface (records of them are read in
    one crossing: bindings.set_platform_object_unwrapper). Returns the index in the heap's
    Uint32Array of the timelines' turn words, which the shim answers from now on
    (tensor_memory.TURN_WORDS; runtime/timeline.py, set_turn_words)."""
    global _float16_view
    set_platform_object_unwrapper(unwrap_platform_object, platform_proxy_of)
    if float16_array is not None:
        _float16_view = float16_array
    Timeline.slice_seconds = time_slice_ms / 1000 if time_slice_ms and time_slice_ms > 0 else None
    buffers.strict_view_types = strict_buffer_types is True
    if post_task is not None:
        set_post_task(_TaskPoster(post_task))
    logger = logging.getLogger("webnn_py")
    if not any(isinstance(h, _ConsoleHandler) for h in logger.handlers):
        logger.addHandler(_ConsoleHandler(logging.WARNING))
        logger.propagate = False
    set_turn_words(TURN_WORDS)
    return turn_word_index()


class _TaskPoster:
    """Runs Python callbacks in later tasks through the page's scheduler (the shim's
    postTask), all through ONE persistent JS callable: a timeline posts a task every
    turn (Timeline._schedule), and a callable made per task (create_once_callable) cost
    ~1.3 µs of each per-run call in Pyodide. The scheduler runs tasks of one priority in
    the order they were posted, so the n-th task runs the n-th callback; either way each
    callback runs in a task of its own, later than the one that posted it."""

    def __init__(self, post_task) -> None:
        self._post_task = post_task
        self._callbacks: collections.deque = collections.deque()
        self._run_next = create_proxy(self._run_one)     # lives as long as the runtime

    def __call__(self, callback) -> None:
        self._post_task(self._run_next)
        self._callbacks.append(callback)        # after: a post that throws leaves no orphan

    def _run_one(self) -> None:
        if self._callbacks:
            self._callbacks.popleft()()


def construct(interface: str, args):
    # MLModelLoader lives in webnn_py.loader, which builds on api (never the reverse).
    # It is imported at its first construction, not at boot: its TFLite and OpenVINO
    # importers cost ~120 ms of the cold start (README "Benchmarks").
    def make():
        arguments = script_arguments(args)
        if hasattr(api, interface):
            return getattr(api, interface)(*arguments)
        from .. import loader
        return getattr(loader, interface)(*arguments)
    return _outcome(make)


def invoke(target, member: str, args, *spread):
    """`target.member(...)` with the page's arguments: `args`, a JS array of them, read
    so that a BigInt stays a BigInt (script_arguments: webnn_py.bindings.JsBigInt), or
    None, the arguments then being `spread`, converted by Pyodide one by one as a call's
    arguments are (no JS array to proxy, no helper to run). The shim passes them so
    when none is a BigInt, which would arrive as a plain int."""
    return _outcome(lambda: _member(target, member)(*(spread if args is None else script_arguments(args))))


def invoke_promise(resolve, from_python, target, member: str, args, *spread) -> None:
    """invoke() of a promise-returning operation, whose outcome settles the page's promise
    through `resolve` / `from_python` (settle()): a failure to call it rejects it."""
    outcome = invoke(target, member, args, *spread)
    if isinstance(outcome, BridgeFailure):
        from_python(outcome)
        return
    try:
        settle(outcome, resolve, from_python)
    except Exception as exc:  # noqa: BLE001 - not an awaitable: a bug of ours, reported as one
        from_python(BridgeFailure(exc))


# -- MLContext's tensor operations, the per-frame calls (issue 17 item 2) --------------------------
#
# The shim calls these instead of invoke() when the arguments a native binding converts
# without running page code are already known to be what WebIDL accepts: the context, the
# tensors and the graph are wrappers it has checked (the brand table), and dispatch()'s
# records it has read as the bindings read them (webnn-polyfill.js: readNamedTensors). What
# is left to convert is converted here, by the bindings, as the argument's type says; the
# API's own steps then run as they do after invoke()'s conversion. Anything else goes
# through invoke().

_BUFFER_SOURCE = parse_type("AllowSharedBufferSource")
_WRITE_DATA = "Failed to execute 'writeTensor' on 'MLContext': parameter 2 ('inputData')"
_READ_DATA = "Failed to execute 'readTensor' on 'MLContext': parameter 2 ('outputData')"


def dispatch(context, graph, input_count: int, *names_and_tensors):
    """context.dispatch(graph, inputs, outputs) with its records read by the shim:
    `input_count` name, tensor pairs of inputs, then those of outputs (names already
    USVStrings, later duplicates replacing earlier ones as in a converted record)."""
    try:
        context._dispatch_records(graph, input_count, names_and_tensors)
    except Exception as exc:  # noqa: BLE001 - as _outcome() reports it (nothing to convert on success)
        return BridgeFailure(exc)
    return None


def write_tensor(context, tensor, input_data):
    """context.writeTensor(tensor, inputData), `tensor` an MLTensor."""
    return _outcome(lambda: context._write_tensor(tensor, convert(input_data, _BUFFER_SOURCE, _WRITE_DATA)))


def write_tensor_bytes(context, tensor, data, byte_length: int, view_type: str, shared: bool):
    """context.writeTensor(tensor, inputData) for an inputData the shim found to be a typed array
    on a fixed-length buffer that is not detached (js_shim, fixedTypedArray): `data` a Uint8Array
    over exactly its `byte_length` bytes, `view_type` its type's name, `shared` whether its
    buffer is a SharedArrayBuffer. The BufferSource is the one the bindings' conversion makes of
    such a view (webidl.convert_buffer), without classifying it again."""
    try:
        context._write_tensor(tensor, BufferSource(data, byte_length, True, view_type, shared, u8=data))
    except Exception as exc:  # noqa: BLE001 - as _outcome() reports it (nothing to convert on success)
        return BridgeFailure(exc)
    return None


def read_tensor(context, tensor, *output_data):
    """context.readTensor(tensor) (no `output_data`) or readTensor(tensor, outputData), `tensor`
    an MLTensor. Returns its outcome when the promise is settled before this returns (the
    timeline was idle: runtime/timeline.py), as invoke() returns one -- the ArrayBuffer
    (copied from the tensor's memory in one step), None, or a BridgeFailure to reject with
    --, else the PendingPromise, which the shim hands its resolvers (hand_resolvers())."""
    if not output_data:
        # An idle timeline: the read's step runs here (no PendingPromise, no step closures).
        try:
            outcome = context._read_tensor_at_once(tensor, _array_buffer_of)
        except Exception as exc:  # noqa: BLE001 - the promise's rejection
            return BridgeFailure(exc)
        if outcome is not NOT_RUN:
            return outcome
    # readTensor(tensor, outputData)'s ML task (which fills outputData, or rejects if the page
    # detached it meanwhile, §8.3.5 step 9.1.3) runs in a later task, never within the call.
    promise = PendingPromise(asyncio.get_event_loop() if output_data else None)
    try:
        buffer = convert(output_data[0], _BUFFER_SOURCE, _READ_DATA) if output_data else None
        context._read_tensor(promise, tensor, buffer, copy_out=_array_buffer_of)
    except Exception as exc:  # noqa: BLE001 - a conversion error (or a bug of ours) rejects
        promise.set_exception(exc)
    return promise.outcome if promise.done() else promise


def tensor_memory(context, tensor):
    """What the shim needs to write and read `tensor` through `context` in Pyodide's memory
    itself, when the words there say it may (tensor_memory.py): a JS array [context slot's
    word, serial, tensor slot's word, serial, view type name], None: always ask Python, or 0:
    ask Python this time (a tensor of another context: its steps throw; the shim asks again
    at the tensor's next call, which may be through its own context)."""
    if tensor._context is not context:
        return 0
    try:
        record = record_of(context, tensor)
    except Exception:  # noqa: BLE001 - a bug of ours: logged, and the shim asks Python every time
        logging.getLogger("webnn_py").exception("tensor_memory failed")
        return None
    return None if record is None else to_js(record)


class PendingPromise:
    """The page's promise as the API's steps see one (done() / set_result() /
    set_exception(), settled at most once), before the shim has made it: the outcome
    is kept until hand_resolvers() gives it the shim's resolvers, and goes straight to them
    after that (no asyncio future, no listener in between). The shim makes the
    promise only for a read that did not settle in the call itself."""

    __slots__ = ("outcome", "_settlers", "_done", "_loop")

    def __init__(self, loop=None):
        self.outcome, self._settlers, self._done, self._loop = None, None, False, loop

    def get_loop(self):
        """The event loop the API's ML tasks for this promise run in, or None: in the call."""
        return self._loop

    def done(self) -> bool:
        return self._done

    def set_result(self, value) -> None:
        try:
            outcome = _to_js(value)
        except Exception as exc:  # noqa: BLE001 - a result that cannot be converted rejects
            outcome = BridgeFailure(exc)
        self._deliver(outcome)

    def set_exception(self, exc: BaseException) -> None:
        self._deliver(BridgeFailure(exc))

    def hand_resolvers(self, resolve, from_python) -> None:
        # Not `then`: a PyProxy with a `then` would pass for a thenable in JS.
        self._settlers = (resolve, from_python)

    def _deliver(self, outcome) -> None:
        self._done = True
        if self._settlers is None:
            self.outcome = outcome
        else:
            _hand_over(*self._settlers, outcome)
            self._settlers = None


def _array_buffer_of(array: np.ndarray):
    """readTensor(tensor)'s new ArrayBuffer holding the array's bytes, copied out of
    Pyodide's memory in one call; MemoryError when the JS heap cannot hold it."""
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    try:
        # An output tensor's [[data]] is the same array run after run (dispatch writes into
        # it): kernels.address_of remembers its address.
        return _copy_out(address_of(array) if array.size else 0, array.nbytes)
    except JsException:   # RangeError
        raise MemoryError from None


def get(target, attribute: str):
    return _outcome(lambda: getattr(target, attribute))


def settle(awaitable, resolve, from_python) -> None:
    """Settle the page's promise (made by the shim) with the outcome of a Python future or
    coroutine, as `invoke` reports it: `resolve(value)` with a JS value, `from_python(obj)`
    with a Python object (an API object to wrap, or a BridgeFailure -- a failure too --
    which the shim rejects with). The API's own futures (runtime.timeline.PromiseFuture)
    are settled synchronously as they settle -- at once when the work already ran in the
    caller's task (runtime/timeline.py) --; anything else (a coroutine) runs as an asyncio
    task first. `from_python` is handed the object for the length of the call (Pyodide
    proxies it and destroys the proxy after); the shim keeps its own copy."""
    def settled(done):
        try:
            outcome = _to_js(done.result())
        except BaseException as exc:  # noqa: BLE001 - CancelledError included
            outcome = BridgeFailure(exc)
        _hand_over(resolve, from_python, outcome)

    if isinstance(awaitable, PromiseFuture):
        awaitable.on_settled(settled)
    else:
        asyncio.ensure_future(awaitable).add_done_callback(settled)


def _hand_over(resolve, from_python, outcome) -> None:
    """Settle the page's promise with an outcome as invoke() returns one: a JS value
    (resolve), or a Python object to wrap or a BridgeFailure to reject with (from_python)."""
    if outcome is None or isinstance(outcome, (bool, int, float, str, JsProxy)):
        resolve(outcome)
    else:
        from_python(outcome)


def _member(target, member: str):
    try:
        return getattr(target, member)
    except AttributeError:
        pass

    def not_implemented(*args):
        # The shim exposes the whole IDL while operators land one family at a
        # time: arguments are still converted (TypeErrors come first, as WebIDL
        # says), then the missing operation reports itself.
        convert_arguments(type(target).__name__, member, args)
        raise NotSupportedError(f"{member}: not implemented by webnn-py yet")
    return not_implemented


def _outcome(thunk):
    try:
        return _to_js(thunk())
    except Exception as exc:  # noqa: BLE001
        return BridgeFailure(exc)


def _to_js(value):
    """Python results of the API → the JS values WebIDL would produce.

    API objects, futures and coroutines are returned as themselves: Pyodide
    hands them to JS as PyProxies, which the shim wraps or awaits."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _array_buffer(value, "readTensor")
    if isinstance(value, (list, tuple)) and any(type(item).__module__.startswith("webnn_py.api") for item in value):
        # sequence<MLOperand> (split, lstm, gru): a JS array of PyProxies, which the shim wraps one by one.
        return to_js(value, create_pyproxies=True)
    if isinstance(value, (dict, list, tuple)):
        float16_arrays: list = []
        converted = to_js(_without_float16_arrays(value, (), float16_arrays), dict_converter=js.Object.fromEntries,
                          create_pyproxies=False)
        for path, array in float16_arrays:
            _put_view(converted, to_js(list(path)), _float16_view,
                      _array_buffer(np.ascontiguousarray(array), "compute"))
        return converted
    return value


def _array_buffer(data, method: str):
    """A new ArrayBuffer holding a copy of `data` (a contiguous bytes-like object), copied
    out of Pyodide's memory where it lives, in one crossing."""
    data = np.frombuffer(data, np.uint8)
    try:
        return _array_buffer_of(data)
    except MemoryError:   # the JS heap cannot hold it (§8.3.4 step 9.1.2)
        raise out_of_memory(method, data.size, "the result's ArrayBuffer") from None


def _without_float16_arrays(value, path: tuple, found: list):
    """`value` with every float16 numpy array in it (MLModel.compute()'s results:
    {data, dimensions} records) replaced by None, each listed in `found` as
    (its path of keys and indices, the array) for _to_js to put back as a view."""
    if isinstance(value, np.ndarray) and value.dtype == np.float16 and path:
        found.append((path, value))
        return None
    if isinstance(value, dict):
        return {key: _without_float16_arrays(item, path + (key,), found) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without_float16_arrays(item, path + (index,), found) for index, item in enumerate(value)]
    return value
