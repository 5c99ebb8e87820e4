"""The callables a changed module-level value reaches: a regex, a table or a constant the change edits
changes what the functions that read it do, though no line of theirs changed.

From the AST at head only (nothing is imported or run): the module-level assignments whose lines the
change adds to, then the module-level names built from them (`VALIDATORS = (NAME_RE, VALUE_RE)`), then
the same names imported by the other modules of the package (`from ._internal import VALIDATORS`,
`from ..sansio.app import X`, or read as attributes of the module imported whole: `from . import consts`
then `consts.LIMIT`), and finally the functions and methods of those modules that read one of
those names. Each becomes a
`Changed` of kind "reached": compared like a changed callable, reported on the changed assignment's line.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import replace

from ...change.diff import Diff
from .callables import Changed, Reader, _record, definitions, module_docs, parse

MAX_REACHED = 6  # callables per change: the closest first (the changed module's, its folder's, the package's)


def reached_callables(
    diff: Diff,
    read_head: Reader,
    package_modules: Callable[[str], Sequence[str]],
    *,
    is_test: Callable[[str], bool],
    changed: Sequence[Changed] = (),
) -> list[Changed]:
    """Callables that read a module-level value the change edits (those in `changed` left out)."""
    have = {c.key for c in changed}
    out: list[Changed] = []
    for f in diff.files:
        if not f.path.endswith(".py") or f.status == "deleted" or f.is_binary or is_test(f.path):
            continue
        source = read_head(f.path)
        tree = parse(source)
        if tree is None or source is None:
            continue
        added = {ln.new_no for h in f.hunks for ln in h.lines if ln.kind == "+" and ln.new_no is not None}
        edited = _edited_names(tree, added)
        if not edited:
            continue
        names = _closure(tree, set(edited))
        modules = [f.path, *(p for p in package_modules(f.path) if p != f.path and not is_test(p))]
        for path in modules:
            text = source if path == f.path else read_head(path)
            mod = tree if path == f.path else parse(text)
            if mod is None or text is None:
                continue
            here = names if path == f.path else _closure(mod, _imported(mod, names, f.path, path))
            if not here:
                continue
            for c in _readers(path, text, mod, here):
                if c.key in have or len(out) >= MAX_REACHED:
                    continue
                have.add(c.key)  # c.via is an edited name: `here` maps every name to one
                out.append(replace(c, report_path=f.path, anchor=edited[c.via]))
    return out


def _targets(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Assign):
        found = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
        found = [node.target]
    else:
        return []
    return [n.id for t in found for n in ast.walk(t) if isinstance(n, ast.Name)]


def _edited_names(tree: ast.Module, added: set[int]) -> dict[str, int]:
    """Module-level names whose assignment has an added line: name -> the first such line (dunder names,
    a version bump's `__version__`, are metadata: not followed)."""
    out: dict[str, int] = {}
    for node in tree.body:
        lines = set(range(node.lineno, (node.end_lineno or node.lineno) + 1)) & added
        if lines:
            for name in _targets(node):
                if not (name.startswith("__") and name.endswith("__")):  # __version__, __all__: metadata
                    out.setdefault(name, min(lines))
    return out


def _reads(node: ast.AST, skip: set[int] | None = None) -> set[str]:
    """Names read, and `module.NAME` for attributes of a plain name (see _imported); nodes whose id is in
    `skip` left out."""
    skip = skip or set()
    names = {
        n.id
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in skip
    }
    return names | {
        f"{n.value.id}.{n.attr}"
        for n in ast.walk(node)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and id(n) not in skip
    }


def _reads_at_run_time(node: ast.AST) -> set[str]:
    """Names a function reads when it runs: not those only in its annotations (an edited type alias,
    `JsonType = …`, changes no function that is merely hinted with it)."""
    hints: set[int] = set()
    for n in ast.walk(node):
        found: list[ast.AST | None] = []
        if isinstance(n, ast.arg):
            found.append(n.annotation)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(n.returns)
        elif isinstance(n, ast.AnnAssign):
            found.append(n.annotation)
        hints |= {id(x) for a in found if a is not None for x in ast.walk(a)}
    return _reads(node, hints)


def _closure(tree: ast.Module, names: set[str] | dict[str, str]) -> dict[str, str]:
    """Each name built, directly or not, from `names` at module level -> the edited name it comes from
    (`names` maps a name to its own origin, or is a set of edited names)."""
    origin = dict(names) if isinstance(names, dict) else {n: n for n in names}
    grew = True
    while grew:
        grew = False
        for node in tree.body:
            value = getattr(node, "value", None)
            if value is None:
                continue
            hit = next((origin[r] for r in sorted(_reads(value)) if r in origin), None)
            if hit is None:
                continue
            for t in _targets(node):
                if t not in origin:
                    origin[t] = hit
                    grew = True
    return origin


def _imported(tree: ast.Module, names: dict[str, str], source_path: str, path: str) -> dict[str, str]:
    """Names `path`'s module imports from the module at `source_path` that are in `names`: the name as
    bound there -> the edited name it comes from. The module itself imported under a name
    (`from . import consts`, `import pkg.consts as c`) makes its attributes such names (`consts.LIMIT`)."""
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            if _imports_from(node.level, node.module or "", path, source_path):
                out |= {a.asname or a.name: names[a.name] for a in node.names if a.name in names}
            for a in node.names:  # `from pkg import consts`: a module of the package, by name
                sub = f"{node.module}.{a.name}" if node.module else a.name
                if a.name != "*" and _imports_from(node.level, sub, path, source_path):
                    out |= _as_attributes(a.asname or a.name, names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and _imports_from(0, a.name, path, source_path):
                    out |= _as_attributes(a.asname, names)
    return out


def _as_attributes(module: str, names: dict[str, str]) -> dict[str, str]:
    """`names` as read through the module bound to `module`: `consts.LIMIT` -> its edited name."""
    return {f"{module}.{k}": v for k, v in names.items() if "." not in k}


def _imports_from(level: int, module: str, path: str, source_path: str) -> bool:
    """Does an import of `module` (`level` dots before it) in the module at `path` name the module at
    `source_path`? Relative imports resolve against `path`'s folder (`..` one up); absolute ones match the
    end of the dotted path (`flask.sansio.app` is `src/flask/sansio/app.py`)."""
    source = source_path[:-3].removesuffix("/__init__")
    if level:
        parts = path.split("/")[:-1]
        up = level - 1
        if up > len(parts):
            return False
        target = [*parts[: len(parts) - up], *(module.split(".") if module else [])]
        return "/".join(target) == source
    dotted = source.replace("/", ".")
    return bool(module) and (dotted == module or dotted.endswith("." + module))


def _readers(path: str, text: str, tree: ast.Module, names: dict[str, str]) -> list[Changed]:
    """The module's functions and methods (not nested ones) that read one of `names`."""
    out: list[Changed] = []
    lines = text.splitlines()
    docs = module_docs(tree)
    for d in definitions(tree):
        if "<locals>" in d.qualname:
            continue
        hit = next((r for r in sorted(_reads_at_run_time(d.node)) if r in names), None)
        if hit is None:
            continue
        c = _record(path, d, d, "reached", d.node.lineno, lines, lines, docs)
        out.append(replace(c, via=names[hit]))
    return out
