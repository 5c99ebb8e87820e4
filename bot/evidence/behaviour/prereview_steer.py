"""The harness's steered calls (prereview_harness.py): a call the tests made with one argument replaced
(`swap`), and an expression the model wrote from a test's code (`probe`). Runs INSIDE the sandbox (the
project's own interpreter, Python 3.8+); imports nothing from `bot`."""

from __future__ import annotations

import inspect
import os
import sys
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


def swapped(fn: Any, pos: Any, kw: Any, swap: dict[str, str], value: Any) -> tuple[list[Any], dict[str, Any]]:
    """The recorded arguments with the named parameters set to the given literals (a name the callable
    does not take, or a `*args`/`**kwargs` one, is refused: KeyError)."""
    sig = inspect.signature(fn)
    bound = sig.bind_partial(*pos, **kw)
    for name, text in swap.items():
        param = sig.parameters.get(name)
        if param is None or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise KeyError(name)
        bound.arguments[name] = value(text, {})
    return list(bound.args), dict(bound.kwargs)
