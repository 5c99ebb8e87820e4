"""The Action's review (`prereview github`) through the job dispatcher (`jobs/review.py`), as the worker's.

The Action keeps no store: what the job remembers per PR comes from what it has (`ActionState`): the PR's
summary comment (paused, the last reviewed head) and its checkout (the lines the PR had added at that
head, for the one incremental algorithm, `change/incremental.py`). Its session is `ci_review.CiReview`
on the change fetched with the checkout; what only the Action does with the review is `ActionOutlet`:
the posted counts, the step summary, runner annotations when the token may not comment, the check run,
the SARIF upload and the step's outputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import click

from ..change.diff import Diff, parse
from ..config import Config
from ..types import ChangeRequest, PrereviewError, Review, Skipped
from .ci_jobs import Echo

PAUSED = "prereview: automatic reviews are paused on this PR (comment /resume to resume)"


class ActionState:
    """`jobs.session.JobState` from the PR's summary comment (`SummaryState`) and `last`, the review the
    summary recorded (`last_review`). Nothing is written here: publishing the summary records the head."""

    def __init__(self, summary: Any, last: dict[str, Any] | None) -> None:
        self._summary, self._last = summary, last

    def paused(self, pr_key: str) -> bool:
        if self._summary.paused:
            click.echo(PAUSED, err=True)
        return bool(self._summary.paused)

    def set_paused(self, pr_key: str, paused: bool) -> None:
        return None  # `/pause` edits the summary itself (the session's set_paused)

    def last_reviewed(self, pr_key: str) -> dict[str, Any] | None:
        return self._last

    def set_reviewed(self, pr_key: str, head: str, added: dict[str, list[str]], max_bytes: int) -> None:
        return None  # the summary keeps the head; the lines are read again from the checkout

    def last_findings(self, pr_key: str) -> dict[str, Any] | None:
        return None  # the summary keeps fingerprints only

    def set_findings(self, pr_key: str, head: str, findings: Iterable[Any], most: int = 40) -> None:
        return None


def last_review(
    workspace: Any, change: ChangeRequest, since: str | None, progress: Echo
) -> dict[str, Any] | None:
    """The last review as the job state has it ({"head", "added", "note"}), from the head the summary
    recorded (`since`) and the lines the PR had added there, read from the checkout; None for a full
    review: no recorded head, the same head again, or a head the checkout lacks."""
    from ..change.incremental import added_at

    if not since or since == change.head_sha:
        return None
    before = added_at(workspace, change.base_sha, since) if workspace else None
    if before is None:
        progress.message(f"incremental review impossible ({since[:12]} not in the checkout): full review")
        return None
    note = (
        f"Incremental review of the commits {since[:12]}..{change.head_sha[:12]}; "
        "comment `/review` for a full review."
    )
    return {"head": since, "added": before, "note": note}


@dataclass
class ActionOutlet:
    """The Action's `ci_review.Outlet`: the review posted by `publisher` (GitHub's, the summary `state`
    as read), then the runner's outputs; `forge` tells which files GitHub sent no patch for."""

    label: str
    progress: Echo
    forge: Any
    publisher: Any
    state: Any
    env: Mapping[str, str]
    code: int = 0

    def skipped(self, why: str) -> None:
        from ..forges.github import actions
        from ..review_filters import skip_message

        click.echo(f"prereview: {skip_message(why)}", err=True)
        actions.append_step_summary(f"### prereview\n\n{skip_message(why)}\n", self.env)

    def publish(self, change: ChangeRequest, review: Review, scope: Diff | None, cfg: Config) -> None:
        from ..forges.base import PermissionDenied
        from ..forges.github import actions
        from ..pipeline.run import exit_code
        from ..render.markdown import summary

        missing = tuple(
            Skipped(p, "GitHub sent no patch (binary or too large)") for p in self.forge.missing_patches
        )
        review = replace(review, coverage=replace(review.coverage, skipped=review.coverage.skipped + missing))
        self.code = exit_code(review, cfg.review.fail_level)
        try:
            result = self.publisher.publish(review, parse(change.diff_text), scope=scope, state=self.state)
            self.progress.message(
                f"posted {result.posted} comment(s), {result.skipped} already there, {result.in_summary} "
                f"in the summary, {result.rejected} refused by GitHub, {result.resolved} resolved"
            )
            actions.append_step_summary(summary(review, not_inline=review.findings), self.env)
        except PermissionDenied as exc:
            click.echo(f"::warning::{actions.escape_data(f'prereview cannot comment on this PR: {exc}')}")
            for line in actions.annotation_lines(review.findings):
                click.echo(line)
            actions.append_step_summary(summary(review, not_inline=review.findings), self.env)
            if cfg.github.fail_on_permission:
                raise PrereviewError(str(exc)) from None
        self._runner_outputs(review, cfg)

    def _runner_outputs(self, review: Review, cfg: Config) -> None:
        from ..forges.base import PermissionDenied
        from ..forges.github import actions
        from ..forges.github.checks import create_check_run, upload_sarif

        api, number = self.forge.api, self.publisher.number
        for wanted, name, fn in (
            (
                cfg.github.check_run,
                "check run",
                lambda: create_check_run(api, review, conclusion="failure" if self.code else "neutral"),
            ),
            (
                cfg.github.sarif_upload,
                "SARIF upload",
                lambda: upload_sarif(api, review, ref=f"refs/pull/{number}/head"),
            ),
        ):
            if wanted:
                try:
                    fn()
                except PermissionDenied as exc:
                    click.echo(f"::warning::{actions.escape_data(f'prereview {name} skipped: {exc}')}")
                    if cfg.github.fail_on_permission:
                        raise PrereviewError(str(exc)) from None
        actions.set_outputs(actions.review_outputs(review), self.env)


def review(
    number: int,
    automatic: bool,
    cfg: Config,
    forge: Any,
    publisher: Any,
    env: Mapping[str, str],
    *,
    since: str | None,
    state: Any,
    notes: list[str],
    token: str,
) -> int:
    """PR `number` reviewed as the worker reviews it (`automatic`: a push, which `review.ignore` and
    `/pause` stop; `since`: the head the summary recorded, for an incremental review), published by the
    Action; the exit code."""
    from ..jobs.job import Job
    from ..types import ChangeRef
    from .ci_jobs import masking_of, run_job
    from .ci_review import CiReview

    progress = Echo("")
    repo = forge.api.repo_name
    change = forge.fetch(ChangeRef("github", repo, number=number))
    last = last_review(forge.workspace, change, since, progress)
    outlet = ActionOutlet(f"#{number}", progress, forge, publisher, state, env)
    job = Job(
        "review",
        "github",
        repo,
        number,
        head_sha=change.head_sha,
        auto=automatic,
        incremental=last is not None,
    )
    masking = masking_of([token])
    session = CiReview(change, outlet, notes, masking, incremental=True)
    progress.message(f"reviewing {repo}#{number} {change.base_sha[:12]}..{change.head_sha[:12]}")
    run_job(job, session, cfg, masking, progress, state=ActionState(state, last))
    return outlet.code
