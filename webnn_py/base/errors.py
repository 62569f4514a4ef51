"""The exceptions WebNN raises.

WebIDL's TypeError is Python's built-in TypeError, so host callers catch what
they expect. The DOMException names the spec uses are subclasses of
`DOMException`, whose `name` attribute is what the JS shim turns into a real
DOMException of the same name.
"""


class DOMException(Exception):
    """Base of the DOMException-named errors (WebIDL §2.8.1)."""

    name = "Error"

    def __init__(self, message: str = ""):
        super().__init__(message)
        self.message = message


class InvalidStateError(DOMException):
    name = "InvalidStateError"


class DataError(DOMException):
    name = "DataError"


class NotSupportedError(DOMException):
    name = "NotSupportedError"


class SecurityError(DOMException):
    name = "SecurityError"


class OperationError(DOMException):
    name = "OperationError"


class UnknownError(DOMException):
    name = "UnknownError"


def error_name(exc: BaseException) -> str:
    """The name script sees for `exc`: a WebIDL simple exception or a DOMException name."""
    if isinstance(exc, DOMException):
        return exc.name
    if isinstance(exc, TypeError):
        return "TypeError"
    return "OperationError"


def describe(operation: str, label: str, problem: str) -> str:
    """Error message naming the operator and its label, the way browsers print them."""
    prefix = f"[{label}] " if label else ""
    return f"{prefix}{operation}: {problem}"


def out_of_memory(operation: str, byte_length: int, what: str) -> UnknownError:
    """The error for an allocation that failed (numpy's MemoryError): WebNN's own answer
    to memory that cannot be had is an "UnknownError" DOMException (§8.3.2 step 6.1.2 when
    [[data]] cannot be created, §8.3.4/§8.3.5 step 9.1.2 when the copy of [[data]] fails),
    so the synchronous copies of writeTensor() (§8.3.6 step 5) and constant() (§8.9.3.1
    step 4.2), whose steps name no failure, report the same. In the browser everything
    (tensors, constants, intermediates, Python itself) shares wasm32's 4 GiB memory."""
    return UnknownError(f"{operation}: out of memory: {what} ({byte_length:,} bytes) could not be allocated")
