"""The reviewed project's own tests: run the command at base and head in a sandbox, parse the results.

Which command runs is detect.py's; what the change broke (and where) is breakage.py's. Tests run in
scratch copies (`git archive` of a commit; the reviewed repository is never touched) and results are
cached per commit + command + environment.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from .. import fsguard
from ..sandbox import RunResult, Sandbox
from ..sandbox.exchange import READ_BACK_BYTES, Exchange, json_lines, to_text
from ..types import PrereviewError
from .runners import parse_output

if TYPE_CHECKING:
    from .envbase import ProjectEnv

OUTPUT_KEPT = 20_000  # characters of a run's output kept for localization and prompts
COLLECTED_KEPT = 2 * READ_BACK_BYTES  # bytes of a hook's file kept in the cache (re-encoded JSON lines)
_Ran: TypeAlias = "tuple[TestRun, str, list[str]]"  # a run, its hook's file read back, notes on that read


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
    uncollected: tuple[str, ...] = ()  # "module: why" for each test module that did not import (pytest)
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


# ---------------------------------------------------------------- parsing output


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
        uncollected=parsed.get("uncollected", ()),  # type: ignore[arg-type]
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


@dataclass(frozen=True)
class RunHook:
    """Optional extras for one test run (e.g. the behaviour tracer): files given to the run, arguments
    appended to the command, variables set through `env`, and one file of JSON lines the run writes back.
    The files go into a bot-owned folder shown read-only (never into the work copy, which the change
    controls), the result comes back through a second one and is read with caps (sandbox/exchange.py);
    arguments and variables name them as `{given}` and `{back}`. Only its `key` enters the cache key, so a
    run with a hook is never served a run without one."""

    files: tuple[tuple[str, str], ...] = ()  # (plain file name, content)
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    collect: str = ""  # plain name of the JSON-lines file in {back} that comes back with the run

    @property
    def key(self) -> str:
        return hashlib.sha256(
            json.dumps([self.files, self.args, self.env, self.collect]).encode()
        ).hexdigest()

    def argv(self, argv: Sequence[str], exchange: Exchange | None = None) -> list[str]:
        """`argv` with the hook's arguments appended and its variables set. A leading `env K=V …` of argv
        (a project environment's) is merged into one: PYTHONPATH entries are joined, the hook's first."""
        given, rest = _env_prefix(argv)
        put = exchange.resolve if exchange is not None else str
        merged = dict(given)
        for k, v in self.env:
            v = put(v)
            merged[k] = f"{v}:{given[k]}" if k == "PYTHONPATH" and given.get(k) else v
        prefix = ["env", *(f"{k}={v}" for k, v in merged.items())] if merged else []
        return [*prefix, *rest, *(put(a) for a in self.args)]

    def install(self, exchange: Exchange) -> None:
        for name, text in self.files:
            exchange.give(name, text)

    def read_back(self, exchange: Exchange, what: str) -> tuple[str, list[str]]:
        """The collected file's JSON lines (capped, see exchange.py) and notes on what was refused or cut."""
        if not self.collect:
            return "", []
        data, notes = exchange.take(self.collect, what)
        records, more = json_lines(data, what)
        return to_text(records), notes + more


def _env_prefix(argv: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """(the variables of a leading `env K=V …`, the rest of argv)."""
    if not argv or argv[0] != "env":
        return {}, list(argv)
    out: dict[str, str] = {}
    i = 1
    while i < len(argv) and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", argv[i]):
        k, _, v = argv[i].partition("=")
        out[k] = v
        i += 1
    return out, list(argv[i:])


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
        self.collected: dict[str, str] = {}  # cache key -> the hook's file read back from that run
        self.notes: list[str] = []  # read-backs refused or cut (for the review's notes)
        self.runs = 0  # sandbox runs actually made (not served from the cache)

    def _key(self, commit: str, hook: RunHook | None = None) -> str:
        extra = [*([self.env.key] if self.env else []), *([hook.key] if hook else [])]
        basis = json.dumps([commit, self.argv, self.sandbox.name, *extra])
        return hashlib.sha256(basis.encode()).hexdigest()[:32]

    def at_commit(self, repo: Path, commit: str, hook: RunHook | None = None) -> TestRun:
        """The run at `commit`; with a hook, `collected_at(commit, hook)` then gives the file it read back."""
        key = self._key(commit, hook)
        if key in self._memo:
            return self._memo[key]
        cached = self._load(key)
        if cached is not None and hook is not None:
            text = self._load_collected(key)
            cached = cached if text is not None else None
            self.collected[key] = text or ""
        if cached is None:
            with tempfile.TemporaryDirectory(prefix="prereview-tests-") as tmp:
                root = export_tree(repo, commit, Path(tmp) / "work")
                cached, text, notes = self._run(root, hook, commit[:12])
                if hook is not None:
                    self.collected[key] = text
            # not stored: a timeout (a busy machine: try again) or a read-back refused or cut (its note again)
            if not cached.timed_out and not notes:
                self._store(key, cached)
                if hook is not None:
                    self._store_collected(key, self.collected[key])
        self._memo[key] = cached
        return cached

    def collected_at(self, commit: str, hook: RunHook) -> str:
        return self.collected.get(self._key(commit, hook), "")

    def in_tree(self, root: Path) -> TestRun:
        """One run in a tree the caller made (never cached)."""
        return self._run(root, None)[0]

    def in_tree_collect(self, root: Path, hook: RunHook, timeout: float = 0) -> tuple[TestRun, str]:
        """One run with `hook` in a tree the caller made (never cached, `timeout` if shorter), its file."""
        run, text, _ = self._run(root, hook, limit=min(timeout or self.timeout, self.timeout))
        return run, text

    def _run(self, root: Path, hook: RunHook | None, label: str = "", limit: float = 0) -> _Ran:
        """The run, the text of the hook's file read back ('' without a hook), notes on that read-back."""
        self.runs += 1
        argv, limit = (self.env.command(root) if self.env is not None else self.argv), limit or self.timeout
        if hook is None:
            res = self.sandbox.run(argv, cwd=root, timeout=limit)
            return relativize(to_testrun(self.argv, res), root), "", []
        with Exchange() as ex:
            hook.install(ex)
            res = self.sandbox.run(hook.argv(argv, ex), cwd=root, timeout=limit, binds=ex.binds)
            text, notes = hook.read_back(ex, f"the trace of the test run at {label or 'the work copy'}")
        self.notes += [n for n in notes if n not in self.notes]
        return relativize(to_testrun(self.argv, res), root), text, notes

    def _load(self, key: str) -> TestRun | None:
        if self.cache_dir is None:
            return None
        p = self.cache_dir / f"{key}.json"
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
            for k in ("command", "failing", "uncollected"):  # JSON lists; a run cached before a field: ()
                data[k] = tuple(data.get(k, ()))
            return TestRun(**data)
        except (OSError, ValueError, TypeError):
            return None

    def _store(self, key: str, run: TestRun) -> None:
        if self.cache_dir is None:
            return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        (self.cache_dir / f"{key}.json").write_text(json.dumps(asdict(run)), encoding="utf-8")

    def _load_collected(self, key: str) -> str | None:
        """The stored file, None when absent or larger than COLLECTED_KEPT (its apparent size: a sparse
        file counts whole) -- the run is then made again."""
        if self.cache_dir is None:
            return None
        try:
            data = fsguard.read_bytes(self.cache_dir, f"{key}.collected", limit=COLLECTED_KEPT + 1)
        except (OSError, fsguard.UnsafePath):
            return None
        return data.decode("utf-8", "replace") if len(data) <= COLLECTED_KEPT else None

    def _store_collected(self, key: str, text: str) -> None:
        data = text.encode("utf-8")
        if self.cache_dir is not None and len(data) <= COLLECTED_KEPT:
            (self.cache_dir / f"{key}.collected").write_bytes(data)


def relativize(run: TestRun, root: Path) -> TestRun:
    """Scratch paths in the output become repository-relative, so results compare across copies."""

    def rel(text: str) -> str:
        return text.replace(str(root.resolve()) + "/", "").replace(str(root) + "/", "")

    kept = {"command": run.command, "failing": run.failing, "uncollected": tuple(map(rel, run.uncollected))}
    return TestRun(**{**asdict(run), "output": rel(run.output), **kept})
