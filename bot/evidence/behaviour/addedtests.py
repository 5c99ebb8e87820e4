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
from dataclasses import dataclass

from .callables import Changed
from .testfiles import ChangedTestFile


@dataclass(frozen=True)
class AddedTest:
    """One test function the change adds (it is not at base), and the names its code uses."""

    test: str  # "path::Class.test_x"
    names: frozenset[str]


def added_tests(tests: tuple[ChangedTestFile, ...]) -> tuple[AddedTest, ...]:
    """Test functions (named test*) defined at head in the change's Python test files (`tests`:
    testfiles.changed_test_files) and not at base."""
    out: list[AddedTest] = []
    for t in tests:
        if not t.at_head:
            continue
        before = {d.qualname for d in t.base}
        for d in t.head:
            leaf = d.qualname.rsplit(".", 1)[-1]
            if d.qualname in before or not leaf.startswith("test") or "<locals>" in d.qualname:
                continue
            out.append(AddedTest(f"{t.diff.path}::{d.qualname}", _names(d.node)))
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
