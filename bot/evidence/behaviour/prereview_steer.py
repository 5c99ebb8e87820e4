"""The harness's steered calls (prereview_harness.py): a call the tests made with one argument replaced
(`swap`), and an expression the model wrote from a test's code (`probe`). Runs INSIDE the sandbox (the
project's own interpreter, Python 3.8+); imports nothing from `bot`."""

from __future__ import annotations

import inspect
import os
import sys
import types
from typing import Any

import prereview_calls as calls
from prereview_probe import normalise

ROOT = os.getcwd()


class _Shown:
    """A value told as `_shown` tells it (an object by its fields), for the result record."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def evaluate(call: dict[str, Any], timeout: float, timed: Any, shown: Any, limit: int) -> dict[str, Any]:
    """An expression the model wrote from a test's code, evaluated with that test module's imports; the
    record says whether it ran the changed callable (`reached`: its code object entered; a property's
    getter's, a static or class method's function's: `calls.raw`)."""
    ident = call["id"]
    ns: dict[str, Any] = {"__name__": "prereview_probe_expression"}
    try:
        imports = compile(call.get("imports") or "", "<imports>", "exec")
        expr = compile(call["probe"], "<probe>", "eval")
    except (SyntaxError, ValueError) as exc:
        return {"id": ident, "result": {"kind": "unavailable", "type": "probe", "message": str(exc)[:200]}}
    # the changed callable's top-level name (its function, or its class) is there too, as the prompt says
    mod = calls.module(call["path"], ROOT)
    top = call["qualname"].split(".")[0]
    ns[top] = getattr(mod, top, None)
    made, ok = timed(lambda: exec(imports, ns), timeout)  # noqa: S102 (the test's imports, sandboxed)
    if not ok:
        why = normalise(f"{made.get('type', made.get('kind'))}: {made.get('message', '')}", ROOT, 200)
        return {"id": ident, "result": {"kind": "unavailable", "type": "imports", "message": why}}
    try:
        target = getattr(inspect.unwrap(calls.raw(mod, call["qualname"])), "__code__", None)
    except Exception:  # noqa: BLE001 (a wrapper loop: cannot tell what runs it)
        target = None
    entered = [0]

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is target:
            entered[0] += 1

    sys.setprofile(profile if target is not None else None)

    def value() -> _Shown:  # the model's expression, run in the sandbox like the tests
        return _Shown(shown(calls.items(eval(expr, ns), ROOT, limit)))  # noqa: S307

    try:
        result, _ = timed(value, timeout)
    finally:
        sys.setprofile(None)
    return {"id": ident, "result": result, "reached": entered[0] > 0}


def swapped(
    fn: Any, pos: Any, kw: Any, swap: dict[str, str], value: Any, loose: bool = False
) -> tuple[list[Any], dict[str, Any]]:
    """The recorded arguments with the named parameters set to the given literals (a name the callable
    does not take, or a `*args`/`**kwargs` one, is refused: KeyError); a dotted name (`self.sep`) sets
    that attribute of the argument instead (`set_attribute`; `loose`: of any type, a value the same
    attribute held in another of the tests' calls, crossed.py)."""
    sig = inspect.signature(fn)
    bound = sig.bind_partial(*pos, **kw)
    for name, text in swap.items():
        root, _, attr = name.partition(".")
        if attr:
            if root not in bound.arguments:
                raise KeyError(root)
            set_attribute(bound.arguments[root], attr, value(text, {}), loose)
            continue
        param = sig.parameters.get(name)
        if param is None or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise KeyError(name)
        bound.arguments[name] = value(text, {})
    return list(bound.args), dict(bound.kwargs)


def set_attribute(obj: Any, attr: str, new: Any, loose: bool = False) -> None:
    """Set an instance attribute (in its `__dict__`, or a slot) that holds a value of `new`'s type (a
    number for a number; with `loose`, of any type), running none of the project's code: no property,
    `__setattr__` or descriptor of its own. Anything else is refused (TypeError)."""
    try:
        held = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        held = None
    slot = inspect.getattr_static(type(obj), attr, None)
    if isinstance(held, dict) and attr in held:
        old, put = held[attr], held.__setitem__
    elif isinstance(slot, types.MemberDescriptorType):
        try:
            old = slot.__get__(obj, type(obj))
        except AttributeError as exc:  # an unset slot
            raise TypeError(f"{attr} is not set") from exc
        put = lambda _, v: slot.__set__(obj, v)  # noqa: E731
    else:
        raise TypeError(f"no instance attribute {attr}")
    if loose:
        return put(attr, new)
    numbers = (int, float)
    if type(old) is bool or type(new) is bool:
        raise TypeError(f"{attr} holds a bool")
    if type(old) is not type(new) and not (type(old) in numbers and type(new) in numbers):
        raise TypeError(f"{attr} holds {type(old).__name__}, not {type(new).__name__}")
    if type(old) is int and isinstance(new, float) and not new.is_integer():
        raise TypeError(f"{attr} holds an int, not {new!r}")
    put(attr, type(old)(new))
