"""Publish a Review to a GitLab merge request: diff discussions, suggestions, one summary note.

Collect, then flush: list the MR's discussions once, skip fingerprints already posted, post each new
finding on its diff line (falling back to a file note, then to the summary), resolve our threads whose
finding is gone, and create or update the one summary note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from ..change.diff import Diff, parse
from ..config import GitLabConfig, ReviewConfig
from ..forges.protocols import DiffRefs, MRApi, PermissionDenied, Rejected
from ..progress import Progress, Quiet
from ..render.markdown import SUMMARY_MARKER, comment_body, fingerprints_in, is_summary, summary
from ..review_filters import plan_inline
from ..types import ChangeRequest, Finding, Review
from . import recheck
from .github import _keep_walkthrough
from .gitlab_position import anchor, file_position
from .grouping import same_place_groups


@dataclass
class PublishResult:
    discussions: int = 0  # new inline discussions
    file_notes: int = 0  # findings whose line GitLab refused, posted on the file instead
    in_summary: int = 0  # findings listed in the summary only (outside the diff, refused, over the cap)
    already_posted: int = 0
    resolved: int = 0
    summary: str = "unchanged"  # "created" | "updated" | "unchanged"
    rejections: list[str] = field(default_factory=list)
    cannot_resolve: bool = False  # the token's role may post but not resolve threads
    kept_unchecked: int = 0  # outdated threads left open: their source did not run in this review

    def line(self) -> str:
        parts = [f"{self.discussions} new discussion(s)"]
        if self.file_notes:
            parts.append(f"{self.file_notes} on files")
        if self.in_summary:
            parts.append(f"{self.in_summary} in the summary only")
        if self.already_posted:
            parts.append(f"{self.already_posted} already posted")
        if self.resolved:
            parts.append(f"{self.resolved} resolved")
        if self.cannot_resolve:
            parts.append("could not resolve outdated threads (the token needs the Developer role)")
        return ", ".join(parts) + f"; summary {self.summary}"


def _first_note(d: dict[str, Any]) -> dict[str, Any]:
    notes = d.get("notes") or [{}]
    return notes[0] if isinstance(notes[0], dict) else {}


def _is_summary(d: dict[str, Any]) -> bool:
    return is_summary(_first_note(d).get("body") or "")


def ours(discussions: list[dict[str, Any]], own: str | None) -> list[dict[str, Any]]:
    """The discussions the bot's user started (`own`: the token's username; None: no filter). Markers in
    anyone else's notes are text, never state."""
    if own is None:
        return discussions
    return [d for d in discussions if (_first_note(d).get("author") or {}).get("username") == own]


def posted_fingerprints(discussions: list[dict[str, Any]]) -> set[str]:
    """Fingerprints of findings already posted as threads (the summary's own list does not count)."""
    return {
        fp
        for d in discussions
        if not _is_summary(d)
        for fp in fingerprints_in(_first_note(d).get("body", ""))
    }


def _refs_for(api: MRApi, change: ChangeRequest, iid: int) -> DiffRefs:
    refs = api.diff_refs(iid, change.head_sha)
    if refs.head_sha == change.head_sha and refs.base_sha == change.base_sha:
        return refs
    # The reviewed diff is not an MR version: GitLab diffs start..head, so start = base gives exactly ours.
    return DiffRefs(change.base_sha, change.base_sha, change.head_sha)


def _inline_body(f: Finding, header: str | None, cfg: GitLabConfig, also: tuple[Finding, ...] = ()) -> str:
    if header is None or not cfg.suggestions:
        f = f.with_(suggestion=None)
    return comment_body(f, suggestion_header=header or "suggestion:-0+0", also=also)


def _file_body(
    f: Finding,
    why: str = "GitLab did not accept a comment on the line itself",
    also: tuple[Finding, ...] = (),
) -> str:
    where = f"line {f.line}" + (f"–{f.end_line}" if f.end_line and f.end_line != f.line else "")
    side = " (removed)" if f.side == "LEFT" else ""
    return f"**{where}{side}** ({why})\n\n" + comment_body(f.with_(suggestion=None), also=also)


def _post(
    api: MRApi,
    iid: int,
    f: Finding,
    diff: Diff,
    refs: DiffRefs,
    cfg: GitLabConfig,
    res: PublishResult,
    on_line: bool = True,
    also: tuple[Finding, ...] = (),
) -> bool:
    """Post one finding (and `also`, the others on its lines): on its line, else on its file; False when
    it must go to the summary. `on_line` False (`filter_mode: file`, a line outside the hunks): straight
    to its file."""
    a = anchor(f, diff, refs) if on_line else None
    if a is not None:
        try:
            api.create_discussion(iid, _inline_body(f, a.suggestion_header, cfg, also), a.position)
            res.discussions += 1
            return True
        except Rejected as exc:
            res.rejections.append(f"{f.path}:{f.line}: {exc}")
    pos = file_position(f.path, diff, refs) if cfg.file_notes else None
    if pos is not None:
        try:
            why = "GitLab did not accept a comment on the line itself" if on_line else "outside the diff"
            api.create_discussion(iid, _file_body(f, why, also), pos)
            res.file_notes += 1
            return True
        except Rejected as exc:
            res.rejections.append(f"{f.path} (file): {exc}")
    return False


def in_scope(position: dict[str, Any], scope: Diff) -> bool:
    """Whether a thread's position lies in the part of the diff an incremental review re-reviewed."""
    path = position.get("new_path") or position.get("old_path")
    if not path or scope.file(path) is None:
        return False
    if position.get("new_line") is not None:
        return scope.has_line(path, int(position["new_line"]))
    if position.get("old_line") is not None:
        return scope.has_line(path, int(position["old_line"]), "LEFT")
    return True  # a note on the file: the file was re-reviewed


def _resolve_stale(
    api: MRApi,
    iid: int,
    discussions: list[dict[str, Any]],
    review: Review,
    res: PublishResult,
    scope: Diff | None = None,
) -> None:
    current = {f.fingerprint for f in review.findings}
    unsure = {s.path for s in review.coverage.skipped}  # a file not reviewed this time keeps its threads
    for d in discussions:
        note = _first_note(d)
        fps = fingerprints_in(note.get("body", ""))
        if not fps or _is_summary(d) or fps & current:
            continue
        if not note.get("resolvable") or note.get("resolved"):
            continue
        position = note.get("position") or {}
        if position.get("new_path") in unsure:
            continue
        if scope is not None and not in_scope(position, scope):
            continue  # incremental: not re-reviewed, so not known to be fixed
        if recheck.not_rechecked(note.get("body", ""), review.unchecked):
            res.kept_unchecked += 1  # its source (tests, behaviour) did not run in this review
            continue
        try:
            api.resolve_discussion(iid, str(d["id"]))
        except PermissionDenied:  # resolving needs the Developer role; posting does not
            res.cannot_resolve = True
            return
        res.resolved += 1


_SECONDS = re.compile(r"\b\d+(?:\.\d+)?s\b")


def _same_summary(a: str, b: str) -> bool:
    """Equal apart from timings, so an identical re-run edits nothing (a new head sha still counts)."""
    return _SECONDS.sub("", a).strip() == _SECONDS.sub("", b).strip()


def _summary_note(
    api: MRApi, iid: int, discussions: list[dict[str, Any]], body: str, own: str | None = None
) -> str:
    if not any(_is_summary(d) for d in discussions):  # read again: another run may have made it since
        discussions = ours(api.discussions(iid), own)
    for d in discussions:
        if _is_summary(d):
            note = _first_note(d)
            if _same_summary(note.get("body", ""), body):
                return "unchanged"
            api.update_note(iid, int(note["id"]), body)
            return "updated"
    api.create_note(iid, body)
    return "created"


def set_walkthrough(api: Any, iid: int, block: str, *, into_description: bool = False) -> str:
    """`/describe`: the walkthrough block into the one summary note (created when there is none), or
    into the MR description between markers (the author's text stays as it is). Returns what changed."""
    from ..render.walkthrough import with_block

    if into_description:
        old = str(api.merge_request(iid).get("description") or "")
        new = with_block(old, block)
        if new == old:
            return "unchanged"
        api.update_merge_request(iid, {"description": new})
        return "description updated"
    own = getattr(api, "own_username", None)
    for d in ours(api.discussions(iid), own() if own is not None else None):  # never someone else's note
        if _is_summary(d):
            note = _first_note(d)
            body = with_block(note.get("body", ""), block)
            if body.strip() == (note.get("body") or "").strip():
                return "unchanged"
            api.update_note(iid, int(note["id"]), body)
            return "summary updated"
    api.create_note(iid, f"{SUMMARY_MARKER}\n### prereview\n\n{block}")
    return "summary created"


def publish(
    api: MRApi,
    change: ChangeRequest,
    review: Review,
    cfg: GitLabConfig,
    *,
    progress: Progress | None = None,
    scope: Diff | None = None,
    review_cfg: ReviewConfig | None = None,
) -> PublishResult:
    """Post `review` (anchored on the MR's diff in `change`). `scope`: for an incremental review, the part
    of the diff that was re-reviewed; threads outside it stay open. `review_cfg`: its `filter_mode` and
    `max_comments_per_file` decide what may go inline."""
    progress = progress or Quiet()
    iid = change.ref.number
    if iid is None:
        raise ValueError("publish needs the merge request iid in change.ref.number")
    diff = parse(change.diff_text)
    refs = _refs_for(api, change, iid)
    own = getattr(api, "own_username", None)
    discussions = ours(api.discussions(iid), own() if own is not None else None)
    done = posted_fingerprints(discussions)
    res = PublishResult()
    not_inline: list[Finding] = []
    where = plan_inline(review.findings, diff, review_cfg or ReviewConfig())
    riders_of, riders = same_place_groups(
        review.findings,
        lambda f: f.fingerprint not in done and f.in_diff and where.get(f.fingerprint) == "line",
    )
    for f in review.findings:
        if f.fingerprint in done:
            res.already_posted += 1
        elif f.fingerprint not in riders:  # a rider is in the discussion of the first finding on its lines
            also = riders_of.get(f.fingerprint, ())
            room = res.discussions + res.file_notes < cfg.max_discussions
            place = where.get(f.fingerprint, "summary")
            on_file = place == "file" and cfg.file_notes
            eligible = (f.in_diff and place == "line") or on_file
            if not (eligible and room and _post(api, iid, f, diff, refs, cfg, res, not on_file, also)):
                not_inline += [f, *also]
        done.add(f.fingerprint)
    for r in res.rejections:
        progress.message(f"GitLab refused a position, fell back: {r}")
    res.in_summary = len(not_inline)
    if cfg.resolve_stale:
        _resolve_stale(api, iid, discussions, review, res, scope)
    notes = review.notes
    if res.kept_unchecked:
        notes += (recheck.kept_note(res.kept_unchecked, review.unchecked),)
    if res.cannot_resolve:
        notes += (
            "Outdated prereview threads stay open: the token's role may not resolve threads (Developer).",
        )
    refused = sum(1 for r in res.rejections if "(file)" not in r)
    if refused:
        notes += (
            "GitLab refused the diff position of "
            f"{refused} finding(s); they are on their file or listed here.",
        )
    body = summary(replace(review, notes=notes), not_inline=tuple(not_inline))
    previous = next((_first_note(d).get("body", "") for d in discussions if _is_summary(d)), "")
    res.summary = _summary_note(
        api, iid, discussions, _keep_walkthrough(body, previous), own() if own is not None else None
    )
    return res
