"""A CI job's automatic review through the one job dispatcher (`bot/jobs/run.py` → `jobs/review.py`), as
the server's worker runs it: the same paused/ignore checks, the same notes, the same publishing.

What differs from the worker is the session (`CiReview`): the change is the one the CI command built from
its environment and its own checkout (no fetch from the API, no clone), its config is the one the command
resolved (`--config`, the command line's overrides, the runner's sandbox), and what the job says goes to
the CI log. What only a CI job does with the review is its `Outlet`: the Code Quality report (GitLab),
the log's count and result lines, posting through the CI's own forge client (its timeouts, CA, Code
Insights on Bitbucket) or saying why nothing is posted, and the exit code by `review.fail_level`.
Everything posted is masked with the CI's tokens, whatever their shape, and the change's secrets.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..change.diff import Diff
from ..config import Config
from ..jobs.job import Job
from ..jobs.workspace import Workspace
from ..types import ChangeRequest, Review
from .ci_jobs import Echo, masking_of, run_job

# Posts a review (the CI's forge client, its own options) and returns the log line's account of it.
Poster = Callable[[ChangeRequest, Review, Diff | None, Config], str]


class Outlet(Protocol):
    """What a CI job does with its review: `publish` it (the CI's own outputs too) and set `code`, the
    command's exit code; or say why an automatic review was `skipped`."""

    label: str  # how the log names the change: "!7", "#3"
    progress: Echo
    code: int

    def skipped(self, why: str) -> None: ...
    def publish(self, change: ChangeRequest, review: Review, scope: Diff | None, cfg: Config) -> None: ...


def write_report(path: Path, text: str) -> None:
    """The report replaces whatever is at its path in the checkout: a link the change committed there
    (`gl-code-quality-report.json -> ~/.bashrc`) is replaced, never written through."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # a new file, never a link
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, 0o644)  # as write_text made it: the runner's artifact upload reads it
    os.replace(tmp, path)


@dataclass
class CiOutlet:
    """GitLab's, Gitea's and Bitbucket's `Outlet`: the log lines, the Code Quality report, the exit code,
    and `post`; that is None when nothing may be posted (`--no-post`, no token): `not_posting` says why."""

    label: str  # how the log names the change: "!7", "#3"
    command: str  # the CI command, for the skip's hint (`prereview gitlab --force`)
    progress: Echo
    post: Poster | None
    not_posting: str
    where: str = ""  # after the count: " on Gitea pull request #3"
    report: Path | None = None  # GitLab's Code Quality report, written even when the review is skipped
    fail_on_permission: Callable[[Config], bool] = lambda cfg: False
    code: int = 0  # by `review.fail_level`, once published

    def skipped(self, why: str) -> None:
        from ..review_filters import skip_message

        if self.report is not None:
            write_report(self.report, "[]\n")  # the job's report artifact still exists, empty
        self.progress.message(f"{self.label}: {skip_message(why, f'run `prereview {self.command} --force`')}")

    def publish(self, change: ChangeRequest, review: Review, scope: Diff | None, cfg: Config) -> None:
        from ..forges.base import PermissionDenied
        from ..pipeline.run import exit_code

        self.code = exit_code(review, cfg.review.fail_level)
        count = f"{len(review.findings)} finding(s)"
        if self.report is not None:
            from ..render.codequality import render_codequality

            write_report(self.report, render_codequality(review))
            self.progress.message(f"{count}; wrote the Code Quality report to {self.report}")
        else:
            self.progress.message(f"{count}{self.where}")
        if self.post is None:
            self.progress.message(self.not_posting)
            return
        try:
            line = self.post(change, review, scope, cfg)
        except PermissionDenied as exc:
            if self.fail_on_permission(cfg):
                raise
            self.progress.message(f"could not post on {self.label}: {exc}")
        else:
            self.progress.message(f"{self.label}: {line}")


class CiReview:
    """The CI job as a job session (`jobs.session.ForgeSession` for a review, `OwnLog`,
    `jobs.workspace.Prepared`): the change from the CI's checkout, its config as resolved, its log, and
    the `Outlet` for the review. A CI job reviews the commit it was started for (a newer push starts its
    own), so the head is not read again. What it posts and logs is masked with `masking`."""

    def __init__(
        self,
        change: ChangeRequest,
        outlet: Outlet,
        notes: Iterable[str],
        masking: Any,
        kind: str = "PR",
        incremental: bool = False,
    ) -> None:
        """`incremental`: the outlet may publish a review of part of the change (the Action)."""
        self._change, self._outlet, self._notes, self._m = change, outlet, tuple(notes), masking
        self.kind, self.incremental = kind, incremental
        self.progress = outlet.progress

    def fetch(self) -> ChangeRequest:
        self._m.learn(self._change)
        return self._change

    def prepared(self, change: ChangeRequest, cfg: Config) -> Workspace:
        return Workspace(change, cfg, self._notes, 0.0)

    def skipped(self, why: str) -> None:
        self._outlet.skipped(why)

    def current_head(self) -> str:
        return ""  # not read again: the commit the job was started for is the one reviewed

    def publish(
        self, change: ChangeRequest, review: Review, scope: Diff | None = None, cfg: Config | None = None
    ) -> None:
        assert cfg is not None  # the review job always passes its config
        self._outlet.publish(change, self._m.redactor.review(review), scope, cfg)

    def reply(self, text: str, comment_id: int | None) -> None:
        self.progress.message(self._m.text(text))  # a CI review has no one to answer: the log

    def __repr__(self) -> str:
        return f"CiReview({self._change.ref.repo!r}{self._outlet.label})"


def review(
    change: ChangeRequest,
    cfg: Config,
    outlet: Outlet,
    *,
    notes: Iterable[str] = (),
    force: bool = False,
    secrets: Iterable[str | None] = (),
    kind: str = "PR",
) -> int:
    """`change` reviewed through the job dispatcher as an automatic review (`force`: a commanded one,
    `review.ignore` not applied) and published through `outlet`; its exit code."""
    ref = change.ref
    assert ref.number is not None  # the CI commands always know their PR/MR
    job = Job("review", ref.forge, ref.repo, ref.number, head_sha=change.head_sha, auto=not force)
    masking = masking_of(s for s in secrets if s)
    run_job(job, CiReview(change, outlet, notes, masking, kind), cfg, masking, outlet.progress)
    return outlet.code
