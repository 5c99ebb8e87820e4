"""Code that can never run: statements after a `return`, `raise`, `continue` or `break` in the same block,
or after a compound statement every branch of which ends that way (pylint's W0101, read from the AST).

A change that leaves code behind a `return` (a `def` indented one level too deep, a line added after the
early exit) almost always lost what that code was meant to do; nothing at run time says so, and tests
that never needed it keep passing. Python only; the finding spans the exit and the code behind it.
Statements that are unreachable on purpose are left alone: `pass`, `...`, a string, a `yield` (it
makes the function a generator), and code whose first line says `pragma: no cover` (the author knows it
never runs).

Origin: the lint (a general oracle); read while studying the tuning miss dateutil ea7f441 (a `def`
indented into the method above, after its returns). Measured on project history with
bench/scanhistory.py (docs/quality.md).
"""

from __future__ import annotations

import ast
from pathlib import Path

from ... import pysyntax
from ...config import ScannersConfig
from ...types import Finding

RULE = "unreachable-code"


def scan(texts: dict[str, str], root: Path, cfg: ScannersConfig) -> list[Finding]:
    out: list[Finding] = []
    for path, text, tree in pysyntax.python_files(texts):
        lines = text.splitlines()
        out += [_finding(path, exit_, dead) for exit_, dead in dead_code(tree) if not _marked(lines, dead[0])]
    return out


def dead_code(tree: ast.AST) -> list[tuple[ast.stmt, list[ast.stmt]]]:
    """(the statement that leaves the block, the statements after it) for every block with dead code. The
    walk reaches every node that holds a block, an `except` handler's and a `match` case's included."""
    found: list[tuple[ast.stmt, list[ast.stmt]]] = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                found += _in_block(block)
    return found


def _in_block(block: list[ast.stmt]) -> list[tuple[ast.stmt, list[ast.stmt]]]:
    for i, stmt in enumerate(block[:-1]):
        if _leaves(stmt):
            dead = [s for s in block[i + 1 :] if not _on_purpose(s)]
            return [(stmt, dead)] if dead else []
    return []


def _leaves(stmt: ast.stmt) -> bool:
    """Control never goes on to the next statement (conservatively: a `with` may swallow a raise, a loop
    may end, so neither counts)."""
    if isinstance(stmt, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
        return True
    if isinstance(stmt, ast.If):
        return bool(stmt.orelse) and _ends(stmt.body) and _ends(stmt.orelse)
    if isinstance(stmt, ast.Try) or (hasattr(ast, "TryStar") and isinstance(stmt, ast.TryStar)):
        if stmt.finalbody and _ends(stmt.finalbody):
            return True
        done = _ends(stmt.body) or bool(stmt.orelse) and _ends(stmt.orelse)
        return done and bool(stmt.handlers) and all(_ends(h.body) for h in stmt.handlers)
    return False


def _ends(block: list[ast.stmt]) -> bool:
    return bool(block) and _leaves(block[-1])


def _on_purpose(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Pass):
        return True
    if isinstance(stmt, ast.Expr):
        return isinstance(stmt.value, (ast.Yield, ast.YieldFrom, ast.Constant))
    return False


def _marked(lines: list[str], stmt: ast.stmt) -> bool:
    """The dead code's first line tells coverage it never runs: on purpose."""
    return 0 < stmt.lineno <= len(lines) and "pragma: no cover" in lines[stmt.lineno - 1]


def _what(stmt: ast.stmt) -> str:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        kind = "class" if isinstance(stmt, ast.ClassDef) else "def"
        return f"`{kind} {stmt.name}`"
    return "the code"


def _exit(stmt: ast.stmt) -> str:
    if isinstance(stmt, ast.Return):
        return "a `return`"
    if isinstance(stmt, ast.Raise):
        return "a `raise`"
    if isinstance(stmt, (ast.Continue, ast.Break)):
        return f"a `{type(stmt).__name__.lower()}`"
    kind = "an `if`" if isinstance(stmt, ast.If) else "a `try`"
    return f"{kind} every branch of which returns or raises"


def _finding(path: str, exit_: ast.stmt, dead: list[ast.stmt]) -> Finding:
    end = max(getattr(s, "end_lineno", None) or s.lineno for s in dead)
    what = _what(dead[0])
    return Finding(
        path=path,
        line=exit_.lineno,
        end_line=end if end > exit_.lineno else None,
        message=(
            f"Unreachable code: {what} at line {dead[0].lineno} comes after {_exit(exit_)} in the same "
            "block, so it never runs (check its indentation, or whether the exit belongs further down)."
        ),
        severity="medium",
        category="bug",
        cwe="CWE-561",
        source="unreachable",
        rule_id=RULE,
    )
