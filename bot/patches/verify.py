"""Prove a patch with the project's tests: apply it to a scratch copy of head, run the tests in the sandbox.

A patch is kept only if it applies cleanly, touches no test file, makes no passing test fail and makes
the tests the change broke pass again. Kept patches become the finding's `suggestion`, with
`verified=True` and the evidence ("tests: 6 passed, was 5 failed"). Nothing unverified is offered as
a fix.

`PatchStage` is the engine behind the pipeline's tests and patches stages (evidence/tests_stage.py,
patches/stage.py) and `prereview fix`: tests at base and head (-> findings for what the change broke),
then propose -> verify for those findings and for the model's own findings.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .. import fsguard
from ..change import git
from ..change.diff import Diff, FileDiff, edit_at, parse
from ..config import Config
from ..evidence import datebound, flaky, projectenv, testrun
from ..evidence.pininstall import failing_pin, pins_versions
from ..evidence.testrun import Breakage, TestRun, TestRunner
from ..models import Model
from ..progress import Progress, Quiet
from ..sandbox import Sandbox
from ..sandbox import create as create_sandbox
from ..types import ChangeRequest, Finding, PrereviewError, severity_rank
from . import propose

if TYPE_CHECKING:
    from ..evidence.behaviour.engine import BehaviourEvidence


@dataclass(frozen=True)
class Verdict:
    patch: propose.Patch
    ok: bool
    reason: str  # why it was rejected, or the evidence when kept
    run: TestRun | None = None

    @property
    def evidence(self) -> str | None:
        return self.reason if self.ok else None


def judge(after: TestRun, head: TestRun, breakage: Breakage | None) -> tuple[bool, str]:
    """Accept a test run of the patched tree? (ok, evidence or reason)"""
    if after.timed_out:
        return False, "tests timed out with the patch"
    if not after.ok and after.passed == 0:  # a run that tested nothing verifies nothing
        return False, "no test ran to check the patch"
    newly = [t for t in after.failing if t not in set(head.failing)]
    if newly:
        return False, f"the patch makes passing tests fail: {', '.join(newly[:3])}"
    if after.passed < head.passed:
        return False, f"fewer tests pass with the patch ({after.passed} < {head.passed})"
    if breakage is None:
        if after.passed == 0 or after.bad > head.bad:
            return False, "no test ran to check the patch"
        return True, f"tests: {after.summary()}, none broken by the fix"
    still = [t for t in breakage.tests if t in set(after.failing)]
    if (
        still
        or (breakage.tests == ("(test run)",) and not after.ok)
        or after.bad >= head.bad
        and not after.ok
    ):
        return False, f"tests still failing with the patch ({after.summary()})"
    was = f"{head.bad} failed" if head.bad else head.summary()
    return True, f"tests: {after.summary()}, was {was}"


def verify(
    patch: propose.Patch,
    *,
    repo: Path,
    head_sha: str,
    runner: TestRunner,
    head: TestRun,
    breakage: Breakage | None,
    check: Callable[[Path], tuple[bool, str]] | None = None,
) -> Verdict:
    if testrun.is_test_path(patch.path):
        return Verdict(patch, False, "the patch edits a test file")
    text = git.show(repo, head_sha, patch.path)
    if text is None:
        return Verdict(patch, False, f"{patch.path} does not exist at head")
    if tuple(text.split("\n")[patch.start - 1 : patch.end]) != patch.old_lines:
        return Verdict(patch, False, "the patch does not apply cleanly")
    with tempfile.TemporaryDirectory(prefix="prereview-verify-") as tmp:
        root = testrun.export_tree(repo, head_sha, Path(tmp) / "work")
        try:  # the change may have made patch.path (or a directory above it) a symlink out of the tree
            fsguard.write_text(root, patch.path, patch.apply(text))
        except fsguard.UnsafePath as exc:
            return Verdict(patch, False, str(exc))
        after = runner.in_tree(root)
        ok, reason = judge(after, head, breakage)
        if ok and check is not None:  # e.g. behaviour: the patched head must give base's results again
            ok, more = check(root)
            reason = f"{reason}; {more}" if ok else more
    return Verdict(patch, ok, reason, after)


def as_suggestion(finding: Finding, verdict: Verdict) -> Finding:
    """The finding, moved onto the lines the patch replaces, carrying the verified replacement."""
    p = verdict.patch
    evidence = verdict.evidence
    if finding.source == "behaviour" and finding.evidence:  # keep the example (call, before, after)
        evidence = f"{evidence} ({finding.evidence})"
    return finding.with_(
        line=p.start,
        end_line=p.end if p.end != p.start else None,
        suggestion=p.suggestion,
        verified=True,
        evidence=evidence,
    )


ModelFactory = Callable[[], Model]


@dataclass
class PatchStage:
    """Tests at base/head -> findings for what broke; then propose -> verify patches within a budget."""

    change: ChangeRequest
    cfg: Config
    cache_dir: Path | None = None
    read_for_prompt: Callable[[str], str | None] | None = None  # file text as prompts may show it (redacted)
    sandbox: Sandbox | None = None
    notes: list[str] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)  # every candidate tried, for logs and benches
    runner: TestRunner | None = None
    behaviour: BehaviourEvidence | None = None  # traces the test runs; checks patches of its findings
    base: TestRun | None = None
    head: TestRun | None = None
    breakage: Breakage | None = None
    diff: Diff | None = None  # the change's parsed diff, when the pipeline already has it
    env_dir: Path | None = None  # where project environments are built (default: beside cache_dir)
    env: projectenv.ProjectEnv | None = None
    unusable: str | None = None  # why the tests gave no evidence (environment failed, base tested nothing)
    seconds: dict[str, float] = field(default_factory=dict)  # per step: "env", "tests"
    _started: bool = False

    def start(self, progress: Progress | None = None) -> None:
        """Detect the test command and run it at base and head (once)."""
        if self._started:
            return
        self._started = True
        progress = progress or Quiet()
        repo = self.change.workdir
        if repo is None or self.cfg.tests == "off":
            return
        argv = testrun.detect_at(repo, self.change.head_sha, self.cfg)
        if argv is None:
            return
        try:
            self.sandbox = self.sandbox or create_sandbox(self.cfg.sandbox)
        except PrereviewError as exc:
            self.notes.append(f"tests not run: {exc}")
            return
        if self.sandbox.warning:
            self.notes.append(self.sandbox.warning)
        env = self.env = projectenv.resolve(
            argv,
            cfg=self.cfg,
            repo=repo,
            source=self.change.env_source,
            head_sha=self.change.head_sha,
            sandbox_name=self.sandbox.name,
            env_dir=self.env_dir or projectenv.default_env_dir(self.cache_dir),
            progress=progress,
        )
        self.seconds["env"] = env.seconds
        self.notes += env.notes
        if env.error is not None:
            self.unusable = f"could not build the test environment: {env.error}"
            self.notes.append(f"Tests not run: {self.unusable}; {projectenv.fix_for(argv)}.")
            return
        self.sandbox = projectenv.with_ro_paths(self.sandbox, env.ro_paths)
        budget = max(1.0, self.cfg.tests.budget_seconds - env.seconds)
        timeout = min(self.cfg.sandbox.timeout, budget / 2)  # base and head share what the build left
        self.runner = TestRunner(self.sandbox, argv, timeout, self.cache_dir, env=env)
        bounds = getattr(self.sandbox, "bounds", "")
        progress.message(
            f"running tests at base and head: {' '.join(env.argv)} ({self.sandbox.name} sandbox; "
            + (f"{bounds}; " if bounds else "")
            + f"environment: {env.describe}, ready in {env.seconds:.1f}s)"
        )
        hook = self.behaviour.trace_hook(argv) if self.behaviour is not None else None
        t0, why = time.monotonic(), None
        try:  # with the behaviour tracer loaded when there is one: still one run per side
            self.base = self.runner.at_commit(repo, self.change.base_sha, hook)
            why = projectenv.unusable(self.base)
            pinned = pins_versions(_requirements(env)) and not any(
                "without their pins" in n for n in env.notes
            )
            if why is not None and env.kind == "built" and pinned:  # old pins that install, do not run
                why = self._unpinned(argv, repo, why, hook, progress)
            if why is None:
                self.head = self.runner.at_commit(repo, self.change.head_sha, hook)
        except PrereviewError as exc:  # e.g. the docker engine is down: review without tests, say why
            self.notes.append(f"tests not run: {exc}")
            self.runner = self.base = self.head = None
            return
        finally:
            self.seconds["tests"] = round(time.monotonic() - t0, 2)
        self.notes += [f"tests: {n}" for n in self.runner.notes]  # read-backs refused or cut
        if why is not None:  # nothing to compare against, nothing to verify a patch with
            self.unusable = why
            self.notes.append(projectenv.cannot_test_note(why, argv=argv))
            progress.message(f"tests: base unusable ({why}); {self.seconds['tests']:.1f}s")
            self.runner = self.head = None
            return
        assert self.head is not None
        self.breakage = testrun.compare(self.base, self.head)
        if self.breakage is not None:  # a test that flips on a rerun is flaky, never a finding
            budget = max(30.0, self.cfg.tests.budget_seconds - env.seconds - self.seconds["tests"])
            checked = flaky.recheck(
                self.runner,
                repo,
                self.change.base_sha,
                self.change.head_sha,
                self.breakage,
                self.diff,
                budget=budget,
            )
            self.breakage, self.seconds["reruns"] = checked.breakage, checked.seconds
            self.notes += checked.notes
        progress.message(
            f"tests: base {self.base.summary()}; head {self.head.summary()} "
            f"(environment {env.seconds:.1f}s, tests {self.seconds['tests']:.1f}s)"
        )

    def _unpinned(
        self, argv: list[str], repo: Path, why: str, hook: testrun.RunHook | None, progress: Progress
    ) -> str | None:
        """The base run tested nothing with the pinned test requirements (pytest 6 on Python 3.11): the
        same requirements without their versions, once. None when that run is usable (and is used)."""
        assert self.runner is not None and self.env is not None
        env = projectenv.resolve(
            argv,
            cfg=self.cfg,
            repo=repo,
            source=self.change.env_source,
            head_sha=self.change.head_sha,
            sandbox_name=self.sandbox.name if self.sandbox is not None else "",
            env_dir=self.env_dir or projectenv.default_env_dir(self.cache_dir),
            progress=progress,
            unpinned=True,
        )
        self.seconds["env"] = self.seconds.get("env", 0.0) + env.seconds
        if env.error is not None:
            return why
        assert self.sandbox is not None
        sandbox = projectenv.with_ro_paths(self.sandbox, env.ro_paths)
        runner = TestRunner(sandbox, argv, self.runner.timeout, self.cache_dir, env=env)
        base = runner.at_commit(repo, self.change.base_sha, hook)
        if projectenv.unusable(base) is not None:
            return why
        pin = failing_pin(self.base.output if self.base else "", _requirements(self.env))
        self.env, self.runner, self.base, self.sandbox = env, runner, base, sandbox
        bounded = next(  # the date the unpinned resolution was bounded by (datebound.py), if any
            (
                n.removeprefix(datebound.UNPINNED_NOTE).rstrip(".")
                for n in env.notes
                if n.startswith(datebound.UNPINNED_NOTE)
            ),
            "",
        )
        self.notes.append(
            "Test environment: the tests did not run with the pinned test requirements ("
            + (f"`{pin}`: " if pin else "")
            + f"{why}); installed them without their pins instead"
            + (f", {bounded}." if bounded else ".")
        )
        return None

    def breakage_findings(self, diff: Diff) -> list[Finding]:
        """extra_findings hook: one finding for the tests the change breaks."""
        self.start()
        if self.breakage is None or self.change.workdir is None:
            return []
        path, _ = testrun.localize(self.breakage, diff)
        text = git.show(self.change.workdir, self.change.head_sha, path)
        return [testrun.breakage_finding(self.breakage, diff, text)]

    def post_findings(
        self,
        change: ChangeRequest,
        diff: Diff,
        findings: list[Finding],
        model_factory: ModelFactory,
        cfg: Config,
        progress: Progress,
    ) -> list[Finding]:
        """post_findings hook: attach verified suggestions to the findings a patch can fix, within
        patches.budget_seconds from here; a note names the findings the budget left without a try."""
        self.start(progress)
        if not cfg.patches.enabled or self.runner is None or self.head is None or change.workdir is None:
            return findings
        deadline = time.monotonic() + cfg.patches.budget_seconds
        out, fixed_lines = [], set()
        late: list[Finding] = []
        for f in _fixable_first(findings):
            if f.suggestion or (f.path, f.line) in fixed_lines:
                out.append(f)
                continue
            if time.monotonic() > deadline:
                if _fixable(f, self.breakage):
                    late.append(f)
                out.append(f)
                continue
            verdict = self.fix(f, model_factory, progress, deadline)
            if verdict is not None:
                fixed_lines |= {(f.path, n) for n in range(verdict.patch.start, verdict.patch.end + 1)}
                out.append(as_suggestion(f, verdict))
            else:
                out.append(f)
        if late:
            where = ", ".join(f"{f.path}:{f.line}" for f in late[:8]) + (
                f" and {len(late) - 8} more" if len(late) > 8 else ""
            )
            self.notes.append(
                f"patches: budget_seconds ({cfg.patches.budget_seconds:g}s) spent before a fix was tried for "
                f"{len(late)} finding(s): {where} (raise patches.budget_seconds)"
            )
        return out

    def fix(
        self, f: Finding, model_factory: ModelFactory, progress: Progress, deadline: float
    ) -> Verdict | None:
        """Propose up to k candidates for one finding; the first verified one wins."""
        assert self.runner is not None and self.head is not None and self.change.workdir is not None
        if not _fixable(f, self.breakage):
            return None
        read = self.read_for_prompt or (lambda p: git.show(self.change.workdir, self.change.head_sha, p))  # type: ignore[arg-type]
        text = read(f.path)
        if text is None:
            return None
        broke = f.rule_id == "tests/broken"
        problem = propose.Problem(
            f.path, f.line, f.message, testrun.failure_excerpt(self.head.output) if broke else ""
        )
        if self.diff is None:
            self.diff = parse(self.change.diff_text)
        fd = self.diff.file(f.path)
        hint = _deleted_hint(fd, f)
        removed, added = edit_at(fd, f.line) if fd else ((), ())
        problem = replace(problem, hint=hint, gap=bool(hint), removed=removed, added=added)
        breakage = self.breakage if broke else None
        check = (
            self.behaviour.patch_check(f) if self.behaviour is not None and f.source == "behaviour" else None
        )
        model = model_factory()
        tested: dict[propose.Patch, Verdict] = {}
        feedback = lambda p: tested[p].reason  # noqa: E731
        late = False
        for i, patch in enumerate(
            propose.candidates(model, problem, text, self.cfg.patches.candidates, feedback, deadline), 1
        ):
            # a verification runs the tests once more, about as long as head's run took: one that would end
            # past the deadline is not started
            if time.monotonic() + self.head.seconds > deadline:
                late = True
                break
            progress.message(f"verifying patch candidate {i} for {f.path}:{f.line}")
            verdict = verify(
                patch,
                repo=self.change.workdir,
                head_sha=self.change.head_sha,
                runner=self.runner,
                head=self.head,
                breakage=breakage,
                check=check,
            )
            self.verdicts.append(verdict)
            tested[patch] = verdict
            if verdict.ok:
                return verdict
        if late or time.monotonic() > deadline:
            tried = len(tested)
            self.notes.append(
                f"patches: budget_seconds ({self.cfg.patches.budget_seconds:g}s) spent while fixing "
                f"{f.path}:{f.line} ({tried} candidate(s) verified, none passed)"
            )
        return None


def _requirements(env: projectenv.ProjectEnv) -> list[str]:
    """A built venv's requirement lines (what its pins were)."""
    try:
        return (Path(env.argv[0]).parent.parent / "requirements.txt").read_text(encoding="utf-8").splitlines()
    except OSError:
        return []


def _deleted_hint(fd: FileDiff | None, f: Finding) -> str:
    if fd is not None and testrun.deleted_after(fd, f.line):
        return "The change removed code right below that line: the fix may need to add a line there."
    return ""


def _fixable(f: Finding, breakage: Breakage | None) -> bool:
    if testrun.is_test_path(f.path) or not f.in_diff or f.side != "RIGHT":
        return False
    if f.rule_id == "tests/broken":
        return breakage is not None
    return (
        f.source in ("model", "behaviour")
        and f.category in ("bug", "security")
        and severity_rank(f.severity) >= 2
    )


def _fixable_first(findings: Iterable[Finding]) -> list[Finding]:
    """Broken tests first (the strongest evidence), keeping the review's order otherwise."""
    fs = list(findings)
    order = sorted(range(len(fs)), key=lambda i: (fs[i].rule_id != "tests/broken", i))
    return [fs[i] for i in order]
