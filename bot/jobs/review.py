"""The review job: the CLI's pipeline (`review_change`) on a checkout of base and head, published on the PR.

An automatic review (a push) stops when reviews are paused or `review.ignore` matches; `/review -i` (and
a push, where the forge can publish part of a PR) reviews only the hunks new since the last review
(`change/incremental.py`); a review whose head moved while it ran is not published.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import replace
from pathlib import Path

from ..change.diff import parse
from ..change.incremental import MAX_REMEMBERED_BYTES, added_lines, new_hunks
from ..config import Config
from ..pipeline.run import LazyModel, review_change
from ..review_filters import skip_message, skip_reason
from ..sandbox.exchange import counts_as_limit
from ..types import Throttled
from . import workspace
from .job import Job, RunStats
from .public import scrub_paths
from .session import ForgeSession, JobState, OwnLog

log = logging.getLogger("prereview.worker")


class HeadMoved(Throttled):
    """A commanded review whose head moved while it ran: the queue runs it again at once."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retry_after=0.0)


def review(job: Job, forge: ForgeSession, cfg: Config, model: LazyModel, state: JobState) -> RunStats | None:
    if job.auto and state.paused(job.pr_key):
        return None
    change = forge.fetch()
    last = state.last_reviewed(job.pr_key) if job.incremental and forge.incremental else None
    if last is not None and last.get("added") is None:
        last = None
    if last is not None and last["head"] == change.head_sha:
        forge.reply(f"No new commits since the last review (`{change.head_sha[:12]}`).", job.comment_id)
        return None
    with tempfile.TemporaryDirectory(prefix="prereview-review-") as tmp:
        ws = workspace.prepare(forge, change, cfg, Path(tmp))
        change = ws.change
        own_log = forge if isinstance(forge, OwnLog) else None
        if job.auto and (why := skip_reason(change, ws.cfg.review)):
            if own_log is not None:
                own_log.skipped(why)
            else:
                log.info("%s: %s", job.pr_key, skip_message(why, f"comment `/review` on the {forge.kind}"))
            return None
        reviewed, scope, notes = change, None, tuple[str, ...]()
        if last is not None:
            reviewed = replace(change, diff_text=new_hunks(change.diff_text, last["added"]))
            scope = parse(reviewed.diff_text)
            since = last["head"][:12]
            ours = f"Incremental review of what changed since `{since}`; `review` for a full one."
            notes = (str(last.get("note") or ours),)  # the state's own words, if it has some
            reviewed, more = workspace.since(reviewed, last["head"], forge.kind)
            notes += more
        result = review_change(
            reviewed, ws.cfg, model=model, progress=own_log.progress if own_log is not None else None
        )
    s = result.stats
    stats = replace(s, seconds_total=round(s.seconds_total + ws.seconds, 3))  # the fetch counts too
    said = tuple(scrub_paths(n) for n in result.notes + ws.notes + notes)  # no server paths on the PR
    result = replace(result, notes=said, stats=stats)
    if (now := forge.current_head()) and now != change.head_sha:
        moved(job, change.head_sha, now)
        return None
    forge.publish(change, result, scope, ws.cfg)
    state.set_findings(job.pr_key, change.head_sha, result.findings)  # what `/ask` is told
    state.set_reviewed(job.pr_key, change.head_sha, added_lines(change.diff_text), MAX_REMEMBERED_BYTES)
    limits = sum(counts_as_limit(n) for n in result.notes)
    return RunStats(s.prompt_tokens, s.completion_tokens, s.seconds_model, limits)


def moved(job: Job, reviewed: str, now: str) -> None:
    """The PR's head moved during the review (a force-push): the review is not published on a head that
    is gone. An automatic review leaves it to the push's own review; a command is reviewed again."""
    log.info("%s: head moved from %s to %s during the review; not published", job.pr_key, reviewed, now)
    if job.auto:
        return None
    raise HeadMoved(f"the head moved from `{reviewed[:12]}` to `{now[:12]}` during the review")
