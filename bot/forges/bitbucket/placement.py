"""Which (path, line) a Bitbucket comment can be anchored to: lines of the pull request's diff.

A comment anchor (`RestCommentThreadDiffAnchor`) names the file (`path`, the new path), the line, the
line's kind in the diff (`lineType` ADDED, CONTEXT or REMOVED) and which side the number counts on
(`fileType` TO for added and context lines, FROM for removed ones), against the pull request's
EFFECTIVE diff (target branch ... source branch, what the pull request page shows). A line outside
every hunk cannot carry an anchor that a reader sees on the diff: the finding goes to the summary.
Bitbucket has no multi-line anchor through REST (`multilineMarker` is read-only), so a range sits on
its first anchored line.
"""

from __future__ import annotations

from typing import Any

from ...change.diff import Diff
from ...types import Finding

LINE_TYPE = {"+": "ADDED", " ": "CONTEXT", "-": "REMOVED"}


def anchor_at(diff: Diff, path: str, line: int, side: str = "RIGHT") -> dict[str, Any] | None:
    """The anchor for one line, or None when the line is not in the diff."""
    f = diff.file(path)
    if f is None:
        return None
    got = (f.by_new if side == "RIGHT" else f.by_old).get(line)
    if got is None:
        return None
    kind = LINE_TYPE[got.kind]
    anchor: dict[str, Any] = {
        "diffType": "EFFECTIVE",
        "path": f.path,
        "line": line,
        "lineType": kind,
        "fileType": "FROM" if kind == "REMOVED" else "TO",
    }
    if f.old_path and f.old_path != f.path:
        anchor["srcPath"] = f.old_path
    return anchor


def anchor_for(f: Finding, diff: Diff) -> dict[str, Any] | None:
    """The anchor of the first line of the finding's range that is in the diff, or None."""
    side = "LEFT" if f.side == "LEFT" else "RIGHT"
    for n in range(f.line, max(f.last_line, f.line) + 1):
        if (a := anchor_at(diff, f.path, n, side)) is not None:
            return a
    return None
