"""One publishing flow for every forge: collect, then flush (as reviewdog does).

1. read what the bot has on the change (`Forge.published`): its inline comments and its summary;
2. plan: a finding already in an inline comment is skipped; findings on the same lines share one comment
   (`grouping.py`); each new finding goes on its line, or on its file (`filter_mode: file`, or a line
   the forge refused when `file_fallback`), at most `max_comments`; everything else is listed in the
   summary;
3. post (`Forge.post_review`); a comment the forge refuses moves to the summary instead of sinking the
   review;
4. resolve the bot's comments whose finding disappeared (`ResolvesThreads`), only where the review looked
   again: in the re-reviewed part (`scope`), in a file it read, from a source it could run
   (`recheck.py`);
5. create or update the one summary comment, in place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..change.diff import Diff, parse
from ..config import ReviewConfig
from ..forges.base import (
    Comment,
    Forge,
    KeepsState,
    PermissionDenied,
    Placement,
    Posted,
    Published,
    ResolvesThreads,
)
from ..progress import Progress, Quiet
from ..render.markdown import counts_line, fingerprints_in, summary
from ..review_filters import plan_inline
from ..types import ChangeRequest, Finding, Review
from . import recheck
from .grouping import same_place_groups


@dataclass(frozen=True)
class Options:
    """How one forge's publishing is configured (from its section of the config)."""

    max_comments: int = 30  # new inline comments per run
    file_comments: bool = True  # `filter_mode: file` findings may go on their file
    file_fallback: bool = False  # a line the forge refuses is tried on its file before the summary
    resolve_stale: bool = True
    title: str = "prereview"
    review: ReviewConfig = field(default_factory=ReviewConfig)


@dataclass
class PublishResult:
    """What one publish did, for the log line and the tests."""

    forge: str = ""
    comments: int = 0  # new comments on lines (findings on the same lines share one)
    file_comments: int = 0  # new comments on whole files
    posted: int = 0  # findings now in those comments, those riding along included
    skipped: int = 0  # findings already on the change
    in_summary: int = 0  # findings listed in the summary only (outside the diff, refused, over the cap)
    rejected: int = 0  # findings whose comment the forge refused (moved to the summary)
    rejections: list[str] = field(default_factory=list)  # the forge's reasons
    reviews: int = 0  # post requests that succeeded
    resolved: int = 0  # earlier comments resolved
    kept_unchecked: int = 0  # earlier comments left open: their source did not run in this review
    cannot_resolve: str = ""  # why outdated comments stay open (the token may post but not resolve)
    summary: str = "unchanged"  # "created" | "updated" | "unchanged"
    notes: tuple[str, ...] = ()

    def line(self) -> str:
        noun = "discussion(s)" if self.forge == "GitLab" else "inline comment(s)"
        parts = [f"{self.comments} new {noun}"]
        if self.file_comments:
            parts.append(f"{self.file_comments} on files")
        if self.in_summary:
            parts.append(f"{self.in_summary} in the summary only")
        if self.skipped:
            parts.append(f"{self.skipped} already posted")
        if self.rejected:
            parts.append(f"{self.rejected} refused by {self.forge}")
        if self.resolved:
            parts.append(f"{self.resolved} resolved")
        if self.cannot_resolve:
            parts.append(f"could not resolve outdated threads ({self.cannot_resolve})")
        return ", ".join(parts) + f"; summary {self.summary}"


def publish(
    forge: Forge,
    change: ChangeRequest,
    review: Review,
    opts: Options,
    *,
    diff: Diff | None = None,
    scope: Diff | None = None,
    published: Published | None = None,
    placement: Placement | None = None,
    progress: Progress | None = None,
) -> PublishResult:
    """Post `review` (anchored on `diff`, by default the change's own) on PR/MR `change.ref.number`.

    `scope`: for an incremental review, the part of the diff that was re-reviewed; earlier comments
    outside it stay open (and a KeepsState forge carries their entries over). `published`: the state as
    just read (saves requests). `placement`: the forge's own for `change` unless given."""
    number = change.ref.number
    if number is None:
        raise ValueError("publish needs the PR/MR number in change.ref.number")
    progress = progress or Quiet()
    diff = diff if diff is not None else parse(change.diff_text)
    published = published if published is not None else forge.published(number)
    res = PublishResult(forge=forge.name)
    refused_line = f"{forge.name} did not accept a comment on the line itself"
    placement = placement if placement is not None else forge.placement(change)
    plan = _plan(placement, review, diff, published, opts, res, refused_line)
    notes: list[str] = []  # the forge's, for the summary
    refused = _post(forge, number, review, plan.comments, res, notes)
    if opts.file_fallback:  # a line the forge refused: on its file, once
        lines = [c for c in refused if not c.on_file]
        again = [x for x in (placement.on_file(c.finding, diff, refused_line, c.also) for c in lines) if x]
        placed = {c.finding.fingerprint for c in again}
        refused = [c for c in refused if c.finding.fingerprint not in placed]
        refused += _post(forge, number, review, again, res, notes)
    for r in res.rejections:
        progress.message(f"{forge.name} refused a position, fell back: {r}")
    not_inline = plan.summary + [g for c in refused for g in (c.finding, *c.also)]
    res.rejected = len(not_inline) - len(plan.summary)
    res.in_summary = len(not_inline)
    res.notes = tuple(
        f"{forge.name} refused an inline comment on {g.path}:{g.line}; listed in the summary"
        for g in not_inline[len(plan.summary) :]
    )
    if opts.resolve_stale and isinstance(forge, ResolvesThreads):
        _resolve(forge, number, published.comments, review, scope, res)
    body = _summary(forge, review, tuple(not_inline), published, scope, res, notes, opts.title)
    res.summary = forge.upsert_summary(number, body, published.summary)
    return res


def _summary(
    forge: Forge,
    review: Review,
    not_inline: tuple[Finding, ...],
    published: Published,
    scope: Diff | None,
    res: PublishResult,
    notes: list[str],
    title: str,
) -> str:
    """The summary's text: the review with what this publish has to say, the walkthrough `/describe` put
    there before, and the forge's state markers where it keeps state there."""
    extra = [recheck.kept_note(res.kept_unchecked, review.unchecked)] if res.kept_unchecked else []
    extra += [res.cannot_resolve] if res.cannot_resolve else []
    shown = replace(review, notes=(*review.notes, *extra, *notes))
    body = summary(shown, not_inline=not_inline, title=title)
    previous = published.summary
    body = keep_walkthrough(body, previous.body if previous is not None else "")
    if isinstance(forge, KeepsState):
        current = {f.fingerprint for f in review.findings}
        body = forge.with_state(body, review.head, _carried(published, current, scope), previous)
    return body


@dataclass
class _Plan:
    comments: list[Comment] = field(default_factory=list)
    summary: list[Finding] = field(default_factory=list)


def _plan(
    placement: Placement,
    review: Review,
    diff: Diff,
    published: Published,
    opts: Options,
    res: PublishResult,
    refused_line: str,
) -> _Plan:
    done = {fp for c in published.comments for fp in fingerprints_in(c.body)}
    already = done | published.listed
    where = plan_inline(review.findings, diff, opts.review)
    riders_of, riders = same_place_groups(
        review.findings,
        lambda f: f.fingerprint not in already and f.in_diff and where.get(f.fingerprint) == "line",
    )
    plan = _Plan()
    for f in review.findings:
        if f.fingerprint in done:
            res.skipped += 1
            continue
        if f.fingerprint in riders:  # in the comment of the first finding on its lines
            continue
        also = riders_of.get(f.fingerprint, ())
        place = where.get(f.fingerprint, "summary")
        comment = None
        if len(plan.comments) < opts.max_comments:
            comment = _place(placement, f, diff, also, place, opts, refused_line)
        if comment is None:
            # Only an inline comment already there is final: a finding listed in the summary (refused
            # once, e.g. after a force-push; or no room) goes inline when it can now.
            res.skipped += f.fingerprint in already
            plan.summary += [f, *also]
        else:
            plan.comments.append(comment)
    return plan


def _place(
    placement: Placement,
    f: Finding,
    diff: Diff,
    also: tuple[Finding, ...],
    place: str,
    opts: Options,
    refused_line: str,
) -> Comment | None:
    if place == "file":
        return placement.on_file(f, diff, "outside the diff", also) if opts.file_comments else None
    if place != "line" or not f.in_diff:
        return None
    comment = placement.on_line(f, diff, also)
    if comment is None and opts.file_fallback:
        comment = placement.on_file(f, diff, refused_line, also)  # its lines are not on the forge's diff
    return comment


def _post(
    forge: Forge,
    number: int,
    review: Review,
    comments: Sequence[Comment],
    res: PublishResult,
    notes: list[str],
) -> list[Comment]:
    """Post `comments`; count them into `res`; the comments the forge refused."""
    if not comments:
        return []
    posting = forge.post_review(number, review.head, counts_line(review), comments)
    for c in posting.posted:
        res.file_comments += c.on_file
        res.comments += not c.on_file
        res.posted += 1 + len(c.also)
    res.reviews += posting.requests
    res.rejections += [why for _, why in posting.refused]
    notes += posting.notes
    return [c for c, _ in posting.refused]


def _resolve(
    forge: ResolvesThreads,
    number: int,
    comments: Sequence[Posted],
    review: Review,
    scope: Diff | None,
    res: PublishResult,
) -> None:
    current = {f.fingerprint for f in review.findings}
    unsure = {s.path for s in review.coverage.skipped}  # a file not reviewed this time keeps its threads
    for c in comments:
        fps = fingerprints_in(c.body)
        if c.resolved or not fps:
            continue
        if fps & current:  # still reported: stays; say so if it also holds a finding not re-checked
            res.kept_unchecked += bool(fps - current) and recheck.not_rechecked(c.body, review.unchecked)
            continue
        if c.path in unsure or (scope is not None and not in_scope(c, scope)):
            continue  # not looked at again, so not known to be fixed
        if recheck.not_rechecked(c.body, review.unchecked):
            res.kept_unchecked += 1  # its source (tests, behaviour) did not run in this review
            continue
        try:
            forge.resolve(number, c, review.head)
        except PermissionDenied as exc:  # e.g. GitLab: resolving needs the Developer role; posting does not
            res.cannot_resolve = str(exc)
            return
        res.resolved += 1


def in_scope(c: Posted, scope: Diff) -> bool:
    """Whether a comment lies in the part of the diff an incremental review re-reviewed (a comment on a
    whole file, or an outdated one: its file was re-reviewed)."""
    if not c.path or scope.file(c.path) is None:
        return False
    return c.line is None or scope.has_line(c.path, c.line, "LEFT" if c.side == "LEFT" else "RIGHT")


def _carried(published: Published, current: set[str], scope: Diff | None) -> set[str]:
    """Entries of the summary's state an incremental review keeps: earlier findings it did not re-review."""
    if scope is None:
        return set()
    gone = {fp for c in published.comments if in_scope(c, scope) for fp in fingerprints_in(c.body)}
    return set(published.listed) - current - (gone - current)


def keep_walkthrough(text: str, previous: str) -> str:
    """A review without a walkthrough keeps the one `/describe` put in the summary before."""
    from ..render.walkthrough import block_in, with_block

    old = block_in(previous)
    return with_block(text, old) if old and block_in(text) is None else text
