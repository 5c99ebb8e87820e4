"""Where a Bitbucket comment can be anchored: lines of the pull request's diff, or a whole changed file.

A comment anchor (`RestCommentThreadDiffAnchor`) names the file (`path`, the new path; `srcPath` for a
renamed file), the line, the line's kind in the diff (`lineType` ADDED, CONTEXT or REMOVED) and which
side the number counts on (`fileType` TO for added and context lines, FROM for removed ones), against
the pull request's EFFECTIVE diff (what the pull request page shows). An anchor without a line is a
comment on the file. A line outside every hunk cannot carry an anchor a reader sees on the diff.
Bitbucket has no multi-line anchor through REST (`multilineMarker` is read-only), so a range sits on
its first anchored line and says which lines it covers.
"""

from __future__ import annotations

from typing import Any

from ...change.diff import Diff, FileDiff
from ...render.markdown import comment_body
from ...types import Finding
from ..base import Comment

LINE_TYPE = {"+": "ADDED", " ": "CONTEXT", "-": "REMOVED"}


def _file_anchor(f: FileDiff) -> dict[str, Any]:
    anchor: dict[str, Any] = {"diffType": "EFFECTIVE", "path": f.path}
    if f.old_path and f.old_path != f.path:
        anchor["srcPath"] = f.old_path
    return anchor


def anchor_at(diff: Diff, path: str, line: int, side: str = "RIGHT") -> dict[str, Any] | None:
    """The anchor for one line, or None when the line is not in the diff."""
    f = diff.file(path)
    if f is None:
        return None
    got = (f.by_new if side == "RIGHT" else f.by_old).get(line)
    if got is None:
        return None
    kind = LINE_TYPE[got.kind]
    return {
        **_file_anchor(f),
        "line": line,
        "lineType": kind,
        "fileType": "FROM" if kind == "REMOVED" else "TO",
    }


def anchor_for(f: Finding, diff: Diff) -> dict[str, Any] | None:
    """The anchor of the first line of the finding's range that is in the diff, or None."""
    side = "LEFT" if f.side == "LEFT" else "RIGHT"
    for n in range(f.line, max(f.last_line, f.line) + 1):
        if (a := anchor_at(diff, f.path, n, side)) is not None:
            return a
    return None


class BitbucketPlacement:
    """The `Placement` of bot/forges/base.py for Bitbucket: anchors on diff lines, or on a changed file."""

    def on_line(self, finding: Finding, diff: Diff, also: tuple[Finding, ...] = ()) -> Comment | None:
        anchor = anchor_for(finding, diff)
        if anchor is None:
            return None
        shown = finding if anchor["fileType"] == "TO" else finding.with_(verified=False)  # a fix is new-side
        body = comment_body(shown, suggestion_header="", also=also)
        if finding.last_line > finding.line:
            body = f"**lines {finding.line}–{finding.last_line}**\n\n{body}"
        return Comment(finding, body, anchor, also)

    def on_file(
        self, finding: Finding, diff: Diff, why: str, also: tuple[Finding, ...] = ()
    ) -> Comment | None:
        f = diff.file(finding.path)
        if f is None:
            return None
        body = f"**line {finding.line}** ({why})\n\n" + comment_body(
            finding.with_(verified=False), suggestion_header="", also=also
        )
        return Comment(finding, body, _file_anchor(f), also)
