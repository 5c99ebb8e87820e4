"""Object inputs: instances of the project's own classes for parameters that take them.

A parameter without a literal type takes an instance of a project class when its type hint names the
class (`node: Node`, `Optional["Node"]`) or, without a hint, when its name does (`node`, `startnode`,
`head_node` -> `Node`; `nodes` -> a list of them). The classes come from the changed module and the modules
beside it, read as AST on the host; nothing is imported here. An instance is written as a constructor call
of literals (`Node(1, Node(2))`), which the sandboxed harness builds from each side's own class, so base
and head receive equal objects.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ... import pysyntax
from .callables import Param, parameters, parse

MAX_FILES = 40  # modules read for classes: the changed ones and those beside them


@dataclass(frozen=True)
class ProjectClass:
    """A top-level class of a project module (so its name is also its path inside the module)."""

    name: str
    path: str  # the module that defines it
    params: tuple[Param, ...]  # its __init__'s, without self (empty: it takes none)


@dataclass(frozen=True)
class Built:
    """An argument the harness builds: a constructor-call expression and the classes it uses."""

    text: str
    classes: tuple[ProjectClass, ...]

    def __repr__(self) -> str:
        return self.text


def project_classes(paths: Iterable[str], read: Callable[[str], str | None]) -> dict[str, ProjectClass]:
    """Top-level classes of the given modules, by name (the first definition of a name wins)."""
    out: dict[str, ProjectClass] = {}
    for path in list(dict.fromkeys(paths))[:MAX_FILES]:
        tree = parse(read(path))
        if tree is None:
            continue
        for node in tree.body:
            if not isinstance(node, ast.ClassDef) or node.name in out:
                continue
            init = next(
                (n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None
            )
            params = parameters(init.args)[1:] if init is not None else ()
            out[node.name] = ProjectClass(node.name, path, params)
    return out


def _hinted(annotation: str | None) -> str:
    """The class name a hint points at: `Node`, `"Node"`, `Optional[Node]`, `Node | None`, `mod.Node`."""
    if not annotation:
        return ""
    try:
        node = pysyntax.parse(annotation, mode="eval").body
    except SyntaxError:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _hinted(node.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [s for s in (node.left, node.right) if not (isinstance(s, ast.Constant) and s.value is None)]
        return _hinted(ast.unparse(sides[0])) if len(sides) == 1 else ""
    if isinstance(node, ast.Subscript) and ast.unparse(node.value).rsplit(".", 1)[-1] == "Optional":
        return _hinted(ast.unparse(node.slice))
    if isinstance(node, (ast.Name, ast.Attribute)):
        return ast.unparse(node).rsplit(".", 1)[-1]
    return ""


def class_for(p: Param, classes: dict[str, ProjectClass]) -> tuple[ProjectClass, bool] | None:
    """The project class a parameter takes and whether it takes a list of them; None if none."""
    hinted = _hinted(p.annotation)
    if hinted:
        return (classes[hinted], False) if hinted in classes else None
    if p.annotation is not None:
        return None
    name = p.name.lower()
    by_lower = {k.lower(): v for k, v in classes.items() if len(k) >= 3}
    longest_first = sorted(by_lower.items(), key=lambda kv: -len(kv[0]))
    stems = [(name, False)] + ([(name[:-1], True)] if name.endswith("s") else [])
    for stem, plural in stems:
        for low, cls in longest_first:
            if stem.endswith(low):  # `node`, `startnode`, `head_node`
                return cls, plural
    return None


def instances(cls: ProjectClass) -> list[Built]:
    """A few instances: `C()` when every argument has a default; `C(1)` and `C(2)` for a first argument; a
    chain `C(1, C(2))` through the first other argument that defaults to None (a successor, a parent)."""
    required = [p for p in cls.params if p.kind == "positional" and not p.has_default]
    positional = [p for p in cls.params if p.kind == "positional"]
    if len(required) > 1:
        return []  # more than one value to guess: not built
    out: list[str] = []
    if not required:
        out.append(f"{cls.name}()")
    if positional:
        out += [f"{cls.name}(1)", f"{cls.name}(2)"]
    if len(positional) > 1 and positional[1].has_default:
        out.append(f"{cls.name}(1, {cls.name}(2))")
        out.append(f"{cls.name}(1, {cls.name}(2, {cls.name}(3)))")
    return [Built(t, (cls,)) for t in dict.fromkeys(out)]


def values(p: Param, classes: dict[str, ProjectClass]) -> list[Built]:
    """Values of a project class for one parameter ([] when it takes none)."""
    found = class_for(p, classes)
    if found is None:
        return []
    cls, plural = found
    one = instances(cls)
    if not plural:
        return one
    lists = [[], one[-1:], one[:2]] if one else []
    return [Built("[" + ", ".join(b.text for b in xs) + "]", (cls,)) for xs in lists]
