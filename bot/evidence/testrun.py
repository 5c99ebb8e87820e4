"""The reviewed project's own tests: detect the command, run it at base and head in a sandbox, compare.

Tests run in scratch copies (`git archive` of a commit; the reviewed repository is never touched), results
are cached per commit + command, and tests that the change breaks become findings on the diff lines most
likely responsible (localized from the failure output's stack frames and the diff).
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..change import git
from ..change.diff import Diff, FileDiff
from ..config import Config
from ..sandbox import RunResult, Sandbox
from ..types import Finding, PrereviewError

if TYPE_CHECKING:
    from .projectenv import ProjectEnv

PYTEST = ("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=short")
PYTEST_MARKERS = ("pytest.ini", "conftest.py", "tox.ini")
OUTPUT_KEPT = 20_000  # characters of a run's output kept for localization and prompts


@dataclass(frozen=True)
class TestRun:
    """One run of the test command on one tree."""

    __test__ = False  # not a pytest test class

    command: tuple[str, ...]
    returncode: int
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    failing: tuple[str, ...] = ()  # ids of failed/erroring tests, as the runner prints them
    output: str = ""  # the tail of stdout+stderr
    timed_out: bool = False
    killed_reason: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def bad(self) -> int:
        return self.failed + self.errors

    def summary(self) -> str:
        if self.timed_out:
            return f"timed out after {self.seconds:.0f}s"
        parts = [
            f"{n} {w}"
            for n, w in ((self.passed, "passed"), (self.failed, "failed"), (self.errors, "errors"))
            if n
        ]
        if parts:
            return ", ".join(parts)
        if self.returncode == 124:  # coreutils `timeout` in the test command
            return "timed out (exit code 124)"
        return "passed" if self.ok else f"failed (exit code {self.returncode})"


# ---------------------------------------------------------------- which command


def detect_command(files: Sequence[str], read: Callable[[str], str | None], cfg: Config) -> list[str] | None:
    """The test command for a tree (its file list and a reader): config `test_command`, else detected from
    the files; None = no tests to run."""
    if cfg.tests == "off":
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
    if "Makefile" in top and re.search(r"^test\s*:", read("Makefile") or "", re.M):
        return ["make", "test"]
    return None


def detect_at(repo: Path, rev: str, cfg: Config) -> list[str] | None:
    files = git.git(repo, "ls-tree", "-r", "--name-only", rev).splitlines() if cfg.tests != "off" else []
    return detect_command(files, lambda p: git.show(repo, rev, p), cfg)


def detect_in_dir(root: Path, cfg: Config) -> list[str] | None:
    files = [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".git" not in p.parts]

    def read(p: str) -> str | None:
        try:
            return (root / p).read_text(encoding="utf-8", errors="replace")
        except OSError:
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


def is_test_path(path: str) -> bool:
    """Test files and test fixtures: a patch that touches one is never accepted as a fix."""
    p = Path(path)
    name = p.name
    parts = set(p.parts[:-1])
    return (
        bool(parts & {"test", "tests", "testing", "__tests__", "spec", "testdata", "python_testcases"})
        or name == "conftest.py"
        or bool(re.match(r"(test_.*\.py|.*_test\.(py|go)|.*\.(test|spec)\.[jt]sx?|.*Tests?\.java)$", name))
    )


# ---------------------------------------------------------------- parsing output

_PYTEST_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b")
_PYTEST_SUMMARY = re.compile(r"^=*\s*(?:\d+ \w+(?:, )?)+.* in [\d.]+s", re.M)
_PYTEST_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.M)
_CARGO = re.compile(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")
_JEST = re.compile(r"^Tests:\s+(.*)$", re.M)
_MAVEN = re.compile(r"Tests run: (\d+), Failures: (\d+), Errors: (\d+), Skipped: (\d+)\s*$", re.M)


def parse_output(out: str) -> dict[str, object]:
    """Pass/fail counts and failing test ids from pytest, go, cargo, jest or maven output (best effort)."""
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failing: list[str] = []
    summaries = _PYTEST_SUMMARY.findall(out)
    if summaries:
        for n, word in _PYTEST_COUNT.findall(summaries[-1]):
            key = {"error": "errors", "xpassed": "passed", "xfailed": "skipped"}.get(word, word)
            counts[key] = counts.get(key, 0) + int(n)
        failing = _PYTEST_FAILED.findall(out)
    elif cargo := _CARGO.findall(out):
        counts["passed"] = sum(int(c[0]) for c in cargo)
        counts["failed"] = sum(int(c[1]) for c in cargo)
        failing = re.findall(r"^test (\S+) \.\.\. FAILED", out, re.M)
    elif jest := _JEST.findall(out):
        for n, word in re.findall(r"(\d+) (passed|failed|skipped)", jest[-1]):
            counts[word] += int(n)
        failing = re.findall(r"^\s+● (.+?)\s*$", out, re.M)
    elif mvn := _MAVEN.findall(out):
        run, fail, err, skip = (int(x) for x in mvn[-1])
        counts.update(passed=run - fail - err - skip, failed=fail, errors=err, skipped=skip)
    else:  # go test
        failing = re.findall(r"^\s*--- FAIL: (\S+)", out, re.M)
        counts["failed"] = len(failing)
        counts["passed"] = len(re.findall(r"^\s*--- PASS: ", out, re.M))
    return {**counts, "failing": tuple(dict.fromkeys(failing))}


def to_testrun(argv: Sequence[str], res: RunResult) -> TestRun:
    out = res.output
    parsed = parse_output(out)
    return TestRun(
        command=tuple(argv),
        returncode=res.returncode,
        passed=int(parsed["passed"]),  # type: ignore[call-overload]
        failed=int(parsed["failed"]),  # type: ignore[call-overload]
        errors=int(parsed["errors"]),  # type: ignore[call-overload]
        skipped=int(parsed["skipped"]),  # type: ignore[call-overload]
        failing=parsed["failing"],  # type: ignore[arg-type]
        output=out[-OUTPUT_KEPT:],
        timed_out=res.timed_out,
        killed_reason=res.killed_reason,
        seconds=res.seconds,
    )


# ---------------------------------------------------------------- running


def export_tree(repo: Path, rev: str, dest: Path) -> Path:
    """A scratch copy of the tree at `rev` (no .git, the repository itself untouched)."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", "--format=tar", rev], capture_output=True, check=False
    )
    if archive.returncode != 0:
        raise PrereviewError(f"cannot export {rev[:12]} from {repo} for testing; is it a git repository?")
    subprocess.run(["tar", "-x", "--no-same-owner", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def default_cache_dir() -> Path:
    from ..models.catalog import cache_dir

    return cache_dir() / "testruns"


class TestRunner:
    """Runs one command in one sandbox and project environment; results cached per commit + command +
    environment (memory and disk)."""

    __test__ = False

    def __init__(
        self,
        sandbox: Sandbox,
        argv: Sequence[str],
        timeout: float,
        cache_dir: Path | None = None,
        env: ProjectEnv | None = None,
    ):
        self.sandbox, self.argv, self.timeout = sandbox, list(argv), timeout
        self.cache_dir = cache_dir
        self.env = env  # None: argv as is (prereview's PATH)
        self._memo: dict[str, TestRun] = {}
        self.runs = 0  # sandbox runs actually made (not served from the cache)

    def _key(self, commit: str) -> str:
        basis = json.dumps([commit, self.argv, self.sandbox.name, *([self.env.key] if self.env else [])])
        return hashlib.sha256(basis.encode()).hexdigest()[:32]

    def at_commit(self, repo: Path, commit: str) -> TestRun:
        key = self._key(commit)
        if key in self._memo:
            return self._memo[key]
        cached = self._load(key)
        if cached is None:
            with tempfile.TemporaryDirectory(prefix="prereview-tests-") as tmp:
                cached = self.in_tree(export_tree(repo, commit, Path(tmp) / "work"))
            if not cached.timed_out:  # a timeout may be the machine being busy: try again next time
                self._store(key, cached)
        self._memo[key] = cached
        return cached

    def in_tree(self, root: Path) -> TestRun:
        self.runs += 1
        argv = self.env.command(root) if self.env is not None else self.argv
        return relativize(to_testrun(self.argv, self.sandbox.run(argv, cwd=root, timeout=self.timeout)), root)

    def _load(self, key: str) -> TestRun | None:
        if self.cache_dir is None:
            return None
        p = self.cache_dir / f"{key}.json"
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
            data["command"], data["failing"] = tuple(data["command"]), tuple(data["failing"])
            return TestRun(**data)
        except (OSError, ValueError, TypeError):
            return None

    def _store(self, key: str, run: TestRun) -> None:
        if self.cache_dir is None:
            return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        (self.cache_dir / f"{key}.json").write_text(json.dumps(asdict(run)), encoding="utf-8")


def relativize(run: TestRun, root: Path) -> TestRun:
    """Scratch paths in the output become repository-relative, so results compare across copies."""
    out = run.output.replace(str(root.resolve()) + "/", "").replace(str(root) + "/", "")
    return TestRun(**{**asdict(run), "output": out, "command": run.command, "failing": run.failing})


# ---------------------------------------------------------------- comparing and localizing


@dataclass(frozen=True)
class Breakage:
    """Tests failing at head that passed at base."""

    tests: tuple[str, ...]  # ids; ("(test run)",) when the run as a whole broke (timeout, crash)
    base: TestRun
    head: TestRun

    def describe(self) -> str:
        names = [t.rsplit("::", 1)[-1] for t in self.tests]
        shown = ", ".join(names[:3]) + (f" (+{len(names) - 3} more)" if len(names) > 3 else "")
        what = "the test run" if self.tests == ("(test run)",) else shown
        return f"{what}: {first_error(self.head.output) or self.head.summary()}"


def compare(base: TestRun, head: TestRun) -> Breakage | None:
    """What the change broke; None when head is fine or was already failing the same way at base."""
    if head.ok:
        return None
    if not base.ok and not base.failing:  # base broken as a whole: nothing to compare against
        return None
    new = tuple(t for t in head.failing if t not in set(base.failing))
    if new:
        return Breakage(new, base, head)
    if base.ok:  # failed without naming tests (timeout, crash, collection error)
        return Breakage(("(test run)",), base, head)
    return None


_FRAME = [
    re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)'),  # Python traceback
    re.compile(r"^(?P<path>[\w./-]+\.\w+):(?P<line>\d+)(?::\d+)?(?::| )", re.M),  # pytest --tb, go, gcc…
    re.compile(r"\((?P<path>[\w./-]+\.[jt]sx?):(?P<line>\d+):\d+\)"),  # node stack
]


def frames(output: str) -> list[tuple[str, int]]:
    """(path, line) of stack frames, in output order."""
    found: list[tuple[int, str, int]] = []
    for rx in _FRAME:
        for m in rx.finditer(output):
            found.append((m.start(), m.group("path"), int(m.group("line"))))
    return [(p.removeprefix("./"), n) for _, p, n in sorted(found)]


def first_error(output: str) -> str:
    """The first assertion/exception line of a failure (pytest's `E   ` lines, else a `*Error:` line)."""
    m = re.search(r"^E\s+(.+)$", output, re.M) or re.search(r"^(\w*(?:Error|Exception)\b.*)$", output, re.M)
    return m.group(1).strip()[:200] if m else ""


def failure_excerpt(output: str, chars: int = 900) -> str:
    """The first failure's report (pytest's `___ test ___` block), else the output's tail."""
    blocks = re.split(r"^_{3,} .* _{3,}$", output, flags=re.M)
    if len(blocks) > 1:
        first = re.split(r"^={3,}", blocks[1], flags=re.M)[0].strip()
        return first[-chars:]
    return output.strip()[-chars:]


def localize(breakage: Breakage, diff: Diff) -> tuple[str, int]:
    """The changed line most likely responsible: the deepest stack frame in a changed non-test file,
    mapped to the nearest changed line (an added line, or the line just above a deletion); else the
    first changed line of a changed non-test file."""
    files = {f.path: f for f in diff.files if f.status != "deleted" and not is_test_path(f.path)}
    for path, line in reversed(frames(breakage.head.output)):
        f = _match_file(path, files)
        if f is not None and changed_lines(f):
            return f.path, min(changed_lines(f), key=lambda n: (abs(n - line), n))
    for f in [*files.values(), *(f for f in diff.files if f.status != "deleted")]:
        if changed_lines(f):
            return f.path, changed_lines(f)[0]
    raise PrereviewError("tests broke but the diff changes no lines to attribute them to")


def _match_file(path: str, files: dict[str, FileDiff]) -> FileDiff | None:
    if path in files:
        return files[path]
    return next((f for p, f in files.items() if path.endswith("/" + p)), None)


def changed_lines(f: FileDiff) -> list[int]:
    """New-side lines a change can be blamed on: added lines, and for each deletion the line above it."""
    out: set[int] = set()
    for h in f.hunks:
        prev: int | None = None
        for i, ln in enumerate(h.lines):
            if ln.kind == "+" and ln.new_no is not None:
                out.add(ln.new_no)
            elif ln.kind == "-" and (i == 0 or h.lines[i - 1].kind != "-"):
                anchor = prev if prev is not None else next((x.new_no for x in h.lines[i:] if x.new_no), None)
                if anchor is not None and not any(x.kind == "+" for x in h.lines):
                    out.add(anchor)
            if ln.new_no is not None:
                prev = ln.new_no
    return sorted(out)


def deleted_after(f: FileDiff, line: int) -> bool:
    """True when the change removed lines right below new-side `line` (and added none in that hunk)."""
    for h in f.hunks:
        if any(x.kind == "+" for x in h.lines):
            continue
        for i, ln in enumerate(h.lines[:-1]):
            if ln.new_no == line and h.lines[i + 1].kind == "-":
                return True
    return False


def breakage_finding(breakage: Breakage, diff: Diff, head_text: str | None) -> Finding:
    path, line = localize(breakage, diff)
    lines = head_text.splitlines() if head_text else []
    quote = lines[line - 1].strip() if 0 < line <= len(lines) else None
    n = len(breakage.tests)
    what = "the test run" if breakage.tests == ("(test run)",) else f"{n} test{'s' if n != 1 else ''}"
    return Finding(
        path=path,
        line=line,
        message=f"This change breaks {what} that passed before ({breakage.base.summary()} at base, "
        f"{breakage.head.summary()} at head) — {breakage.describe()}",
        severity="high",
        category="bug",
        source="tests",
        rule_id="tests/broken",
        quote=quote,
    )
