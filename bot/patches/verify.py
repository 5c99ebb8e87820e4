"""Prove a patch with the project's tests: apply it to a scratch copy of head, run the tests in the sandbox.

A patch is kept only if it applies cleanly, touches no test file, makes no passing test fail and makes
the tests the change broke pass again. Kept patches become the finding's `suggestion`, with
`verified=True` and the evidence ("tests: 6 passed, was 5 failed"). Nothing unverified is offered as
a fix.

`Patcher` is the engine behind the patches stage (patches/stage.py) and `prereview fix`: it takes the
review's `TestRuns` (evidence/runs.py) and proposes -> verifies patches for the tests the change broke
and for the model's own findings; an optional re-check (behaviour evidence) is one more condition.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import fsguard
from ..change import git
from ..change.diff import FileDiff, edit_at, is_test_path
from ..config import Config
from ..evidence import testrun
from ..evidence.breakage import Breakage, deleted_after, failure_excerpt
from ..evidence.runs import TestRuns
from ..evidence.testrun import TestRun, TestRunner
from ..models import Model
from ..progress import Progress
from ..types import ChangeRequest, Finding, severity_rank
from . import propose


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
    if is_test_path(patch.path):
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
Check = Callable[[Path], tuple[bool, str]]  # a patched head tree -> (ok, evidence or reason)
Recheck = Callable[[Finding], "Check | None"]  # a finding -> the extra check a patch of it must pass


@dataclass
class Patcher:
    """Propose -> verify patches for the findings a patch can fix, against the review's test runs and
    within a budget. `recheck` gives the extra check a finding's patch must pass (behaviour evidence: the
    patched head gives base's results again on the finding's examples)."""

    change: ChangeRequest
    cfg: Config
    runs: TestRuns
    recheck: Recheck | None = None
    read_for_prompt: Callable[[str], str | None] | None = None  # file text as prompts may show it (redacted)
    notes: list[str] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)  # every candidate tried, for logs and benches

    def post_findings(
        self, findings: list[Finding], model_factory: ModelFactory, progress: Progress
    ) -> list[Finding]:
        """Attach verified suggestions to the findings a patch can fix, within patches.budget_seconds from
        here; a note names the findings the budget left without a try."""
        runs, cfg = self.runs, self.cfg
        if not cfg.patches.enabled or runs.runner is None or runs.head is None or self.change.workdir is None:
            return findings
        deadline = time.monotonic() + cfg.patches.budget_seconds
        out, fixed_lines = [], set()
        late: list[Finding] = []
        for f in _fixable_first(findings):
            if f.suggestion or (f.path, f.line) in fixed_lines:
                out.append(f)
                continue
            if time.monotonic() > deadline:
                if _fixable(f, runs.breakage):
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
        runner, head = self.runs.runner, self.runs.head
        assert runner is not None and head is not None and self.change.workdir is not None
        if not _fixable(f, self.runs.breakage):
            return None
        read = self.read_for_prompt or (lambda p: git.show(self.change.workdir, self.change.head_sha, p))  # type: ignore[arg-type]
        text = read(f.path)
        if text is None:
            return None
        broke = f.rule_id == "tests/broken"
        problem = propose.Problem(f.path, f.line, f.message, failure_excerpt(head.output) if broke else "")
        fd = self.change.diff.file(f.path)
        hint = _deleted_hint(fd, f)
        removed, added = edit_at(fd, f.line) if fd else ((), ())
        problem = replace(problem, hint=hint, gap=bool(hint), removed=removed, added=added)
        breakage = self.runs.breakage if broke else None
        check = self.recheck(f) if self.recheck is not None else None
        model = model_factory()
        tested: dict[propose.Patch, Verdict] = {}
        feedback = lambda p: tested[p].reason  # noqa: E731
        late = False
        for i, patch in enumerate(
            propose.candidates(model, problem, text, self.cfg.patches.candidates, feedback, deadline), 1
        ):
            # a verification runs the tests once more, about as long as head's run took: one that would end
            # past the deadline is not started
            if time.monotonic() + head.seconds > deadline:
                late = True
                break
            progress.message(f"verifying patch candidate {i} for {f.path}:{f.line}")
            verdict = verify(
                patch,
                repo=self.change.workdir,
                head_sha=self.change.head_sha,
                runner=runner,
                head=head,
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


def _deleted_hint(fd: FileDiff | None, f: Finding) -> str:
    if fd is not None and deleted_after(fd, f.line):
        return "The change removed code right below that line: the fix may need to add a line there."
    return ""


def _fixable(f: Finding, breakage: Breakage | None) -> bool:
    if is_test_path(f.path) or not f.in_diff or f.side != "RIGHT":
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
