"""`ast.parse` and `ast.literal_eval` that survive CPython 3.11's shared AST state.

On 3.11 the AST constructor keeps one recursion counter per interpreter; when two threads build trees at
the same time (the review's stages run in threads), one of them can fail
with `SystemError: AST constructor recursion depth mismatch` although its source is fine
(python/cpython gh-106905). That error is retried here; every other error is the caller's, as before.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Iterator, Mapping
from typing import Any

_TRIES = 5
LITERAL_CHARS = 4096  # the longest text literal_eval parses: values come from the sandbox and the model


def parse(source: str, mode: str = "exec") -> Any:
    """`ast.parse(source, mode=mode)` (SyntaxError, ValueError and the rest raised as ast raises them)."""
    for attempt in range(_TRIES):
        try:
            return ast.parse(source, mode=mode)
        except SystemError as exc:
            if "recursion depth mismatch" not in str(exc) or attempt == _TRIES - 1:
                raise
            time.sleep(0.01 * (attempt + 1))
    raise AssertionError("unreachable")


def literal_eval(node_or_string: str | ast.AST) -> Any:
    """`ast.literal_eval`, its source parsed through `parse`; ValueError for text over LITERAL_CHARS (a
    forged 10 MB repr took the parser to 3.9 GB)."""
    if isinstance(node_or_string, str):
        if len(node_or_string) > LITERAL_CHARS:
            raise ValueError(f"literal longer than {LITERAL_CHARS} characters")
        node_or_string = parse(node_or_string.lstrip(" \t"), mode="eval")
    return ast.literal_eval(node_or_string)


def python_files(texts: Mapping[str, str]) -> Iterator[tuple[str, str, Any]]:
    """(path, text, tree) for each `.py` file of `texts` that parses; the others are left out (a scanner
    reading the AST has nothing to say about them)."""
    for path, text in texts.items():
        if not path.endswith(".py"):
            continue
        try:
            tree = parse(text)
        except (SyntaxError, ValueError, RecursionError):
            continue
        yield path, text, tree


def decorator_name(d: ast.expr) -> str:
    """`dataclass` for `@dataclass`, `attr` for `@x.attr`; "" for any other form (a call included: the
    callers that accept `@dataclass(frozen=True)` pass its `func`)."""
    if isinstance(d, ast.Name):
        return d.id
    if isinstance(d, ast.Attribute):
        return d.attr
    return ""
