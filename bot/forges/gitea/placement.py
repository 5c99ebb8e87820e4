"""Where Gitea / Forgejo accepts a review comment.

Positions (`routers/api/v1/repo/pull_review.go`, `CreatePullReview`, go-gitea/gitea): a comment's
`new_position` is the line number in the new file (an added or context line), `old_position` the line
number in the old file (a removed line; Gitea stores it as `-old_position`). They are file line numbers,
not offsets into the diff. Gitea has no multi-line comments and no committable suggestions: a range
sits on its first line and says which lines it covers; a verified fix is shown as a code block.
"""

from __future__ import annotations

from typing import Any

from ...change.diff import Diff
from ...render.markdown import comment_body
from ...types import Finding
from ..base import Comment


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


class GiteaPlacement:
    """`forges.base.Placement` for a Gitea / Forgejo PR: file line numbers; no comments on whole files."""

    def on_line(self, finding: Finding, diff: Diff, also: tuple[Finding, ...] = ()) -> Comment | None:
        where = review_comment(finding, diff, also)
        return None if where is None else Comment(finding, str(where["body"]), where, also)

    def on_file(
        self, finding: Finding, diff: Diff, why: str, also: tuple[Finding, ...] = ()
    ) -> Comment | None:
        return None  # Gitea's review comments need a line
