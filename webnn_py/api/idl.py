"""Glue between the generated WebIDL bindings and the implementation classes.

`@operation("MLContext")` makes a method convert its arguments exactly as
WebIDL says for that interface member (overload resolution included) before
the spec's steps run; `promise=True` turns any exception, conversion errors
included, into a rejected future, as WebIDL requires of promise-returning
operations.

`fast=` (the per-run calls: dispatch, writeTensor, readTensor) names a function
that recognises arguments of exactly the plain Python types whose conversion is
known to give them back as they are (a `type(x) is MLTensor`, a `dict` of `str`
keys and MLTensor values, ...) and returns what convert_arguments would, without
its generic machinery; it returns None for anything else -- subclasses, other
types, JS values (a JsProxy is never one of those types) --, which takes the
generic conversion, so every conversion error stays exactly as it was. The
spec's steps after the conversion are the same either way.
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable

from ..bindings import convert_arguments, register_interface  # noqa: F401  (re-exported)
from ..runtime.timeline import new_future


#: Whether `fast=` conversions are used (tests turn them off to compare with the generic path).
fast_paths = True


def operation(interface: str, name: str | None = None, *, promise: bool = False, overloaded: bool = False,
              fast: Callable[[tuple], tuple | None] | None = None):
    def wrap(impl: Callable):
        member = name or impl.__name__

        if inspect.iscoroutinefunction(impl):
            # A coroutine turns every exception into a rejection by itself.
            @functools.wraps(impl)
            async def coroutine_method(self, *args):
                overload, converted = convert_arguments(interface, member, args)
                if overloaded:
                    return await impl(self, overload, *converted)
                return await impl(self, *converted)

            coroutine_method.__webidl__ = (interface, member)
            return coroutine_method

        @functools.wraps(impl)
        def method(self, *args):
            try:
                known = fast(args) if fast is not None and fast_paths else None
                overload, converted = known if known is not None else convert_arguments(interface, member, args)
                if overloaded:
                    return impl(self, overload, *converted)
                return impl(self, *converted)
            except Exception as exc:
                if promise:
                    return rejected(exc)
                raise

        method.__webidl__ = (interface, member)
        return method

    return wrap


def rejected(exc: BaseException):
    future = new_future()
    future.set_exception(exc)
    return future
