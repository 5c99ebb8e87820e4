"""The functions and methods a change touches, from the AST at base and at head, mapped from the hunks.

A callable counts when an added line falls inside its body at head, or a removed line inside its body at
base (a removed `close()` or check changes behaviour as much as an added line). Nested definitions count
as the innermost one. A class counts as a callable of its own (`is_class`: calling it builds an instance)
when the change edits its body outside its methods (class attributes, bases, decorators) or removes one of
its methods, and the class is there at base and at head; docstrings and comments do not count. Only
parsing happens here: nothing of the change is imported or run.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass

from ... import pysyntax
from ...change.diff import Diff, FileDiff

Reader = Callable[[str], "str | None"]


@dataclass(frozen=True)
class Param:
    name: str
    annotation: str | None  # source text of the annotation
    has_default: bool
    kind: str  # "positional" | "keyword" | "varargs" | "varkw"


@dataclass(frozen=True)
class Changed:
    """One changed callable. Spans are (first, last) line numbers, decorators included."""

    path: str
    qualname: str  # as Python's co_qualname spells it: Class.method, f.<locals>.g
    kind: str  # "modified" | "added" | "lost-lines" (only removed lines inside it) | "reached" (unchanged,
    # but it reads a module-level value the change edits)
    head_span: tuple[int, int] | None
    base_span: tuple[int, int] | None
    anchor: int  # head line a finding about it sits on (first added line, else above the removal)
    signature: str  # the `def` line(s) at head
    docstring: str
    params: tuple[Param, ...]
    is_method: bool  # first parameter is self/cls of an enclosing class
    is_async: bool
    is_generator: bool
    head_source: str = ""
    base_source: str = ""
    other_docs: tuple[str, ...] = ()  # docstrings elsewhere in the module at head that call it by name
    is_context_manager: bool = False  # a generator decorated with (contextlib.)contextmanager
    is_class: bool = False  # a class: called, it builds an instance (params: its own __init__'s, or none)
    is_property: bool = False  # a method decorated with (functools.cached_)property: read, not called
    via: str = ""  # kind "reached": the changed module-level name it reads (see dependents.py)
    report_path: str = ""  # kind "reached": the file of that name, where a finding goes (at `anchor`)

    @property
    def finding_path(self) -> str:
        return self.report_path or self.path

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    @property
    def key(self) -> str:
        return f"{self.path}::{self.qualname}"


@dataclass(frozen=True)
class _Def:
    qualname: str
    node: ast.FunctionDef | ast.AsyncFunctionDef
    span: tuple[int, int]
    is_method: bool


def parse(source: str | None) -> ast.Module | None:
    """The module's AST; None when there is no source or it does not parse."""
    if source is None:
        return None
    try:
        return pysyntax.parse(source)
    except (SyntaxError, ValueError):
        return None


def definitions(tree: ast.Module | None) -> list[_Def]:
    """Every function/method in a module with its qualified name; [] for a module that did not parse."""
    if tree is None:
        return []
    out: list[_Def] = []

    def walk(node: ast.AST, prefix: str, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                q = f"{prefix}{child.name}"
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                out.append(_Def(q, child, (first, child.end_lineno or child.lineno), in_class))
                walk(child, f"{q}.<locals>.", False)
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.", True)
            elif not isinstance(child, (ast.Lambda,)):
                walk(child, prefix, in_class)

    walk(tree, "", False)
    return out


@dataclass(frozen=True)
class _Class:
    qualname: str
    node: ast.ClassDef
    span: tuple[int, int]  # decorators included
    own: tuple[tuple[int, int], ...]  # lines that are the class's own code: header first, then attributes


def classes(tree: ast.Module | None) -> list[_Class]:
    """Every class reachable by attribute from its module (not inside a function), with its own lines:
    the `class` header (decorators and bases) and the statements of its body that are not methods, nested
    classes or its docstring."""
    if tree is None:
        return []
    out: list[_Class] = []

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if not isinstance(node, ast.ClassDef):
                continue
            q = f"{prefix}{node.name}"
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            header = (first, max(node.lineno, node.body[0].lineno - 1))
            own = [header]
            for k, st in enumerate(node.body):
                is_doc = k == 0 and isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant)
                if is_doc or isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    continue
                own.append((st.lineno, st.end_lineno or st.lineno))
            out.append(_Class(q, node, (first, node.end_lineno or node.lineno), tuple(own)))
            walk(node.body, f"{q}.")

    walk(tree.body, "")
    return out


def _owning_class(found: list[_Class], line: int) -> _Class | None:
    """The class whose own code (not a method's) holds `line`."""
    for c in found:
        if any(a <= line <= b for a, b in c.own):
            return c
    return None


def _innermost(defs: list[_Def], line: int) -> _Def | None:
    inside = [d for d in defs if d.span[0] <= line <= d.span[1]]
    return min(inside, key=lambda d: d.span[1] - d.span[0]) if inside else None


def changed_callables(
    diff: Diff, read_base: Reader, read_head: Reader, *, is_test: Callable[[str], bool]
) -> list[Changed]:
    """The callables of the changed Python files (test files excluded), in file and line order."""
    out: list[Changed] = []
    for f in diff.files:
        if not f.path.endswith(".py") or f.status == "deleted" or f.is_binary or is_test(f.path):
            continue
        head = read_head(f.path)
        if head is None:
            continue
        base = read_base(f.old_path) if f.status != "added" else None
        out += _changed_in_file(f, base or "", head)
    return out


def _changed_in_file(f: FileDiff, base: str, head: str) -> list[Changed]:
    head_tree, base_tree = parse(head), parse(base)
    head_defs, base_defs = definitions(head_tree), definitions(base_tree)
    head_classes, base_classes = classes(head_tree), classes(base_tree)
    # a property's getter, setter and deleter share one qualname: the getter (first) is the callable
    base_by_name: dict[str, _Def] = {}
    head_by_name: dict[str, _Def] = {}
    for defs, by_name in ((base_defs, base_by_name), (head_defs, head_by_name)):
        for one in defs:
            by_name.setdefault(one.qualname, one)
    added: dict[str, list[int]] = {}
    removed: dict[str, list[int]] = {}
    removal_anchor: dict[str, int] = {}
    class_added: dict[str, list[int]] = {}  # class qualname -> head lines of its own code the change adds
    class_anchor: dict[str, int] = {}  # -> the head line above its first removal (own code or a method)
    for h in f.hunks:
        prev_new: int | None = None
        for ln in h.lines:
            if ln.kind == "+" and ln.new_no is not None:
                d = _innermost(head_defs, ln.new_no)
                if d is not None:
                    added.setdefault(d.qualname, []).append(ln.new_no)
                elif (k := _owning_class(head_classes, ln.new_no)) is not None:
                    class_added.setdefault(k.qualname, []).append(ln.new_no)
            elif ln.kind == "-" and ln.old_no is not None:
                d = _innermost(base_defs, ln.old_no)
                owner = (
                    d.qualname.rpartition(".")[0]  # a method the change removes: its class changed
                    if d is not None and d.is_method and d.qualname not in head_by_name
                    else None
                )
                if d is not None:
                    removed.setdefault(d.qualname, []).append(ln.old_no)
                    if prev_new is not None:
                        removal_anchor.setdefault(d.qualname, prev_new)
                elif (k := _owning_class(base_classes, ln.old_no)) is not None:
                    owner = k.qualname
                if owner and "<locals>" not in owner:
                    class_anchor.setdefault(owner, prev_new or 0)
            if ln.new_no is not None:
                prev_new = ln.new_no
    head_lines, base_lines = head.splitlines(), base.splitlines()
    docs = module_docs(head_tree)
    out: list[Changed] = []
    for q in dict.fromkeys([*added, *removed]):
        hd, bd = head_by_name.get(q), base_by_name.get(q)
        if hd is None:  # removed or renamed at head: nothing to call there
            continue
        kind = "added" if bd is None else ("modified" if q in added else "lost-lines")
        anchor = added[q][0] if q in added else removal_anchor.get(q, hd.node.lineno)
        anchor = min(max(anchor, hd.span[0]), hd.span[1])
        out.append(_record(f.path, hd, bd, kind, anchor, head_lines, base_lines, docs))
    head_class = {k.qualname: k for k in head_classes}
    base_class = {k.qualname: k for k in base_classes}
    for q in dict.fromkeys([*class_added, *class_anchor]):
        hk, bk = head_class.get(q), base_class.get(q)
        if hk is None or bk is None:  # a new class is new code (its methods count); a removed one is gone
            continue
        anchor = class_added[q][0] if q in class_added else class_anchor.get(q, hk.node.lineno)
        anchor = min(max(anchor, hk.span[0]), hk.span[1])
        kind = "modified" if q in class_added else "lost-lines"
        out.append(_class_record(f.path, hk, bk, kind, anchor, head_lines, base_lines, docs))
    return sorted(out, key=lambda c: c.anchor)


def _class_record(
    path: str,
    hk: _Class,
    bk: _Class,
    kind: str,
    anchor: int,
    head_lines: list[str],
    base_lines: list[str],
    docs: list[tuple[str, str]],
) -> Changed:
    """A class as a callable: its parameters are those of the `__init__` its own body defines (without
    `self`); none when it inherits one (the call made is then `Class()`)."""
    node = hk.node
    init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    params = parameters(init.args)[1:] if init is not None else ()
    own = ast.get_docstring(node) or ""
    header_end = hk.own[0][1]  # the `class` line(s), up to its body
    return Changed(
        path=path,
        qualname=hk.qualname,
        kind=kind,
        head_span=hk.span,
        base_span=bk.span,
        anchor=anchor,
        signature="\n".join(head_lines[node.lineno - 1 : header_end]).strip(),
        docstring=own,
        params=params,
        is_method=False,
        is_async=False,
        is_generator=False,
        is_class=True,
        head_source="\n".join(head_lines[hk.span[0] - 1 : hk.span[1]]),
        base_source="\n".join(base_lines[bk.span[0] - 1 : bk.span[1]]),
        other_docs=tuple(text for owner, text in docs if text != own and calls_by_name(node.name, text)),
    )


def module_docs(tree: ast.Module | None) -> list[tuple[str, str]]:
    """The module's documentation outside its functions, as (class, text): the module docstring and bare
    string statements at module level (documentation blocks, attribute docstrings) with class "", and each
    top-level class's docstrings and strings with its name, in file order."""
    if tree is None:
        return []
    out: list[tuple[str, str]] = []
    owners: list[tuple[str, ast.Module | ast.ClassDef]] = [("", tree)]
    owners += [(n.name, n) for n in tree.body if isinstance(n, ast.ClassDef)]
    for owner, node in owners:
        for child in node.body:
            text = (
                child.value.value
                if isinstance(child, ast.Expr) and isinstance(child.value, ast.Constant)
                else None
            )
            if isinstance(text, str) and ">>>" in text:
                out.append((owner, inspect.cleandoc(text)))
    return out


def in_class(qualname: str) -> bool:
    """Defined in a class body (a method, static or not), so called as `something.name(...)`."""
    return "." in qualname and "<locals>" not in qualname


def calls_by_name(name: str, doc: str, method: bool = False) -> bool:
    """Does the text call `name(`? A method is called on something (`.name(`), a function is not."""
    before = r"\." if method else r"(?<![\w.])"
    return re.search(rf"{before}{re.escape(name)}\(", doc) is not None


def _record(
    path: str,
    hd: _Def,
    bd: _Def | None,
    kind: str,
    anchor: int,
    head_lines: list[str],
    base_lines: list[str],
    docs: list[tuple[str, str]],
) -> Changed:
    node = hd.node
    own = ast.get_docstring(node) or ""
    body_start = node.body[0].lineno if node.body else node.lineno
    signature = "\n".join(head_lines[node.lineno - 1 : max(node.lineno, body_start - 1)]).strip()
    params = parameters(node.args)
    is_method = hd.is_method and bool(params) and params[0].name in ("self", "cls")
    if is_method and any(pysyntax.decorator_name(d) == "staticmethod" for d in node.decorator_list):
        is_method = False
    gen = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own_nodes(node))
    return Changed(
        path=path,
        qualname=hd.qualname,
        kind=kind,
        head_span=hd.span,
        base_span=bd.span if bd else None,
        anchor=anchor,
        signature=signature,
        docstring=own,
        params=params,
        is_method=is_method,
        is_async=isinstance(node, ast.AsyncFunctionDef),
        is_generator=gen,
        is_context_manager=gen
        and any(pysyntax.decorator_name(d) == "contextmanager" for d in node.decorator_list),
        is_property=is_method
        and any(pysyntax.decorator_name(d) in ("property", "cached_property") for d in node.decorator_list),
        head_source="\n".join(head_lines[hd.span[0] - 1 : hd.span[1]]),
        base_source="\n".join(base_lines[bd.span[0] - 1 : bd.span[1]]) if bd else "",
        other_docs=tuple(
            text
            for owner, text in docs
            if text != own
            and (
                not in_class(hd.qualname) or owner in ("", hd.qualname.split(".", 1)[0])
            )  # not another class's
            and calls_by_name(node.name, text, in_class(hd.qualname))
        ),
    )


def parameters(a: ast.arguments) -> tuple[Param, ...]:
    def ann(x: ast.arg) -> str | None:
        return ast.unparse(x.annotation) if x.annotation is not None else None

    positional = [*a.posonlyargs, *a.args]
    n_defaults = len(a.defaults)
    out = [
        Param(x.arg, ann(x), i >= len(positional) - n_defaults, "positional")
        for i, x in enumerate(positional)
    ]
    if a.vararg:
        out.append(Param(a.vararg.arg, ann(a.vararg), True, "varargs"))
    out += [
        Param(x.arg, ann(x), d is not None, "keyword")
        for x, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
    ]
    if a.kwarg:
        out.append(Param(a.kwarg.arg, ann(a.kwarg), True, "varkw"))
    return tuple(out)


def _own_nodes(node: ast.AST) -> list[ast.AST]:
    """Nodes of a function body, not descending into nested functions, classes or lambdas."""
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(node))
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        out.append(n)
        stack.extend(ast.iter_child_nodes(n))
    return out


def int_literals(c: Changed) -> list[int]:
    """Integer constants in the callable's code at base and head (boundary values come from these)."""
    found: set[int] = set()
    for src in (c.head_source, c.base_source):
        try:
            tree = pysyntax.parse(_dedent(src))
        except (SyntaxError, ValueError):
            continue
        for n in ast.walk(tree):
            if isinstance(n, ast.Constant) and type(n.value) is int and abs(n.value) < 10_000:
                found.add(n.value)
    return sorted(found)


def _dedent(src: str) -> str:
    import textwrap

    return textwrap.dedent(src)
