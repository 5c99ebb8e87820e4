"""Calls changed callables on given inputs and records what they do: `python prereview_harness.py SPEC`.

Runs INSIDE the sandbox (the project's own interpreter, Python 3.8+) from a scratch copy of one side
(base or head) of the change; imports nothing from `bot`. The spec (JSON) lists calls:
  {"id": "3", "path": "pkg/m.py", "qualname": "f", "args": ["10"], "kwargs": {"k": "'x'"}}
      arguments are Python literal reprs, read with ast.literal_eval (never eval)
  {"id": "5", "path": "pkg/m.py", "qualname": "C.m", "args": ["1"], "instance": true}
      a method, called on a fresh `C()` (a class that cannot be built without arguments is unavailable)
  {"id": "6", "path": "pkg/m.py", "qualname": "f", "args": ["Node(1, Node(2))"],
   "builds": {"Node": "pkg/node.py"}}
      arguments may call the project classes named in "builds" with literal arguments (nothing else)
  {"id": "4", "path": "pkg/m.py", "qualname": "f", "doctest": [["f(10)", "[2, 3]\\n"], ...]}
      the callable's own docstring examples, run in order in a copy of the module's namespace; with
      "report": [2, 5] only those examples' results are written (the others are their setup)
  {"id": "8", "path": "pkg/m.py", "qualname": "C.m", "pickled": ["eJy…", "…"]}
      a call the tests made at the other side, replayed: its positional and keyword arguments (`self`
      first for a method; a constructor's without it) as the tracer pickled them, unpickled here with
      this side's classes. The result is what it returns (an iterator it returns: its first items) and
      what it changes in `self` and the other arguments; arguments this side cannot unpickle are
      "unavailable" ("replay"), not a result; with "swap": {"name": "literal"} those parameters are
      set to the given literal reprs first (a call from the tests with one argument changed)
  {"id": "9", "path": "pkg/m.py", "qualname": "f", "probe": "pkg.parse('x as y')", "imports": "import pkg"}
      an expression (written from a test's code) evaluated after the test module's imports; the result
      is its value as `self` is shown (an object by its fields), and "reached" says whether evaluating
      it ran `f` (a profile hook on f's code object)
  {"id": "7", "path": "pkg/m.py", "qualname": "cm", "nesting": true}
      a context manager used inside itself; the result is the project's module state (simple global
      values of cm's module and of the project modules whose functions it calls) before the outer
      block, in it, in the inner block, in the outer block after the inner one, and after both
Each result is one JSON line written (and flushed) as soon as the call ends, so a call that kills the
interpreter is the first one without a line. A call longer than `timeout` seconds is stopped (SIGALRM).
"""

from __future__ import annotations

import ast
import json
import os
import random
import signal
import sys
from typing import Any

import prereview_calls as calls
import prereview_probe as probe
import prereview_steer as steer

ROOT = os.getcwd()


class CallTimeout(BaseException):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise CallTimeout()


def _module_at(path: str) -> Any:
    return calls.module(path, ROOT)


def _timed(fn: Any, timeout: float) -> tuple[dict[str, Any], bool]:
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return probe.return_record(fn(), ROOT, LIMIT), True
    except CallTimeout:
        return {"kind": "timeout", "seconds": timeout}, False
    except RecursionError as exc:
        return probe.exception_record(exc, ROOT, LIMIT), False
    except Exception as exc:  # noqa: BLE001 (the result being recorded)
        return probe.exception_record(exc, ROOT, LIMIT), False
    except SystemExit as exc:
        return {"kind": "raise", "type": "SystemExit", "message": str(exc.code)}, False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


LIMIT = 400


def _value(text: str, builds: dict[str, str]) -> Any:
    """A literal, or a constructor call of a top-level class in `builds` (name -> module path) whose
    arguments are themselves such values; anything else is refused (ValueError). Never eval."""
    return _build(ast.parse(text.lstrip(" \t"), mode="eval").body, builds)


def _build(node: ast.AST, builds: dict[str, str]) -> Any:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in builds:
        cls = getattr(_module_at(builds[node.func.id]), node.func.id)
        args = [_build(a, builds) for a in node.args if not isinstance(a, ast.Starred)]
        kwargs = {k.arg: _build(k.value, builds) for k in node.keywords if k.arg}
        return cls(*args, **kwargs)
    if isinstance(node, ast.List):
        return [_build(e, builds) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_build(e, builds) for e in node.elts)
    return ast.literal_eval(node)


def _nested(cm: Any) -> tuple[str, list[dict[str, str]]]:
    """(each state that moves, with its value at the five steps: before the outer block, in it, in the
    inner block, back in the outer block, after both; and those values per step)."""
    mods = _state_modules(cm)
    states = [_observe(mods)]
    with cm():
        states.append(_observe(mods))
        with cm():
            states.append(_observe(mods))
        states.append(_observe(mods))
    states.append(_observe(mods))
    moving = sorted({k for s in states for k in s if len({x.get(k) for x in states}) > 1})
    text = "; ".join(
        f"{k.rsplit('.', 1)[-1]}: " + " -> ".join(s.get(k, "(unset)") for s in states) for k in moving
    )
    return text or "no module state changes", [{k: s.get(k, "(unset)") for k in moving} for s in states]


def _state_modules(cm: Any) -> list[str]:
    """cm's own module and the project modules of the functions its code calls by a global name."""
    raw = cm
    for _ in range(5):
        raw = getattr(raw, "__wrapped__", raw)
    mods = [getattr(raw, "__module__", "")]
    space = getattr(raw, "__globals__", {})
    code = getattr(raw, "__code__", None)
    for name in code.co_names if code else ():
        mod = getattr(space.get(name), "__module__", None)
        if isinstance(mod, str) and mod not in mods:
            mods.append(mod)
    root = ROOT.rstrip("/") + "/"
    own = [m for m in mods if str(getattr(sys.modules.get(m), "__file__", "") or "").startswith(root)]
    return own[:8]


_SIMPLE = (bool, int, float, str, bytes, type(None))


def _observe(mods: list[str]) -> dict[str, str]:
    out = {}
    for m in mods:
        for k, v in list(vars(sys.modules[m]).items()):
            if not k.startswith("__") and type(v) in _SIMPLE:
                out[f"{m}.{k}"] = repr(v)[:80]
    return out


def run_call(call: dict[str, Any], timeout: float) -> list[dict[str, Any]]:
    random.seed(0)
    try:
        fn = calls.resolve(_module_at(call["path"]), call["qualname"])
    except BaseException as exc:  # noqa: BLE001 (an import that fails is a result too)
        return [
            {
                "id": call["id"],
                "result": {
                    "kind": "unavailable",
                    "type": type(exc).__name__,
                    "message": probe.normalise(str(exc), ROOT, LIMIT),
                },
            }
        ]
    if call.get("nesting"):
        steps: list[Any] = []
        result, ok = _timed(lambda: steps.append(_nested(fn)), timeout)
        if ok:
            text, states = steps[0]
            result = {"kind": "return", "repr": probe.normalise(text, ROOT, LIMIT), "states": states}
        return [{"id": call["id"], "result": result}]
    if "doctest" in call:
        ns = dict(vars(sys.modules[fn.__module__])) if fn.__module__ in sys.modules else {}
        out = []
        report = set(call.get("report") or range(len(call["doctest"])))
        for k, (src, want) in enumerate(call["doctest"]):
            try:
                code = compile(src, "<doctest>", "eval")
                result, _ = _timed(lambda code=code: eval(code, ns), timeout)  # noqa: S307 (sandboxed doctest)
            except SyntaxError:
                stmt = compile(src, "<doctest>", "exec")
                result, _ = _timed(lambda stmt=stmt: exec(stmt, ns), timeout)  # noqa: S102 (sandboxed doctest)
                if result.get("kind") == "return":
                    continue
            if k not in report:
                continue
            out.append({"id": f"{call['id']}.{k}", "expr": src, "want": want, "result": result})
        return out
    if "pickled" in call:
        return [_replay(call, timeout)]
    if "probe" in call:
        return [steer.evaluate(call, timeout, _timed, _shown, LIMIT)]
    builds = call.get("builds") or {}
    values: list[Any] = []

    def build() -> None:  # constructors are the project's code: timed like the call
        values.append([_value(a, builds) for a in call.get("args", [])])
        values.append({k: _value(v, builds) for k, v in call.get("kwargs", {}).items()})

    made, ok = _timed(build, timeout)
    if not ok:
        why = probe.normalise(f"{made.get('type', made.get('kind'))}: {made.get('message', '')}", ROOT, 200)
        return [{"id": call["id"], "result": {"kind": "unavailable", "type": "input", "message": why}}]
    args, kwargs = values
    if call["qualname"].endswith(".__init__"):  # a constructor: its effect is the object it builds
        owner = calls.resolve(sys.modules[fn.__module__], call["qualname"].rsplit(".", 1)[0])
        return [_construct(call["id"], owner, args, kwargs, timeout)]
    subjects: dict[str, Any] = {str(i): a for i, a in enumerate(args)}
    if call.get("instance"):
        owner = call["qualname"].rsplit(".", 1)[0]
        box: list[Any] = []
        made, ok = _timed(lambda: box.append(calls.resolve(sys.modules[fn.__module__], owner)()), timeout)
        if not ok:
            why = f"{owner}() failed: {made.get('type', made.get('kind'))}"
            return [{"id": call["id"], "result": {"kind": "unavailable", "type": "instance", "message": why}}]
        inst = box[0]
        fn = _member(inst, call["qualname"].rsplit(".", 1)[1])
        subjects["self"] = inst
    before = {k: _shown(a) for k, a in subjects.items()}
    result, _ = _timed(lambda: fn(*args, **kwargs), timeout)
    after = {k: _shown(a) for k, a in subjects.items()}
    mutated = {k: r for k, r in after.items() if r != before[k]}
    return [{"id": call["id"], "result": result, "mutated": mutated}]


def _replay(call: dict[str, Any], timeout: float) -> dict[str, Any]:
    """A recorded call made again on this side's code, with the recorded arguments (see the docstring)."""
    box: list[Any] = []
    # unpickling runs the project's code (its classes' __setstate__): timed too
    made, ok = _timed(lambda: box.append(calls.unpickle(call["pickled"])), timeout)
    if not ok:
        why = probe.normalise(f"{made.get('type', made.get('kind'))}: {made.get('message', '')}", ROOT, 200)
        return {"id": call["id"], "result": {"kind": "unavailable", "type": "replay", "message": why}}
    pos, kw = box[0]
    mod = _module_at(call["path"])
    qual = call["qualname"]
    init = qual.endswith(".__init__")
    fn = calls.resolve(mod, qual.rsplit(".", 1)[0]) if init else calls.raw(mod, qual)
    if call.get("swap"):
        try:  # a constructor's recorded arguments have no `self`: bound to its class's signature
            pos, kw = steer.swapped(fn, pos, kw, call["swap"], _value, call.get("loose") is True)
        except (TypeError, ValueError, SyntaxError, KeyError, AttributeError) as exc:
            why = probe.normalise(f"{type(exc).__name__}: {exc}", ROOT, 200)
            return {"id": call["id"], "result": {"kind": "unavailable", "type": "swap", "message": why}}
    if init:
        return _construct(call["id"], fn, pos, kw, timeout)
    subjects = {**{str(i): a for i, a in enumerate(pos)}, **kw}
    if "." in qual and pos:
        subjects["self"] = subjects.pop("0")
    before = {k: _shown(a) for k, a in subjects.items()}
    result, _ = _timed(lambda: calls.items(fn(*pos, **kw), ROOT, LIMIT), timeout)
    after = {k: _shown(a) for k, a in subjects.items()}
    return {"id": call["id"], "result": result, "mutated": {k: r for k, r in after.items() if r != before[k]}}


def _construct(ident: str, owner: Any, args: list[Any], kwargs: dict[str, Any], timeout: float) -> dict:
    """`__init__` called the way code calls it, through its class: None and what `self` holds after."""
    box: list[Any] = []
    result, ok = _timed(lambda: box.append(owner(*args, **kwargs)), timeout)
    if not ok:
        return {"id": ident, "result": result}
    return {"id": ident, "result": result, "mutated": {"self": _shown(box[0])}}


def _member(inst: Any, name: str) -> Any:
    """The bound method to call; for a property, a function that reads it (the getter is the callable)."""
    import functools
    import inspect

    if isinstance(inspect.getattr_static(type(inst), name, None), (property, functools.cached_property)):
        return lambda: getattr(inst, name)
    return getattr(inst, name)


def _shown(value: Any) -> str:
    """What a value holds, for mutation: an object's fields (whatever its repr says), else its repr."""
    state = probe.state_repr(value, ROOT, LIMIT)
    return state if state is not None else probe.safe_repr(value, ROOT, LIMIT)


def main(argv: list[str]) -> int:
    global LIMIT
    with open(argv[1], encoding="utf-8") as fh:
        spec = json.load(fh)
    LIMIT = int(spec.get("max_repr", 400))
    timeout = float(spec.get("timeout", 2.0))
    signal.signal(signal.SIGALRM, _alarm)
    sys.setrecursionlimit(3000)
    with open(os.path.join(ROOT, spec.get("out", "results.jsonl")), "w", encoding="utf-8") as out:
        for call in spec["calls"]:
            for line in run_call(call, timeout):
                out.write(json.dumps(line) + "\n")
                out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
