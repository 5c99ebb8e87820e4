"""The change's test files: which test functions and files it edits (their calls at base and head had
different inputs, so they are not compared) and, parsed in the same pass, the definitions the added-test
check reads (addedtests.py). Only parsing happens here."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from ...change.diff import Diff, FileDiff
from .callables import Reader, _Def, _innermost, definitions, parse


@dataclass(frozen=True)
class ChangedTests:
    """The tests whose own code the change edits: their calls at base and head had different inputs, even
    where the arguments' reprs agree (a test that configures an app differently passes the same `app`)."""

    functions: frozenset[str] = frozenset()  # "path::Class.test_x" of edited test functions
    files: frozenset[str] = frozenset()  # test files edited outside any function (constants, fixtures)
    dirs: frozenset[str] = frozenset()  # folders whose conftest.py changed ("" = the repository root)

    def covers(self, test_id: str) -> bool:
        path, _, rest = test_id.partition("::")
        qual = rest.split("[", 1)[0].replace("::", ".")
        if path in self.files or f"{path}::{qual}" in self.functions:
            return True
        return any(d == "" or path.startswith(d + "/") for d in self.dirs)


@dataclass(frozen=True)
class ChangedTestFile:
    """One Python test file of the change with its definitions at base and head, parsed once for the
    edited tests (changed_tests) and the added ones (addedtests.added_tests)."""

    diff: FileDiff
    base: list[_Def]  # [] when added, or when it does not parse
    head: list[_Def]  # [] when deleted, or when it does not parse
    at_head: bool  # it is there at head (not deleted, not empty)
    base_code: frozenset[int] | None = None  # lines of statements outside functions, imports aside
    head_code: frozenset[int] | None = None  # ... at head (None: it does not parse, every line counts)


def changed_test_files(
    diff: Diff, read_base: Reader, read_head: Reader, is_test: Callable[[str], bool]
) -> tuple[ChangedTestFile, ...]:
    """The change's Python test files (conftest.py aside), each read and parsed once per side."""
    out: list[ChangedTestFile] = []
    for f in diff.files:
        if _is_conftest(f) or not f.path.endswith(".py") or not is_test(f.path):
            continue
        head = (read_head(f.path) if f.status != "deleted" else "") or ""
        base = (read_base(f.old_path) if f.status != "added" else "") or ""
        b, h = parse(base), parse(head)
        out.append(ChangedTestFile(f, definitions(b), definitions(h), bool(head), _code(b), _code(h)))
    return tuple(out)


def _code(tree: ast.Module | None) -> frozenset[int] | None:
    """The lines of the module's statements outside its functions, imports aside: a class's own lines
    (its header, decorators and attributes), not the blank lines between its methods. None for a module
    that does not parse."""
    if tree is None:
        return None
    lines: set[int] = set()

    def walk(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if isinstance(node, ast.ClassDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                lines.update(range(first, node.body[0].lineno))
                walk(node.body)
                continue
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))

    walk(tree.body)
    return frozenset(lines)


def changed_tests(diff: Diff, tests: tuple[ChangedTestFile, ...]) -> ChangedTests:
    """The test functions and files whose lines the change edits (`tests`: changed_test_files of the
    same diff), and the folders whose conftest.py it edits. Outside any function, a blank line, a comment
    or an import edits no test: adding or deleting a test function changes the blank lines around it,
    and the imports it needs, and the file's other tests still give the code the same inputs (one that
    used a deleted import fails at head, and the tests stage says so)."""
    functions: set[str] = set()
    files: set[str] = set()
    dirs = {f.path.rpartition("/")[0] for f in diff.files if _is_conftest(f)}
    for t in tests:
        f = t.diff
        for h in f.hunks:
            for ln in h.lines:
                if ln.kind == "+" and ln.new_no is not None:
                    d, code = _innermost(t.head, ln.new_no), _counts(t.head_code, ln.new_no)
                elif ln.kind == "-" and ln.old_no is not None:
                    d, code = _innermost(t.base, ln.old_no), _counts(t.base_code, ln.old_no)
                else:
                    continue
                if d is None and not code:  # a blank line, a comment, an import
                    continue
                if d is None:
                    files.add(f.path)
                else:
                    functions.add(f"{f.path}::{d.qualname.split('.<locals>', 1)[0]}")
    return ChangedTests(frozenset(functions), frozenset(files), frozenset(dirs))


def _counts(code: frozenset[int] | None, line: int) -> bool:
    return code is None or line in code


def _is_conftest(f: FileDiff) -> bool:
    """pytest's per-folder configuration: its edits count for the folder's tests (ChangedTests.dirs)."""
    return f.path.rpartition("/")[2] == "conftest.py"
