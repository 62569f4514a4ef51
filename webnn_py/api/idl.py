"""Glue between the generated WebIDL bindings and the implementation classes.

`@operation("MLContext")` makes a method convert its arguments exactly as
WebIDL says for that interface member (overload resolution included) before
the spec's steps run; `promise=True` turns any exception, conversion errors
included, into a rejected future, as WebIDL requires of promise-returning
operations.
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable

from ..bindings import convert_arguments, register_interface  # noqa: F401  (re-exported)
from ..runtime.timeline import new_future


def operation(interface: str, name: str | None = None, *, promise: bool = False, overloaded: bool = False):
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
                overload, converted = convert_arguments(interface, member, args)
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
