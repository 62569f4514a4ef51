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
