"""An attribute of `self` that a method reads and its class never defines: pylint's E1101 (no-member) in its
surest case, read from the AST. The line raises AttributeError whenever it runs, whatever the input, and
the tests that never take that path keep passing.

Only where the whole class is known: its bases are classes of the same file or built-in types, it has no
metaclass and is none, no decorator but the ones that only add what the class body names (dataclass,
attrs, total_ordering), nothing that makes attributes up at run time (`__getattr__`, `__getattribute__`,
`__setattr__`, `setattr(…)`, `vars(…)`, `__dict__`), and it is not an abstract or mixin class (a name
ending in `Mixin` or starting with `Base`/`Abstract`, a method that raises NotImplementedError, or no
`__init__`/`__new__` in it or its bases: `_concrete`, or more than MAX_MISSING names missing), whose
subclasses or partners elsewhere supply what it reads. Defined counts: what the class body binds, an
attribute the class stores on anything (`self.x = …`) or the file stores on the class by name (`Cls.x =
…`), what a subclass in the file defines, what a built-in base has, dunder names, and a name the class
spells as a string (`getattr(self, "x", None)`). A read under `try: … except AttributeError` is left
alone. Only what the change introduces is reported (`scanners.introduced`: added lines, not already
flagged at base).

Origin: the lint (a general oracle); read while studying the tuning miss dateutil af20fd4 (`self.month`
on a `list` subclass that keeps the month at `self[self.mstridx]`: AttributeError on a path no test
takes). Measured on project history with bench/scanhistory.py (docs/quality.md).
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path, PurePosixPath

from ... import pysyntax
from ...config import ScannersConfig
from ...types import Finding

RULE = "missing-attribute"
_PLAIN_DECORATORS = {"dataclass", "s", "attrs", "define", "frozen", "mutable", "total_ordering"}
_DYNAMIC = {"__getattr__", "__getattribute__", "__setattr__"}
_Fn = (ast.FunctionDef, ast.AsyncFunctionDef)
# a class that reads more attributes it never defines than this gets them from a class this file does not
# show (PyYAML's `Scanner` reads `peek`, `get_mark`, `prefix`, … from the `Reader` its loaders combine it
# with): not a typo, left alone. Origin: tablib's vendored PyYAML, in bench/scanhistory.py's run.
MAX_MISSING = 2


def scan(texts: dict[str, str], root: Path, cfg: ScannersConfig) -> list[Finding]:
    return [
        _finding(path, node, cls)
        for path, _, tree in pysyntax.python_files(texts)
        for node, cls in missing(tree, path)
    ]


def missing(tree: ast.AST, path: str = "m.py") -> list[tuple[ast.Attribute, str]]:
    """(the `self.x` read, its class's name) for each read of an attribute the class never defines."""
    classes = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    stored = _stored_on_names(tree)
    found = []
    for cls in classes.values():
        names = _defined(cls, classes, set()) if _concrete(cls, classes, path) else None
        if names is None:
            continue
        known = names | stored.get(cls.name, set())
        reads = [n for m in cls.body for n in _self_reads(m)]
        mine = [
            n
            for n in reads
            if n.attr not in known and not (n.attr.startswith("__") and n.attr.endswith("__"))
        ]
        if len({n.attr for n in mine}) <= MAX_MISSING:
            found += [(n, cls.name) for n in mine]
    return found


def _defined(cls: ast.ClassDef, classes: dict[str, ast.ClassDef], seen: set[str]) -> set[str] | None:
    """The names instances of `cls` have; None when the class is not wholly known (see the docstring)."""
    if cls.name in seen:
        return set()
    seen.add(cls.name)
    if (
        cls.keywords
        or cls.name.endswith("Mixin")
        or cls.name.startswith(("Base", "Abstract", "_Base"))
        or any(_last(d) not in _PLAIN_DECORATORS for d in cls.decorator_list)
        or _dynamic(cls)
    ):
        return None
    names = _body_names(cls.body) | set(dir(object))
    for node in ast.walk(cls):  # stored on anything in the class (`self.x = …`, `other.x = …`), or spelled
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)  # `getattr(self, "x", None)`
    for base in cls.bases:
        kind = getattr(builtins, base.id, None) if isinstance(base, ast.Name) else None
        if isinstance(base, ast.Name) and base.id in classes and base.id != cls.name:
            more = _defined(classes[base.id], classes, seen)
        elif isinstance(kind, type) and not issubclass(kind, type):  # a metaclass' self is a class
            more = set(dir(kind))
        else:
            return None
        if more is None:
            return None
        names |= more
    for other in classes.values():  # a subclass in the file: what it defines may be what this one reads
        if other is not cls and any(isinstance(b, ast.Name) and b.id == cls.name for b in other.bases):
            more = _defined(other, classes, set(seen))
            if more is None:
                return None
            names |= more
    return names


def _concrete(cls: ast.ClassDef, classes: dict[str, ast.ClassDef], path: str) -> bool:
    """A class meant to be instantiated as it is: it (or a base in the file) defines `__init__` or
    `__new__`, it is a dataclass or attrs class, it extends a built-in type, or it is a test class in a
    test file. A class with none of these is usually a mixin or an abstract base (tqdm's `Comparable`,
    pyparsing's `TestParseResultsAsserts`): what it reads, the classes that use it define."""
    name = PurePosixPath(path).name
    if (name.startswith("test_") or name.endswith("_test.py") or "/tests/" in f"/{path}") and (
        cls.name.startswith("Test") or cls.name.endswith(("Test", "Tests"))
    ):
        return True
    seen: set[str] = set()
    todo = [cls]
    while todo:
        c = todo.pop()
        if c.name in seen:
            continue
        seen.add(c.name)
        if any(isinstance(f, _Fn) and f.name in ("__init__", "__new__") for f in c.body) or c.decorator_list:
            return True
        for b in c.bases:
            if isinstance(b, ast.Name) and b.id in classes:
                todo.append(classes[b.id])
            elif (
                isinstance(b, ast.Name)
                and b.id != "object"
                and isinstance(getattr(builtins, b.id, None), type)
            ):
                return True
    return False


def _stored_on_names(tree: ast.AST) -> dict[str, set[str]]:
    """Attributes the file stores on a bare name, by that name (`_ymd.month = …`: a class's, by name)."""
    out: dict[str, set[str]] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load) and isinstance(n.value, ast.Name):
            out.setdefault(n.value.id, set()).add(n.attr)
    return out


def _dynamic(cls: ast.ClassDef) -> bool:
    """Attributes made up at run time, or an abstract method its subclasses supply."""
    for node in ast.walk(cls):
        if isinstance(node, _Fn) and node.name in _DYNAMIC:
            return True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "vars")
        ):
            return True
        if isinstance(node, (ast.Attribute, ast.Name)) and "__dict__" in (
            getattr(node, "attr", ""),
            getattr(node, "id", ""),
        ):
            return True
        if (
            isinstance(node, ast.Raise)
            and node.exc is not None
            and "NotImplementedError" in ast.unparse(node.exc)
        ):
            return True
    return False


def _body_names(stmts: list[ast.stmt]) -> set[str]:
    """What a class body binds, through `if`/`try`/`with`/`for` blocks."""
    names: set[str] = set()
    for st in stmts:
        if isinstance(st, (*_Fn, ast.ClassDef)):
            names.add(st.name)
        elif isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For)):
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(st, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in st.names}
        if isinstance(st, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            inner = [*st.body, *getattr(st, "orelse", []), *getattr(st, "finalbody", [])]
            inner += [s for h in getattr(st, "handlers", []) for s in h.body]
            names |= _body_names(inner)
    return names


def _self_reads(method: ast.stmt) -> list[ast.Attribute]:
    """`self.x` loads in an instance method (its first parameter, never rebound), not inside a nested class
    or a nested function that takes its own `self`, nor under `except AttributeError`."""
    if not isinstance(method, _Fn) or not method.args.args:
        return []
    if any(_last(d) in ("staticmethod", "classmethod") for d in method.decorator_list):
        return []
    me = method.args.args[0].arg
    out: list[ast.Attribute] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                continue
            if isinstance(child, (*_Fn, ast.Lambda)) and me in {a.arg for a in child.args.args}:
                continue
            if isinstance(child, ast.Try) and any(_catches(h) for h in child.handlers):
                continue
            if isinstance(child, ast.Name) and child.id == me and not isinstance(child.ctx, ast.Load):
                raise _Rebound
            if (
                isinstance(child, ast.Attribute)
                and isinstance(child.ctx, ast.Load)
                and isinstance(child.value, ast.Name)
                and child.value.id == me
            ):
                out.append(child)
            visit(child)

    try:
        visit(method)
    except _Rebound:
        return []
    return out


def _catches(handler: ast.ExceptHandler) -> bool:
    """The handler would catch an AttributeError (a bare `except`, `Exception`, `BaseException`)."""
    if handler.type is None:
        return True
    text = ast.unparse(handler.type)
    return any(name in text for name in ("AttributeError", "Exception", "BaseException"))


class _Rebound(Exception):
    """The method assigns its `self`: what it reads is no longer the instance."""


def _last(node: ast.expr) -> str:
    """`dataclass` for `@dataclass`, `@dataclasses.dataclass(frozen=True)`, `@attr.s`."""
    return pysyntax.decorator_name(node.func if isinstance(node, ast.Call) else node)


def _finding(path: str, node: ast.Attribute, cls: str) -> Finding:
    return Finding(
        path=path,
        line=node.lineno,
        message=(
            f"`self.{node.attr}` is read here, but class `{cls}` (and its bases in this file) never "
            f"defines `{node.attr}`: this line raises AttributeError whenever it runs (a renamed or "
            "misspelled attribute?)."
        ),
        severity="medium",
        category="bug",
        source="attributes",
        rule_id=RULE,
    )
