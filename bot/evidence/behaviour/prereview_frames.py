"""What the tracer (prereview_trace.py) reads from a frame: a call's arguments, its function and a
generator's resumption. Runs INSIDE the sandbox, in the project's interpreter; imports nothing from `bot`.
"""

from __future__ import annotations

import sys
from typing import Any


def resumed(frame: Any) -> bool:
    """A generator or coroutine frame resumed after a yield or await (settrace reports each resumption as
    a `call`: the steps of one generator used up its calls and variants, with its locals as arguments).
    3.11: the RESUME instruction's argument is 0 only at the start; before 3.11 f_lasti is -1 there."""
    code, i = frame.f_code, frame.f_lasti
    if not code.co_flags & 0x2A0 or i < 0:  # CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR
        return False
    return sys.version_info < (3, 11) or code.co_code[i + 1] != 0


def arguments(frame: Any) -> dict[str, Any]:
    code = frame.f_code
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)  # *args, **kwargs
    loc = frame.f_locals
    return {name: loc[name] for name in code.co_varnames[:n] if name in loc}


def call_of(frame: Any, qual: str) -> tuple[Any, list[str], list[Any], dict[str, Any]] | None:
    """(function, parameter names, positional values, keyword values) of the call `frame` starts, the
    function found by its qualified name in its module (through staticmethod, classmethod, property and
    `__wrapped__`); None when it cannot be found."""
    target: Any = frame.f_code
    obj: Any = frame.f_globals.get(qual.split(".")[0])
    for part in qual.split(".")[1:]:
        space = getattr(obj, "__dict__", None)  # a class's is a mappingproxy
        try:
            obj = space[part]  # type: ignore[index]
        except (KeyError, TypeError):
            return None
    obj = getattr(obj, "fget", None) if isinstance(obj, property) else getattr(obj, "__func__", obj)
    for _ in range(5):
        if getattr(obj, "__code__", None) is target:
            break
        obj = getattr(obj, "__wrapped__", None)
    if getattr(obj, "__code__", None) is not target:
        return None
    loc, code = frame.f_locals, frame.f_code
    n, k = code.co_argcount, code.co_kwonlyargcount
    names = list(code.co_varnames[: n + k])
    if any(x not in loc for x in names):
        return None
    pos = [loc[x] for x in names[:n]]
    kw = {x: loc[x] for x in names[n:]}
    i = n + k
    if code.co_flags & 0x04:
        pos += list(loc.get(code.co_varnames[i], ()))
        i += 1
    if code.co_flags & 0x08:
        kw.update(loc.get(code.co_varnames[i], {}))
    return obj, names, pos, kw
