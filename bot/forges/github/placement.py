"""Where GitHub accepts a review comment: a line (`line`/`side`) or a range within one hunk of the PR's
diff (`start_line`/`start_side`), or the whole file (`subject_type: file`). A suggestion replaces the
commented new-side lines, so it is only offered where it replaces exactly the finding's lines.
https://docs.github.com/rest/pulls/comments#create-a-review-comment-for-a-pull-request
"""

from __future__ import annotations

from typing import Any

from ...change.diff import Diff, FileDiff
from ...render.markdown import comment_body
from ...types import Finding
from ..base import Comment


def hunk_of(f: FileDiff, line: int, side: str) -> int | None:
    for i, h in enumerate(f.hunks):
        for ln in h.lines:
            no = ln.new_no if side == "RIGHT" else (ln.old_no if ln.kind != "+" else None)
            if no == line:
                return i
    return None


def fits(diff: Diff, comment: dict[str, Any]) -> bool:
    """Would GitHub accept this comment's position? (line in a hunk; a range within one hunk)."""
    f = diff.file(comment["path"])
    if f is None:
        return False
    end = hunk_of(f, comment["line"], comment.get("side", "RIGHT"))
    if end is None:
        return False
    if "start_line" not in comment:
        return True
    start = hunk_of(f, comment["start_line"], comment.get("start_side", "RIGHT"))
    return start == end and comment["start_line"] < comment["line"]


def inline_comment(f: Finding, diff: Diff, also: tuple[Finding, ...] = ()) -> dict[str, Any] | None:
    """The review comment for a finding (and `also`, the others on its lines), or None when no position
    of it is on the diff."""
    if f.side != "RIGHT":  # a suggestion replaces new-side lines; on removed lines it would make no sense
        f = f.with_(verified=False)
    if f.end_line and f.end_line > f.line:
        ranged = {
            "path": f.path,
            "start_line": f.line,
            "start_side": f.side,
            "line": f.end_line,
            "side": f.side,
            "body": comment_body(f, also=also),
        }
        if fits(diff, ranged):
            return ranged
    single = {"path": f.path, "line": f.line, "side": f.side}
    if not fits(diff, single):
        return None
    if f.end_line and f.end_line > f.line:
        # A suggestion replaces the commented lines: on a single line it would delete the rest. Keep the text.
        f = f.with_(verified=False)
    return {**single, "body": comment_body(f, also=also)}


def file_comment_body(f: Finding) -> str:
    """`filter_mode: file`: a finding on a line outside the hunks, posted on its file."""
    where = f"line {f.line}" + (f"–{f.end_line}" if f.end_line and f.end_line != f.line else "")
    return f"**{where}** (outside the diff)\n\n" + comment_body(f.with_(verified=False))


class GitHubPlacement:
    """`forges.base.Placement` for a GitHub PR: lines and ranges in one hunk, or the whole file."""

    def on_line(self, finding: Finding, diff: Diff, also: tuple[Finding, ...] = ()) -> Comment | None:
        where = inline_comment(finding, diff, also)
        if where is None:
            return None
        return Comment(finding, str(where["body"]), where, also)

    def on_file(
        self, finding: Finding, diff: Diff, why: str, also: tuple[Finding, ...] = ()
    ) -> Comment | None:
        """`subject_type: file` (the only reason a finding goes there on GitHub: outside the hunks)."""
        body = file_comment_body(finding)
        where = {"path": finding.path, "body": body, "subject_type": "file"}
        return Comment(finding, body, where, also, on_file=True)
