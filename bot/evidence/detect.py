"""Which command runs a project's tests: `tests.command` from the config, else detected from the tree's
files (pytest, npm test, go test, cargo test, mvn test, make test); and which paths are tests."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import fsguard
from ..change import git
from ..config import Config
from ..types import PrereviewError

# pytest's unraisable-exception plugin turns an exception Python could not raise (a generator or an object
# finalised by the garbage collector) into a warning charged to whichever test is running when the collector
# runs; under the common `filterwarnings = error` that fails an unrelated test, or, at the session's end, is
# an INTERNALERROR that loses every result (pytest #10404, #14096). Results are compared test by test, so
# the interpreter's own hook is kept (the exception printed, no test failed). Origin: a flask tuning commit
# whose base lost all 494 results that way (bench/realworld.py), and those pytest issues.
# A test module that does not import (a test-only package the tree never declares) stops pytest before any
# test runs ("Interrupted: 1 error during collection"): the other modules run, the module that did not
# import is named in a note (envnotes.uncollected_note) and compared like a failing test. Origin: a
# dateutil tuning commit whose `test_utils.py` imports the undeclared freezegun, and all 1,600 tests
# were lost.
PYTEST = (
    "python",
    "-m",
    "pytest",
    "-q",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:unraisableexception",
    "--tb=short",
    "--continue-on-collection-errors",
)
PYTEST_MARKERS = ("pytest.ini", "conftest.py", "tox.ini")


def detect_command(files: Sequence[str], read: Callable[[str], str | None], cfg: Config) -> list[str] | None:
    """The test command for a tree (its file list and a reader): config `test_command`, else detected from
    the files; None = no tests to run."""
    if not cfg.tests.enabled:
        return None
    if cfg.test_cmd:
        try:
            argv = shlex.split(cfg.test_cmd)
        except ValueError as exc:
            raise PrereviewError(
                f"test_command is not a valid command line ({exc}); fix the quoting"
            ) from None
        return argv or None
    top = set(files)
    if _is_pytest_project(files, read):
        return list(PYTEST)
    if "package.json" in top:
        try:
            scripts = json.loads(read("package.json") or "{}").get("scripts", {})
        except (json.JSONDecodeError, AttributeError):
            scripts = {}
        if isinstance(scripts, dict) and "test" in scripts:
            return ["npm", "test", "--silent"]
    for marker, argv in (
        ("go.mod", ["go", "test", "./..."]),
        ("Cargo.toml", ["cargo", "test"]),
        ("pom.xml", ["mvn", "-q", "test"]),
    ):
        if marker in top:
            return argv
    if modules := go_modules(files):  # Go modules below the root, none at it: each module's packages
        return ["go", "test", *(f"./{m}/..." for m in modules)]
    if "Makefile" in top and re.search(r"^test\s*:", read("Makefile") or "", re.M):
        return ["make", "test"]
    return None


GO_MODULES_MAX = 20


def go_modules(files: Sequence[str]) -> list[str]:
    """The folders of a tree's Go modules when there is none at its root (`go.mod` below it; vendored,
    testdata and hidden folders left out), at most GO_MODULES_MAX, shallowest first."""
    if "go.mod" in set(files):
        return []
    skip = {"vendor", "testdata", "node_modules", "third_party"}
    found = [
        str(Path(f).parent)
        for f in files
        if Path(f).name == "go.mod"
        and not (set(Path(f).parts[:-1]) & skip)
        and not any(p.startswith((".", "_")) for p in Path(f).parts[:-1])
    ]
    return sorted(found, key=lambda d: (d.count("/"), d))[:GO_MODULES_MAX]


def none_found(files: Sequence[str]) -> str:
    """The note for a tree where no test command was detected: what was looked for, and the fix. A Go
    tree from before modules (test files, no go.mod anywhere) is named as such: `go test` needs a module."""
    if any(f.endswith("_test.go") for f in files) and not any(Path(f).name == "go.mod" for f in files):
        return (
            "Tests not run: the tree has Go tests but no go.mod (it predates Go modules), and `go test` "
            "needs one; add a go.mod (`go mod init <module path>`) or set `test_command`."
        )
    return (
        "Tests not run: no test command found (looked for pytest's configuration or test files, a "
        "package.json `test` script, go.mod, Cargo.toml, pom.xml and a Makefile `test:` target); "
        "set `test_command` to run the project's tests."
    )


def detect_at(repo: Path, rev: str, cfg: Config) -> list[str] | None:
    return detect_command(tree_files(repo, rev, cfg), lambda p: git.show(repo, rev, p), cfg)


def tree_files(repo: Path, rev: str, cfg: Config) -> list[str]:
    """The paths of the tree at `rev` ([] when the tests are off: nothing to detect)."""
    return git.git(repo, "ls-tree", "-r", "--name-only", rev).splitlines() if cfg.tests.enabled else []


def detect_in_dir(root: Path, cfg: Config) -> list[str] | None:
    files = [p for p in fsguard.files(root) if ".git" not in Path(p).parts]  # symlinks never followed

    def read(p: str) -> str | None:
        try:
            return fsguard.read_text(root, p)
        except (OSError, fsguard.UnsafePath):
            return None

    return detect_command(files, read, cfg)


def _is_pytest_project(files: Sequence[str], read: Callable[[str], str | None]) -> bool:
    top = set(files)
    if any(m in top for m in PYTEST_MARKERS):
        return True
    for cfg_file, marker in (("pyproject.toml", "[tool.pytest"), ("setup.cfg", "[tool:pytest]")):
        if cfg_file in top and marker in (read(cfg_file) or ""):
            return True
    return any(re.match(r"(test_.*|.*_test)\.py$", Path(f).name) for f in files)
