"""Publishing a Review on a Bitbucket Data Center pull request: inline comments anchored on the diff,
one summary comment edited in place, and a Code Insights report with annotations on the head commit.

Collect, then flush: read the pull request's comments once; the bot's own (written by the token's
user) carry fingerprint markers, so nothing is posted twice; each new in-diff finding becomes one
anchored comment (up to `max_comments`), the rest are listed in the summary, as are comments Bitbucket
refuses. The summary is created once, then edited with the `version` Bitbucket last returned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from ...change.diff import Diff, parse
from ...config import ReviewConfig
from ...progress import Progress, Quiet
from ...render.markdown import comment_body, fingerprints_in, is_summary, summary
from ...review_filters import plan_inline
from ...types import ChangeRef, ChangeRequest, Finding, Review
from ..protocols import Rejected
from . import insights
from .api import BitbucketApi
from .placement import anchor_for

REPORT_KEY = "prereview"  # one report per commit, replaced on every run


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


def _author(c: dict[str, Any]) -> str:
    a = c.get("author")
    return str(a.get("slug") or a.get("name") or "") if isinstance(a, dict) else ""


_SECONDS = re.compile(r"\b\d+(?:\.\d+)?s\b")


class BitbucketForge:
    """A pull request's published state and the writes the publishing flow needs."""

    name = "bitbucket"

    def __init__(self, api: BitbucketApi) -> None:
        self.api = api

    def fetch(self, ref: ChangeRef) -> ChangeRequest:
        return self.api.fetch(ref)

    def own_comments(self, number: int) -> list[dict[str, Any]]:
        comments = self.api.comments(number)
        own = self.api.own_user(number)
        return [c for c in comments if _author(c) == own]

    def posted(self, own: list[dict[str, Any]]) -> set[str]:
        """Fingerprints the bot's inline comments already carry."""
        return {fp for c in own if c.get("anchor") for fp in fingerprints_in(str(c.get("text") or ""))}

    def post_comment(self, number: int, f: Finding, diff: Diff) -> bool:
        """One inline comment; False when the finding has no line on the diff."""
        anchor = anchor_for(f, diff)
        if anchor is None:
            return False
        body = comment_body(
            f if anchor["fileType"] == "TO" else f.with_(verified=False), suggestion_header=""
        )
        if max(f.last_line, f.line) > f.line:
            body = f"**lines {f.line}–{f.last_line}**\n\n{body}"
        self.api.create_comment(number, body, anchor)
        return True

    def upsert_summary(self, number: int, own: list[dict[str, Any]], body: str) -> str:
        previous = next(
            (c for c in own if not c.get("anchor") and is_summary(str(c.get("text") or ""))), None
        )
        if previous is None:
            self.api.create_comment(number, body)
            return "created"
        old = str(previous.get("text") or "")
        if _SECONDS.sub("", old).strip() == _SECONDS.sub("", body).strip():
            return "unchanged"
        self.api.update_comment(number, int(previous["id"]), body, int(previous.get("version") or 0))
        return "updated"

    def reply(self, number: int, text: str) -> None:
        self.api.create_comment(number, text)

    def report(self, sha: str, review: Review, *, failed: bool, key: str = REPORT_KEY) -> int:
        """The Code Insights report and its annotations on `sha`; returns the annotation count."""
        notes = insights.annotations_for(review)
        self.api.put_report(sha, key, insights.report(review, failed=failed))
        self.api.replace_annotations(sha, key, notes)
        return len(notes)


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
    diff = parse(change.diff_text)
    own = forge.own_comments(number)
    done = forge.posted(own)
    where = plan_inline(review.findings, diff, review_cfg or ReviewConfig())
    res, not_inline, notes = PublishResult(), [], review.notes
    for f in review.findings:
        if f.fingerprint in done:
            res.already_posted += 1
            continue
        done.add(f.fingerprint)
        inline = f.in_diff and where.get(f.fingerprint) == "line" and res.posted < opts.max_comments
        try:
            ok = inline and forge.post_comment(number, f, diff)
        except Rejected as exc:
            progress.message(
                f"Bitbucket refused a comment on {f.path}:{f.line} ({exc}); it is in the summary"
            )
            res.rejected += 1
            ok = False
        res.posted += ok
        if not ok:
            not_inline.append(f)
    if res.rejected:
        notes += (f"Bitbucket refused {res.rejected} inline comment(s); they are listed here.",)
    res.in_summary = len(not_inline)
    body = summary(replace(review, notes=notes), not_inline=tuple(not_inline))
    res.summary = forge.upsert_summary(number, own, body)
    if opts.insights:
        res.annotations = forge.report(change.head_sha, review, failed=failed, key=opts.report_key)
    return res
