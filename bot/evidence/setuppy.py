"""A setup.py's `install_requires` and `extras_require`, read from its syntax tree (setup.py is never run).

Literals are read as they are, and so are the names a setup.py binds to literals before its `setup(...)`
call, which is how many projects write them:

    EXTRAS_REQUIRE = {"tests": ["pytest", "simplejson"], "lint": ["flake8"]}
    EXTRAS_REQUIRE["dev"] = EXTRAS_REQUIRE["tests"] + EXTRAS_REQUIRE["lint"] + ["tox"]
    setup(..., install_requires=requires, extras_require=EXTRAS_REQUIRE)

Why (issue 26): marshmallow's 2019–2023 trees (a tuning case) keep their test set in such a dict, so
`simplejson` was never installed and every test module failed at collection. The reader follows only
module-level assignments of literals, names already read, `[...]`/`{...}` displays of those, a key of a
dict already read, and `+` of lists or tuples; anything computed (a call, a loop, a file read) leaves
that name unknown, and an unknown value is left out, as before.
"""

from __future__ import annotations

import ast
from typing import Any

from .. import pysyntax

_UNKNOWN = object()
_MAX_ITEMS = 2_000  # requirements read in all: a forged setup.py must not grow lists without end


def requirements(text: str | None) -> tuple[list[str], dict[str, list[str]]]:
    """(`install_requires`, `extras_require` by extra) of the `setup(...)` call; an extra written
    `"test:python_version<'3.8'"` is the extra `test` with that marker on each of its requirements."""
    try:
        tree = pysyntax.parse(text or "")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return [], {}
    names: dict[str, Any] = {}
    install: list[str] = []
    extras: dict[str, list[str]] = {}
    for stmt in tree.body:
        _bind(stmt, names)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not _is_setup(node.func):
            continue
        for kw in node.keywords:
            value = _value(kw.value, names)
            if kw.arg == "install_requires":
                install += _strings(value)
            elif kw.arg == "extras_require" and isinstance(value, dict):
                for k, v in value.items():
                    if isinstance(k, str):
                        extra, _, marker = k.partition(":")
                        extras.setdefault(extra, []).extend(_with_marker(r, marker) for r in _strings(v))
    return install, extras


def _is_setup(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id == "setup") or (
        isinstance(func, ast.Attribute) and func.attr == "setup"
    )


def _bind(stmt: ast.stmt, names: dict[str, Any]) -> None:
    """A module-level `NAME = value` or `NAME["key"] = value` (`if __name__ == ...:` bodies too)."""
    if isinstance(stmt, ast.If):
        for inner in stmt.body:
            _bind(inner, names)
        return
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        targets: list[ast.expr] = [stmt.target]
        value = stmt.value
    elif isinstance(stmt, ast.Assign):
        targets, value = list(stmt.targets), stmt.value
    else:
        return
    got = _value(value, names)
    for t in targets:
        if isinstance(t, ast.Name):
            names[t.id] = got
        elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
            holder, key = names.get(t.value.id), _value(t.slice, names)
            if isinstance(holder, dict) and isinstance(key, str) and got is not _UNKNOWN:
                holder[key] = got


def _value(node: ast.expr, names: dict[str, Any], depth: int = 0) -> Any:
    """The literal value of `node`, with names read so far; _UNKNOWN for anything computed."""
    if depth > 20:
        return _UNKNOWN
    if isinstance(node, ast.Name):
        return names.get(node.id, _UNKNOWN)
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_value(e, names, depth + 1) for e in node.elts]
        if any(i is _UNKNOWN for i in items) or len(items) > _MAX_ITEMS:
            return _UNKNOWN
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            key = _value(k, names, depth + 1) if k is not None else _UNKNOWN  # None: `**other`
            val = _value(v, names, depth + 1)
            if key is _UNKNOWN or val is _UNKNOWN or not isinstance(key, str):
                return _UNKNOWN
            out[key] = val
        return out
    if isinstance(node, ast.Subscript):
        holder, key = _value(node.value, names, depth + 1), _value(node.slice, names, depth + 1)
        return holder.get(key, _UNKNOWN) if isinstance(holder, dict) and isinstance(key, str) else _UNKNOWN
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _value(node.left, names, depth + 1), _value(node.right, names, depth + 1)
        if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
            joined = [*left, *right]
            return joined if len(joined) <= _MAX_ITEMS else _UNKNOWN
        return _UNKNOWN
    try:
        return pysyntax.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _UNKNOWN


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [ln.strip() for ln in value.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    return [v for v in value if isinstance(v, str)] if isinstance(value, (list, tuple)) else []


def _with_marker(req: str, marker: str) -> str:
    if not marker.strip():
        return req
    if ";" in req:
        name, _, own = req.partition(";")
        return f"{name.strip()}; ({own.strip()}) and ({marker.strip()})"
    return f"{req}; {marker.strip()}"
