"""Which of a Python project's dependency sets run its tests: the test set of each source (extras,
dependency groups, requirement files, nox sessions), `dev` only where a source has no test set, and
never the docs/lint/typing sets — the smallest set, without the sphinx/mypy/pre-commit pins that no
longer build on a newer Python."""

from __future__ import annotations

import ast
import re
from typing import Any

from .. import pysyntax


def norm(name: str) -> str:
    """PEP 503 normalized distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


# a source (extras, groups, requirement files) that has a test set is read for it alone: its `dev` set
# (docs, linters, type checkers, old pins that no longer build) is only the fallback
TEST_ONLY = ("test", "tests", "testing")

TEST_SET = re.compile(
    r"(^|/|[-_.])(test|tests|testing)([-_.][^/]*)?\.(txt|in)$|^(test|tests)[-_]requirements"
)
DEV_SET = re.compile(r"(^|/|[-_.])(dev|ci)([-_.][^/]*)?\.(txt|in)$")
NOT_TESTS = re.compile(  # docs, linters, type checkers, release tools: never needed to run the tests
    r"(^|/|[-_.])(docs?|documentation|lint|linting|typing|types|mypy|style|release|publish|benchmarks?)"
    r"([-_.][^/]*)?\.(txt|in)$"
)


def test_sets(source: Any, explicit: set[str]) -> list[str]:
    """The sets of one source (extras, dependency groups) that hold test dependencies: those named
    explicitly, and `test`/`tests`/`testing` — or `dev` when the source has none of those."""
    if not isinstance(source, dict):
        return []
    names = {norm(k): k for k in source if isinstance(k, str)}
    wanted = [n for n in TEST_ONLY if n in names] or (["dev"] if "dev" in names else [])
    return [names[n] for n in sorted({*wanted, *(norm(e) for e in explicit)}) if n in names]


def nox_test_sessions(text: str) -> str:
    """The source of a noxfile's test sessions (a function or `name=` with "test" in it); the whole
    file when none is named so or it does not parse (docs and lint sessions install what tests never
    need)."""
    try:
        tree = pysyntax.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return text
    chosen = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            names = [node.name] + [
                kw.value.value
                for d in node.decorator_list
                if isinstance(d, ast.Call)
                for kw in d.keywords
                if kw.arg == "name" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str)
            ]
            if any("test" in n.lower() for n in names):
                chosen.append(ast.get_source_segment(text, node) or "")
    return "\n".join(chosen) if chosen else text
