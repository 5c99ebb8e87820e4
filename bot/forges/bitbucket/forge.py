"""BitbucketForge: the `Forge` protocol of bot/forges/base.py for Bitbucket Data Center, plus what only
Bitbucket has here (a Code Insights report with annotations on the head commit).

Bitbucket has no "review" that groups comments: `post_review` posts each comment on its own, and a
comment Bitbucket refuses (400/409) is in `Posting.refused`. The bot's state is what the token's own
user wrote (Bitbucket names that user in the `X-AUSERNAME` answer header): its open inline comments
(root comments with an anchor, thread not resolved) and its summary (an unanchored comment that starts
with the summary marker). Edits carry the comment's current `version` (read just before: Bitbucket's
optimistic lock). Hidden markers travel as Markdown link reference definitions (`markers.py`):
Bitbucket shows raw HTML comments as text. A thread is resolved with `threadResolved` (Bitbucket 8.9+;
`ResolvesThreads`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...render.markdown import is_summary
from ...types import ChangeRef, ChangeRequest, Review
from ..base import Comment, Placement, Posted, Posting, Published, Rejected
from . import insights
from .api import BitbucketApi
from .markers import from_bitbucket, to_bitbucket
from .placement import BitbucketPlacement

if TYPE_CHECKING:
    from ..base import Forge, ResolvesThreads

REPORT_KEY = "prereview"  # one report per commit, replaced on every run
_SECONDS = re.compile(r"\b\d+(?:\.\d+)?s\b")


def _author(c: dict[str, Any]) -> str:
    a = c.get("author")
    return str(a.get("slug") or a.get("name") or "") if isinstance(a, dict) else ""


def _posted(c: dict[str, Any]) -> Posted:
    raw = c.get("anchor")
    anchor: dict[str, Any] = raw if isinstance(raw, dict) else {}
    line = anchor.get("line")
    return Posted(
        id=str(c.get("id")),
        body=from_bitbucket(str(c.get("text") or "")),
        path=str(anchor.get("path") or ""),
        line=line if isinstance(line, int) and not isinstance(line, bool) else None,
        side="LEFT" if anchor.get("fileType") == "FROM" else "RIGHT",
    )


class BitbucketForge:
    name = "Bitbucket"

    def __init__(self, api: BitbucketApi) -> None:
        self.api = api

    def fetch(self, ref: ChangeRef) -> ChangeRequest:
        return self.api.fetch(ref)

    def placement(self, change: ChangeRequest) -> Placement:
        return BitbucketPlacement()

    def published(self, number: int) -> Published:
        comments = self.api.comments(number)
        own = self.api.own_user(number)
        mine = [c for c in comments if _author(c) == own and "parent_id" not in c]
        inline = tuple(_posted(c) for c in mine if c.get("anchor") and not c.get("threadResolved"))
        summary = next(
            (c for c in mine if not c.get("anchor") and is_summary(from_bitbucket(str(c.get("text") or "")))),
            None,
        )
        return Published(inline, _posted(summary) if summary else None)

    def post_review(self, number: int, head: str, body: str, comments: Sequence[Comment]) -> Posting:
        posted: list[Comment] = []
        refused: list[tuple[Comment, str]] = []
        for c in comments:
            try:
                self.api.create_comment(number, to_bitbucket(c.body), dict(c.where))
            except Rejected as exc:
                refused.append((c, str(exc) or "refused"))
            else:
                posted.append(c)
        return Posting(tuple(posted), tuple(refused), requests=len(posted))

    def upsert_summary(self, number: int, body: str, previous: Posted | None) -> str:
        if previous is None:
            self.api.create_comment(number, to_bitbucket(body))
            return "created"
        if _SECONDS.sub("", previous.body).strip() == _SECONDS.sub("", body).strip():
            return "unchanged"
        current = self.api.comment(number, int(previous.id))
        version = int(current.get("version") or 0)
        self.api.update_comment(number, int(previous.id), to_bitbucket(body), version)
        return "updated"

    def reply(self, number: int, body: str, thread: str | None = None) -> None:
        self.api.create_comment(number, to_bitbucket(body), parent=int(thread) if thread else None)

    def resolve(self, number: int, comment: Posted, head: str) -> None:
        """Resolve the thread of a comment whose finding is gone at `head` (PermissionDenied when the
        token may comment but not resolve)."""
        current = self.api.comment(number, int(comment.id))
        self.api.resolve_thread(
            number, int(comment.id), str(current.get("text") or ""), int(current.get("version") or 0)
        )

    def report(self, sha: str, review: Review, *, failed: bool, key: str = REPORT_KEY) -> int:
        """The Code Insights report and its annotations on `sha`; returns the annotation count."""
        notes = insights.annotations_for(review)
        self.api.put_report(sha, key, insights.report(review, failed=failed))
        self.api.replace_annotations(sha, key, notes)
        return len(notes)


if TYPE_CHECKING:  # mypy proves the class is a Forge that resolves threads

    def _is_a_forge(api: BitbucketApi) -> tuple[Forge, ResolvesThreads]:
        forge = BitbucketForge(api)
        return forge, forge
