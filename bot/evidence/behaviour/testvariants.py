"""Variants of one test function, each with one literal of its own code changed or one keyword argument
left out, written into a copy of its module beside it (amplify.py runs them; its docstring says why).

A site is a str, bytes, int or bool literal of the test (its decorators' parametrize values too), or a
keyword argument of a call in it. Not one: its docstring, an f-string's parts, an assert's message, the
names a parametrize gives, or a literal compared (`== "tbl"`: what the test expects, not what it gives).
The new values, best first: the changed lines' literals (a string holding one gets one more part at it:
"a.b" with "." becomes "a.x.b"; one it does not hold is replaced by it; an int by an int literal), then
"" for a string, `not` a boolean, a keyword left to its default, n - 1 and n + 1.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MAX_PER_TEST = 12  # variants of one test
MAX_REPR = 60  # a literal shown in a variant's description, cut
MARK = "__prereview_v"  # a variant's name: the test's own, this, its number


@dataclass(frozen=True)
class Variant:
    test: str  # the original test's id, "path::Class::test_x"
    name: str  # the variant function's name
    what: str  # what changed, e.g. '"a.b" -> "a.x.b"'


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= MAX_REPR else text[: MAX_REPR - 3] + "..."


def _values(v: Any, seeds: Sequence[Any]) -> list[tuple[Any, int]]:
    """New values for literal `v`, each with its priority (0: from the changed lines' literals)."""
    out: list[tuple[Any, int]] = []
    if isinstance(v, bool):
        return [(not v, 2)]
    if isinstance(v, str):
        for s in seeds:
            if isinstance(s, str) and s and s != v:
                out.append((v.replace(s, f"{s}x{s}", 1), 0) if s in v else (s, 1))
        out += [("", 1)] if v else []
    elif isinstance(v, bytes):
        out += [(b"", 1)] if v else []
    elif isinstance(v, int):
        out += [(s, 0) for s in seeds if type(s) is int and s != v]
        out += [(v - 1, 2), (v + 1, 2)]
    return [(n, p) for n, p in out if n != v]


def _sites(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """The literals and keyword arguments of `fn` that a variant may change: its body's and its
    decorators' (parametrize values, not the argument names); not its docstring, an f-string's parts, an
    assert's message or a literal compared (`== "tbl"`: what the test expects, not what it gives)."""
    skip: set[int] = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.JoinedStr):
            skip.update(id(x) for x in ast.walk(n))
        if isinstance(n, ast.Compare):  # `assert f(x) == "y"`: "y" is what is expected, x an input
            skip.update(id(x) for x in (n.left, *n.comparators) if isinstance(x, ast.Constant))
        if isinstance(n, ast.Assert) and n.msg is not None:
            skip.update(id(x) for x in ast.walk(n.msg))
        if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "parametrize" and n.args:
            skip.add(id(n.args[0]))
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        skip.add(id(body[0].value))
    out: list[ast.AST] = []
    for root in [*fn.decorator_list, *body]:
        for n in ast.walk(root):
            if id(n) in skip:
                continue
            literal = isinstance(n, ast.Constant) and isinstance(n.value, (str, bytes, int))
            if literal or (isinstance(n, ast.keyword) and n.arg is not None):
                out.append(n)
    return out


def variants_of(
    fn: ast.FunctionDef | ast.AsyncFunctionDef, seeds: Sequence[Any], limit: int
) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]]:
    """Copies of `fn` with one site changed and what changed, best first, at most `limit` (the edits are
    ranked first; only the ones kept are copied)."""
    edits: list[tuple[int, int, int, Any, str]] = []  # (priority, order, site, new value or None, what)
    for i, site in enumerate(_sites(fn)):
        if isinstance(site, ast.keyword):
            edits.append((1, len(edits), i, None, f"keyword `{site.arg}` left out"))
            continue
        assert isinstance(site, ast.Constant)
        for value, prio in _values(site.value, seeds):
            edits.append((prio, len(edits), i, value, f"{_show(site.value)} -> {_show(value)}"))
    made: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]] = []
    for _, _, i, value, what in sorted(edits, key=lambda e: e[:2])[:limit]:
        twin = copy.deepcopy(fn)
        target = _sites(twin)[i]  # the same walk over the copy: the same site
        if isinstance(target, ast.keyword):
            _drop_keyword(twin, target)
        else:
            assert isinstance(target, ast.Constant)
            target.value = value
        made.append((twin, what))
    return made


def _drop_keyword(fn: ast.AST, kw: ast.keyword) -> None:
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and kw in n.keywords:
            n.keywords = [k for k in n.keywords if k is not kw]
            return


def find_function(tree: ast.Module, qualname: Sequence[str]) -> tuple[list[ast.stmt], int] | None:
    """The body holding the function `qualname` (classes, then the function) and its index there."""
    body: list[ast.stmt] = tree.body
    for depth, part in enumerate(qualname):
        last = depth == len(qualname) - 1
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef) if last else (ast.ClassDef,)
        idx = next((i for i, n in enumerate(body) if isinstance(n, kinds) and n.name == part), None)
        if idx is None:
            return None
        if last:
            return body, idx
        body = body[idx].body  # type: ignore[attr-defined]
    return None


def test_parts(test_id: str) -> tuple[str, list[str]]:
    """'path::Class::test_x[p]' -> ('path', ['Class', 'test_x'])."""
    path, *names = test_id.split("::")
    if names:
        names[-1] = names[-1].split("[", 1)[0]
    return path, names


def amplified_module(
    source: str, tests: Mapping[str, Sequence[Any]], per_test: int
) -> tuple[str, list[Variant]]:
    """`source` (one test module) with variants of `tests` (id -> seeds) added beside each, and the
    variants; ('', []) when none could be made."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return "", []
    out: list[Variant] = []
    for test, seeds in tests.items():
        _, names = test_parts(test)
        found = find_function(tree, names) if names else None
        if found is None:
            continue
        body, idx = found
        fn = body[idx]
        assert isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        made = variants_of(fn, seeds, per_test)
        for k, (twin, what) in enumerate(made):
            twin.name = f"{fn.name}{MARK}{k}"
            out.append(Variant(test.split("[", 1)[0], twin.name, what))
        body[idx + 1 : idx + 1] = [t for t, _ in made]
    if not out:
        return "", []
    try:
        return ast.unparse(ast.fix_missing_locations(tree)) + "\n", out
    except (ValueError, RecursionError):
        return "", []
