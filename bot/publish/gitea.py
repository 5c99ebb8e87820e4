"""Publish a Review to a Gitea / Forgejo pull request: one COMMENT review with inline comments, one
summary comment edited in place, nothing posted twice.

Collect, then flush: read the bot's own reviews (their inline comments carry fingerprint markers) and
its summary comment; post each new in-diff finding as a comment of one review; list the rest in the
summary; create the summary once, then edit it.

Positions (`routers/api/v1/repo/pull_review.go`, `CreatePullReview`, go-gitea/gitea): a comment's
`new_position` is the line number in the new file (an added or context line), `old_position` the line
number in the old file (a removed line; Gitea stores it as `-old_position`). They are file line numbers,
not offsets into the diff. Gitea has no multi-line comments and no committable suggestions: a range
sits on its first line and says which lines it covers; a verified fix is shown as a code block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from ..change.diff import Diff, parse
from ..config import GiteaConfig, ReviewConfig
from ..forges.protocols import PullReviewApi, Rejected
from ..progress import Progress, Quiet
from ..render.markdown import comment_body, fingerprints_in, is_summary, summary
from ..review_filters import plan_inline
from ..types import ChangeRequest, Finding, Review
from .github import _keep_walkthrough
from .grouping import same_place_groups

REVIEW_BODY = "**prereview** found {n} thing(s) on changed lines; the summary comment has the rest."


@dataclass
class PublishResult:
    posted: int = 0  # new inline comments
    already_posted: int = 0
    in_summary: int = 0  # findings listed in the summary only
    rejected: int = 0  # comments Gitea refused (moved to the summary)
    summary: str = "unchanged"  # "created" | "updated" | "unchanged"

    def line(self) -> str:
        parts = [f"{self.posted} new inline comment(s)"]
        if self.in_summary:
            parts.append(f"{self.in_summary} in the summary only")
        if self.already_posted:
            parts.append(f"{self.already_posted} already posted")
        if self.rejected:
            parts.append(f"{self.rejected} refused by Gitea")
        return ", ".join(parts) + f"; summary {self.summary}"


def _login(item: dict[str, Any]) -> str:
    user = item.get("user")
    return str(user.get("login") or "") if isinstance(user, dict) else ""


def posted_fingerprints(api: PullReviewApi, number: int, own: str) -> set[str]:
    """Fingerprints of the findings the bot's own reviews already carry (anyone else's text is not state)."""
    done: set[str] = set()
    for r in api.reviews(number):
        if _login(r) != own or not r.get("comments_count") or not isinstance(r.get("id"), int):
            continue
        for c in api.review_comments(number, int(r["id"])):
            if _login(c) == own:
                done |= fingerprints_in(str(c.get("body") or ""))
    return done


def own_summary(comments: list[dict[str, Any]], own: str) -> dict[str, Any] | None:
    """The bot's summary comment: starts with the summary marker and was written by the token's user."""
    return next((c for c in comments if _login(c) == own and is_summary(str(c.get("body") or ""))), None)


def review_comment(f: Finding, diff: Diff, also: tuple[Finding, ...] = ()) -> dict[str, Any] | None:
    """The review comment for a finding (and `also`, the others on its lines), or None when none of its
    lines is on the diff."""
    side = "LEFT" if f.side == "LEFT" else "RIGHT"
    last = max(f.last_line, f.line)
    at = next((n for n in range(f.line, last + 1) if diff.has_line(f.path, n, side)), None)
    if at is None:
        return None
    shown = f if side == "RIGHT" else f.with_(verified=False)  # a fix replaces new-side lines
    body = comment_body(shown, suggestion_header="", also=also)
    if last > f.line:
        body = f"**lines {f.line}–{last}**\n\n{body}"
    where = {"new_position": at} if side == "RIGHT" else {"old_position": at}
    return {"path": f.path, "body": body, **where}


_SECONDS = re.compile(r"\b\d+(?:\.\d+)?s\b")


def _same_summary(a: str, b: str) -> bool:
    """Equal apart from timings, so an identical re-run edits nothing."""
    return _SECONDS.sub("", a).strip() == _SECONDS.sub("", b).strip()


def upsert_summary(api: PullReviewApi, number: int, previous: dict[str, Any] | None, body: str) -> str:
    if previous is None:
        api.create_comment(number, body)
        return "created"
    if _same_summary(str(previous.get("body") or ""), body):
        return "unchanged"
    api.edit_comment(int(previous["id"]), body)
    return "updated"


def publish(
    api: PullReviewApi,
    change: ChangeRequest,
    review: Review,
    cfg: GiteaConfig,
    *,
    progress: Progress | None = None,
    review_cfg: ReviewConfig | None = None,
) -> PublishResult:
    """Post `review` (anchored on the PR's diff in `change`) on pull request `change.ref.number`."""
    progress = progress or Quiet()
    number = change.ref.number
    if number is None:
        raise ValueError("publish needs the pull request number in change.ref.number")
    diff = parse(change.diff_text)
    own = api.own_login()
    done = posted_fingerprints(api, number, own)
    res = PublishResult()
    where = plan_inline(review.findings, diff, review_cfg or ReviewConfig())
    comments: list[tuple[Finding, dict[str, Any]]] = []
    not_inline: list[Finding] = []
    riders_of, riders = same_place_groups(
        review.findings,
        lambda f: f.fingerprint not in done and f.in_diff and where.get(f.fingerprint) == "line",
    )
    for f in review.findings:
        if f.fingerprint in done:
            res.already_posted += 1
            continue
        done.add(f.fingerprint)
        if f.fingerprint in riders:  # in the comment of the first finding on its lines
            continue
        also = riders_of.get(f.fingerprint, ())
        c = review_comment(f, diff, also) if f.in_diff and where.get(f.fingerprint) == "line" else None
        if c is None or len(comments) >= cfg.max_comments:
            not_inline += [f, *also]
        else:
            comments.append((f, c))
    notes = review.notes
    if comments:
        data = {
            "commit_id": change.head_sha,
            "event": "COMMENT",
            "body": REVIEW_BODY.format(n=len(comments)),
            "comments": [c for _, c in comments],
        }
        try:
            api.create_review(number, data)
            res.posted = len(comments) + sum(len(riders_of.get(f.fingerprint, ())) for f, _ in comments)
        except Rejected as exc:  # e.g. the PR was closed meanwhile: nothing is lost, all go to the summary
            progress.message(f"Gitea refused the review ({exc}); its comments are in the summary")
            res.rejected = len(comments)
            not_inline += [g for f, _ in comments for g in (f, *riders_of.get(f.fingerprint, ()))]
            notes += (f"Gitea refused the inline comments ({exc}); they are listed here.",)
    res.in_summary = len(not_inline)
    previous = own_summary(api.issue_comments(number), own)
    body = summary(replace(review, notes=notes), not_inline=tuple(not_inline))
    body = _keep_walkthrough(body, str((previous or {}).get("body") or ""))
    res.summary = upsert_summary(api, number, previous, body)
    return res


def set_walkthrough(api: Any, number: int, block: str, *, into_description: bool = False) -> str:
    """`/describe`: the walkthrough block into the summary comment (created when there is none), or into
    the PR description between markers (the author's text stays as it is). Returns what changed."""
    from ..render.markdown import SUMMARY_MARKER
    from ..render.walkthrough import with_block

    if into_description:
        old = str(api.pull(number).get("body") or "")
        new = with_block(old, block)
        if new == old:
            return "unchanged"
        api.edit_pull(number, {"body": new})
        return "description updated"
    previous = own_summary(api.issue_comments(number), api.own_login())
    if previous is None:
        api.create_comment(number, f"{SUMMARY_MARKER}\n### prereview\n\n{block}")
        return "summary created"
    old = str(previous.get("body") or "")
    body = with_block(old, block)
    if body.strip() == old.strip():
        return "unchanged"
    api.edit_comment(int(previous["id"]), body)
    return "summary updated"
