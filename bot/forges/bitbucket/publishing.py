"""Publishing a Review on a Bitbucket pull request through the `Forge` protocol, then the Code Insights
report.

Interim: this drives BitbucketForge the way `bot/publish/flow.py` (being written) will drive every
forge — collect, then flush: read the bot's published state once; skip findings whose fingerprints are
already posted; place each new one on its line (or its file, or the summary, as `review.filter_mode`
and `max_comments_per_file` say), up to `max_comments`; post; list the refused and the rest in the
summary; create or edit the summary. When flow.py lands, `publish` becomes `flow.publish(forge, …)`
followed by `forge.report(…)`, and this module goes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...change.diff import parse
from ...config import ReviewConfig
from ...progress import Progress, Quiet
from ...render.markdown import fingerprints_in, summary
from ...review_filters import plan_inline
from ...types import ChangeRequest, Finding, Review
from ..base import Comment
from .forge import REPORT_KEY, BitbucketForge


@dataclass(frozen=True)
class Options:
    """Bitbucket publishing knobs (environment: PREREVIEW_BITBUCKET_MAX_COMMENTS, _INSIGHTS)."""

    max_comments: int = 30  # inline comments per run; the rest in the summary
    insights: bool = True  # a Code Insights report + annotations on the head commit
    report_key: str = REPORT_KEY


@dataclass
class PublishResult:
    posted: int = 0
    already_posted: int = 0
    in_summary: int = 0
    rejected: int = 0
    summary: str = "unchanged"  # "created" | "updated" | "unchanged"
    annotations: int = 0

    def line(self) -> str:
        parts = [f"{self.posted} new inline comment(s)"]
        if self.in_summary:
            parts.append(f"{self.in_summary} in the summary only")
        if self.already_posted:
            parts.append(f"{self.already_posted} already posted")
        if self.rejected:
            parts.append(f"{self.rejected} refused by Bitbucket")
        if self.annotations:
            parts.append(f"{self.annotations} Code Insights annotation(s)")
        return ", ".join(parts) + f"; summary {self.summary}"


def publish(
    forge: BitbucketForge,
    change: ChangeRequest,
    review: Review,
    opts: Options | None = None,
    *,
    failed: bool = False,
    progress: Progress | None = None,
    review_cfg: ReviewConfig | None = None,
) -> PublishResult:
    """Post `review` on pull request `change.ref.number` (anchored on `change.diff_text`)."""
    opts, progress = opts or Options(), progress or Quiet()
    number = change.ref.number
    if number is None:
        raise ValueError("publish needs the pull request id in change.ref.number")
    diff, place = parse(change.diff_text), forge.placement(change)
    state = forge.published(number)
    done = {fp for p in state.comments for fp in fingerprints_in(p.body)}
    where = plan_inline(review.findings, diff, review_cfg or ReviewConfig())
    res, comments, not_inline = PublishResult(), list[Comment](), list[Finding]()
    for f in review.findings:
        if f.fingerprint in done:
            res.already_posted += 1
            continue
        done.add(f.fingerprint)
        c = None
        if len(comments) < opts.max_comments and where.get(f.fingerprint) == "line":
            c = place.on_line(f, diff) if f.in_diff else None
        elif len(comments) < opts.max_comments and where.get(f.fingerprint) == "file":
            c = place.on_file(f, diff, "outside the diff")
        if c is None:
            not_inline.append(f)
        else:
            comments.append(c)
    posting = forge.post_review(number, change.head_sha, "", comments)
    res.posted, res.rejected = len(posting.posted), len(posting.refused)
    notes = review.notes + posting.notes
    for c, why in posting.refused:
        progress.message(f"Bitbucket refused a comment on {c.finding.path}:{c.finding.line} ({why})")
        not_inline.append(c.finding)
    if posting.refused:
        notes += (f"Bitbucket refused {len(posting.refused)} inline comment(s); they are listed here.",)
    res.in_summary = len(not_inline)
    body = summary(replace(review, notes=notes), not_inline=tuple(not_inline))
    res.summary = forge.upsert_summary(number, body, state.summary)
    if opts.insights:
        res.annotations = forge.report(change.head_sha, review, failed=failed, key=opts.report_key)
    return res
