"""The tests a change adds, and the names their code uses: the author's own account of a new behaviour.

A pull request that changes what a function does on purpose usually says so in code as well as in words:
it adds a test that calls the function and asserts the new result. So a behaviour difference in a
callable that a test *added by the change* uses is accounted for by that test (judge.decide), with no
model asked and the test named in the summary. Only added test functions count: a test the change edits
to pass again is the pattern a reviewer distrusts ("the expectation changed to match"), and a test the
change deletes accounts for nothing. A name counts when the added test's code uses it as a plain name or
an attribute (`parse(...)`, `obj.parse`, `Parser(...)` for `Parser.__init__`); a dunder other than the
constructor's counts through its class's name.

Origin: a general reviewer's rule (a new test asserting the new behaviour), not a corpus case.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from ...change.diff import Diff
from .callables import Changed, Reader, definitions, parse


@dataclass(frozen=True)
class AddedTest:
    """One test function the change adds (it is not at base), and the names its code uses."""

    test: str  # "path::Class.test_x"
    names: frozenset[str]


def added_tests(
    diff: Diff, read_base: Reader, read_head: Reader, is_test: Callable[[str], bool]
) -> tuple[AddedTest, ...]:
    """Test functions (named test*) defined at head in the change's Python test files and not at base."""
    out: list[AddedTest] = []
    for f in diff.files:
        if not f.path.endswith(".py") or f.status == "deleted" or not is_test(f.path):
            continue
        head = read_head(f.path)
        if not head:
            continue
        base = (read_base(f.old_path) if f.status != "added" else "") or ""
        before = {d.qualname for d in definitions(parse(base))}
        for d in definitions(parse(head)):
            leaf = d.qualname.rsplit(".", 1)[-1]
            if d.qualname in before or not leaf.startswith("test") or "<locals>" in d.qualname:
                continue
            out.append(AddedTest(f"{f.path}::{d.qualname}", _names(d.node)))
    return tuple(out)


def _names(node: ast.AST) -> frozenset[str]:
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
    return frozenset(out)


def used_name(c: Changed) -> str:
    """The name a test uses to reach `c`: its own, or its class's for a constructor or another dunder."""
    parts = [p for p in c.qualname.split(".") if p != "<locals>"]
    leaf = parts[-1]
    if leaf.startswith("__") and leaf.endswith("__") and len(parts) > 1:
        return parts[-2]
    return leaf


def tested_by(c: Changed, tests: tuple[AddedTest, ...]) -> list[str]:
    """The added tests whose code uses `c`'s name (their ids)."""
    name = used_name(c)
    return [t.test for t in tests if name in t.names]


def account(c: Changed, tests: tuple[AddedTest, ...]) -> str | None:
    """Why a difference in `c` is intended when a test the change adds uses it; None when none does."""
    tested = tested_by(c, tests)
    if not tested:
        return None
    others = f" and {len(tested) - 1} more" if len(tested) > 1 else ""
    return f"the change adds a test that uses `{used_name(c)}`: `{tested[0]}`{others}"
