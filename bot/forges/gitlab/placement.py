"""GitLab diff positions for findings: text positions, line codes, line ranges, suggestion offsets.

GitLab accepts a diff note only when (old_line, new_line) is exactly a line of the MR diff:
an added line has new_line only, a removed line old_line only, a context line both
(Gitlab::Diff::File#line_for_position). Anything else is answered with
`Note {:line_code=>["can't be blank", "must be a valid line code"]}`.
Docs: https://docs.gitlab.com/api/discussions/#create-a-new-thread-in-the-merge-request-diff
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ...change.diff import Diff, FileDiff
from ...render.markdown import comment_body
from ...types import Finding
from ..base import Comment
from .api import DiffRefs


@dataclass(frozen=True)
class GLine:
    """A diff line as GitLab's parser numbers it: both counters always set (for line codes)."""

    kind: str  # "+", "-" or " "
    old_pos: int
    new_pos: int

    @property
    def old_line(self) -> int | None:
        return None if self.kind == "+" else self.old_pos

    @property
    def new_line(self) -> int | None:
        return None if self.kind == "-" else self.new_pos


@dataclass(frozen=True)
class Anchor:
    """Where a finding's discussion goes, and how a suggestion there reaches lines line..end_line."""

    position: dict[str, Any]
    suggestion_header: str | None  # e.g. "suggestion:-2+0"; None when no suggestion can apply here


def line_code(path: str, old_pos: int, new_pos: int) -> str:
    """`<sha1(path)>_<old>_<new>`, GitLab's Gitlab::Git.diff_line_code."""
    return f"{hashlib.sha1(path.encode(), usedforsecurity=False).hexdigest()}_{old_pos}_{new_pos}"


def gitlab_lines(f: FileDiff) -> list[GLine]:
    """Number a file's diff lines like Gitlab::Diff::Parser: counters run through added/removed lines."""
    out: list[GLine] = []
    for h in f.hunks:
        old, new = h.old_start, h.new_start
        for ln in h.lines:
            out.append(GLine(ln.kind, old, new))
            if ln.kind != "+":
                old += 1
            if ln.kind != "-":
                new += 1
    return out


def _find(lines: list[GLine], line: int, side: str) -> GLine | None:
    for gl in lines:
        if side == "LEFT" and gl.kind == "-" and gl.old_pos == line:
            return gl
        if side != "LEFT" and gl.kind != "-" and gl.new_pos == line:
            return gl
    return None


def _base(f: FileDiff, refs: DiffRefs, position_type: str = "text") -> dict[str, Any]:
    return {
        "base_sha": refs.base_sha,
        "start_sha": refs.start_sha,
        "head_sha": refs.head_sha,
        "position_type": position_type,
        "old_path": f.old_path,
        "new_path": f.path,
    }


def _range_end(f: FileDiff, gl: GLine) -> dict[str, Any]:
    """One end of a line_range. GitLab shows the range only with old_line/new_line next to the line
    code (gitlab-org/api/client-go!2254); `type` is "new" for an added line, else "old" (API docs)."""
    end: dict[str, Any] = {
        "line_code": line_code(f.path, gl.old_pos, gl.new_pos),
        "type": "new" if gl.kind == "+" else "old",
    }
    if gl.old_line is not None:
        end["old_line"] = gl.old_line
    if gl.new_line is not None:
        end["new_line"] = gl.new_line
    return end


def anchor(finding: Finding, diff: Diff, refs: DiffRefs) -> Anchor | None:
    """The text position for a finding, or None when its lines are not in the diff.

    A multi-line finding sits on its last line (as GitLab's UI does) with a `line_range`, and its
    suggestion reaches back with `-N+0`.
    """
    f = diff.file(finding.path)
    if f is None or f.is_binary:
        return None
    lines = gitlab_lines(f)
    side = "LEFT" if finding.side == "LEFT" else "RIGHT"
    start = _find(lines, finding.line, side)
    end = _find(lines, finding.last_line, side) if finding.last_line != finding.line else start
    if start is None and end is None:
        return None
    at = end or start
    assert at is not None
    pos = _base(f, refs)
    if at.old_line is not None:
        pos["old_line"] = at.old_line
    if at.new_line is not None:
        pos["new_line"] = at.new_line
    if start is not None and end is not None and start != end:
        pos["line_range"] = {"start": _range_end(f, start), "end": _range_end(f, end)}
    header = None
    if side == "RIGHT" and at.new_line is not None:
        above = at.new_pos - finding.line
        below = finding.last_line - at.new_pos
        header = f"suggestion:-{above}+{below}"
    return Anchor(pos, header)


def file_position(path: str, diff: Diff, refs: DiffRefs) -> dict[str, Any] | None:
    """A position on the whole file (position_type "file", GitLab >= 16.4), for when a line is rejected."""
    f = diff.file(path)
    return None if f is None else _base(f, refs, "file")


def file_body(f: Finding, why: str, also: tuple[Finding, ...] = ()) -> str:
    """A finding posted on its whole file: which lines, and why not on them."""
    where = f"line {f.line}" + (f"–{f.end_line}" if f.end_line and f.end_line != f.line else "")
    side = " (removed)" if f.side == "LEFT" else ""
    return f"**{where}{side}** ({why})\n\n" + comment_body(f.with_(suggestion=None), also=also)


class GitLabPlacement:
    """`forges.base.Placement` for one MR version (`refs`); `suggestions`: offer committable suggestions."""

    def __init__(self, refs: DiffRefs, *, suggestions: bool = True) -> None:
        self.refs, self.suggestions = refs, suggestions

    def on_line(self, finding: Finding, diff: Diff, also: tuple[Finding, ...] = ()) -> Comment | None:
        a = anchor(finding, diff, self.refs)
        if a is None:
            return None
        header = a.suggestion_header
        f = finding if header is not None and self.suggestions else finding.with_(suggestion=None)
        body = comment_body(f, suggestion_header=header or "suggestion:-0+0", also=also)
        return Comment(finding, body, {"position": a.position}, also)

    def on_file(
        self, finding: Finding, diff: Diff, why: str, also: tuple[Finding, ...] = ()
    ) -> Comment | None:
        pos = file_position(finding.path, diff, self.refs)
        if pos is None:
            return None
        return Comment(finding, file_body(finding, why, also), {"position": pos}, also, on_file=True)
