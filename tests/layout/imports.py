"""The import graph of `bot`, read from the source (nothing is imported): module -> the bot modules it
imports, at module level or inside functions; imports under `if TYPE_CHECKING:` are left out (they do not
run, and a record's type may name the stage that makes it)."""

from __future__ import annotations

import ast
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "bot"


def modules() -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _nodes(tree: ast.AST):  # type: ignore[no-untyped-def]
    """Every node, skipping the bodies of `if TYPE_CHECKING:`."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                todo += child.orelse
                continue
            todo.append(child)


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            subs = {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known}
            found |= subs if len(subs) == len(node.names) else {target, *subs}  # `from pkg import mod`
    return {m for m in found if m in known and m != name}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def chains(g: dict[str, set[str]], source: str, target: str, allowed: tuple[str, ...] = ()) -> list[str]:
    """Import chains from any module of `source` to any module of `target` (directly or through other
    modules; `allowed` target modules are not counted), one line each, the shortest per starting module."""
    out = []
    for start in sorted(m for m in g if within(m, source)):
        seen, todo = {start: [start]}, deque([start])
        while todo:
            here = todo.popleft()
            for nxt in sorted(g[here]):
                if nxt in seen or any(within(nxt, a) for a in allowed):
                    continue
                seen[nxt] = [*seen[here], nxt]
                if within(nxt, target):
                    out.append(" -> ".join(seen[nxt]))
                    todo.clear()
                    break
                todo.append(nxt)
    return out
