"""Publish a Review to a GitHub PR: one COMMENT review, one summary comment, nothing posted twice.

Collect, then flush (as reviewdog does):
1. list what is already there: our review comments (fingerprint markers) and the summary comment;
2. plan: findings already posted are skipped; in-diff findings become inline comments (line/side,
   start_line/start_side for ranges, committable suggestions only for verified patches), at most
   `max_comments` per request; everything else is listed in the summary;
3. post one review (event COMMENT, never APPROVE). On 422 the comments are re-validated against the
   diff GitHub has (`/pulls/{n}/files`) and the rest posted; if GitHub still refuses, bisect. A bad
   comment moves to the summary instead of sinking the review;
4. mark our comments whose finding disappeared as resolved (edit in place);
5. create or update the one summary comment (hidden marker), in place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from ..change.diff import Diff, FileDiff, parse
from ..config import ReviewConfig
from ..forges.github import GitHubAPI, PostedComment, patch_to_diff
from ..render.markdown import (
    SUMMARY_MARKER,
    comment_body,
    counts_line,
    fingerprint_marker,
    fingerprints_in,
    is_summary,
    trailing_markers,
)
from ..review_filters import plan_inline
from ..types import Finding, Review
from . import recheck
from .grouping import same_place_groups

RESOLVED_MARKER = "<!-- prereview:resolved -->"
PAUSED_MARKER = "<!-- prereview:paused -->"
_HEAD = re.compile(r"<!-- prereview:head=([0-9a-f]{7,64}) -->")
MAX_BODY = 65_000  # GitHub rejects comment bodies over 65,536 characters


@dataclass(frozen=True)
class SummaryState:
    """What the summary comment remembers between runs."""

    comment_id: int | None = None
    body: str = ""
    paused: bool = False
    head: str | None = None  # head sha of the last review

    @property
    def fingerprints(self) -> set[str]:
        return fingerprints_in("\n".join(trailing_markers(self.body)))  # the trailing marker block only


def is_bot_login(login: str, bot_logins: frozenset[str] = frozenset()) -> bool:
    """Comments the bot may have written: a GitHub App or Actions token (`*[bot]`), or an account the
    server's `server.bot_logins` names (a personal access token's user)."""
    return login.endswith("[bot]") or login.lower() in bot_logins


@dataclass(frozen=True)
class PublishResult:
    posted: int = 0  # new inline comments
    skipped: int = 0  # findings already on the PR
    in_summary: int = 0  # findings listed only in the summary
    rejected: int = 0  # inline comments GitHub refused (moved to the summary)
    resolved: int = 0  # earlier comments marked resolved
    reviews: int = 0  # review requests that succeeded (1, more only after bisecting a 422)
    summary_id: int | None = None
    notes: tuple[str, ...] = field(default=())


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


def summary_state(notes: list[Any], bot_logins: frozenset[str] = frozenset()) -> SummaryState:
    """The bot's summary comment: it starts with the summary marker, its author is the bot, and its state
    (paused, last head, fingerprints) is read from its trailing marker block only."""
    for n in sorted(notes, key=lambda n: n.id):  # the oldest: the one concurrent runs all adopt
        if is_summary(n.body) and is_bot_login(getattr(n, "login", ""), bot_logins):
            markers = trailing_markers(n.body)
            heads = [m.group(1) for m in map(_HEAD.fullmatch, markers) if m]
            return SummaryState(n.id, n.body, PAUSED_MARKER in markers, heads[-1] if heads else None)
    return SummaryState()


def _keep_walkthrough(text: str, previous: str) -> str:
    """A review without a walkthrough keeps the one `/describe` put in the summary before."""
    from ..render.walkthrough import block_in, with_block

    old = block_in(previous)
    return with_block(text, old) if old and block_in(text) is None else text


def resolved_body(old: str, head: str) -> str:
    return (
        f"✅ **Resolved** — prereview no longer reports this at `{head[:12]}`.\n\n"
        f"<details><summary>Original comment</summary>\n\n{old}\n\n</details>\n{RESOLVED_MARKER}"
    )


def file_comment_body(f: Finding) -> str:
    """`filter_mode: file`: a finding on a line outside the hunks, posted on its file."""
    where = f"line {f.line}" + (f"–{f.end_line}" if f.end_line and f.end_line != f.line else "")
    return f"**{where}** (outside the diff)\n\n" + comment_body(f.with_(verified=False))


class GitHubPublisher:
    def __init__(
        self,
        api: GitHubAPI,
        number: int,
        *,
        max_comments: int = 30,
        bot_logins: frozenset[str] = frozenset(),
        review_cfg: ReviewConfig | None = None,
    ) -> None:
        """`review_cfg`: its `filter_mode` and `max_comments_per_file` decide what may go inline."""
        self.api, self.number, self.max_comments = api, number, max_comments
        self.bot_logins = frozenset(x.lower() for x in bot_logins)
        self.review_cfg = review_cfg or ReviewConfig()
        self.threads_resolved = 0  # review threads resolved over GraphQL by the last publish
        self.thread_notes: list[str] = []

    # -- reading ----------------------------------------------------------------------------------
    def ours(self) -> list[PostedComment]:
        """Our live (not yet resolved) review comments."""
        return [
            c
            for c in self.api.review_comments(self.number)
            if fingerprints_in(c.body)
            and RESOLVED_MARKER not in c.body
            and is_bot_login(c.login, self.bot_logins)
        ]

    def summary(self) -> SummaryState:
        return summary_state(self.api.issue_comments(self.number), self.bot_logins)

    def posted(self) -> set[str]:
        """Fingerprints already on the PR (inline comments and the summary)."""
        fps = set(self.summary().fingerprints)
        for c in self.ours():
            fps |= fingerprints_in(c.body)
        return fps

    # -- writing ----------------------------------------------------------------------------------
    def publish(
        self,
        review: Review,
        diff: Diff,
        *,
        scope: Diff | None = None,
        state: SummaryState | None = None,
        title: str = "prereview",
    ) -> PublishResult:
        """Post `review` (whose findings were anchored on `diff`, the PR's base...head diff).

        `scope`: for an incremental review, the part of the diff that was re-reviewed; earlier comments
        outside it are kept (not resolved) and earlier summary entries carried over. `state`: the summary
        as just read (saves a request).
        """
        existing = self.ours()
        state = state if state is not None else self.summary()
        inline_fps = {fp for c in existing for fp in fingerprints_in(c.body)}
        already = inline_fps | state.fingerprints
        current = {f.fingerprint for f in review.findings}

        planned: list[tuple[Finding, dict[str, Any]]] = []
        on_file: list[Finding] = []
        not_inline: list[Finding] = []
        skipped = 0
        where = plan_inline(review.findings, diff, self.review_cfg)
        riders_of, riders = same_place_groups(
            review.findings,
            lambda f: f.fingerprint not in already and f.in_diff and where.get(f.fingerprint) == "line",
        )
        for f in review.findings:
            if f.fingerprint in inline_fps:
                skipped += 1
                continue
            if f.fingerprint in riders:  # in the comment of the first finding on its lines
                continue
            also = riders_of.get(f.fingerprint, ())
            place = where.get(f.fingerprint, "summary")
            comment = inline_comment(f, diff, also) if f.in_diff and place == "line" else None
            room = len(planned) + len(on_file) < self.max_comments
            # Only an inline comment already there is final: a finding listed in the summary (GitHub
            # refused it once, e.g. after a force-push; or no room) goes inline when it can now.
            if place == "file" and room:
                on_file.append(f)
                continue
            if comment is None or not room:
                skipped += f.fingerprint in already
                not_inline += [f, *also]
                continue
            planned.append((f, comment))

        posted, rejected, reviews = self._post(planned, review)
        posted += [g for f in posted for g in riders_of.get(f.fingerprint, ())]
        rejected += [g for f in rejected for g in riders_of.get(f.fingerprint, ())]
        filed, refused = self._post_on_files(on_file, review.head)
        posted += filed
        rejected += refused
        not_inline += rejected
        resolved, kept = self._resolve(existing, current, scope, review.head, review.unchecked)
        if kept:  # findings whose source did not run here stay open; the summary says why
            review = replace(review, notes=(*review.notes, recheck.kept_note(kept, review.unchecked)))
        carried = set()
        if scope is not None:  # incremental: keep earlier findings that were not re-reviewed
            resolved_fps = set()
            for c in existing:
                if self._in_scope(c, scope):
                    resolved_fps |= fingerprints_in(c.body) - current
            carried = state.fingerprints - current - resolved_fps
        body = self._summary_body(review, tuple(not_inline), carried, state.paused, title, state.body)
        summary_id = self._upsert_summary(state, body)
        notes = tuple(
            f"GitHub refused an inline comment on {f.path}:{f.line}; listed in the summary" for f in rejected
        ) + tuple(self.thread_notes)
        return PublishResult(
            posted=len(posted),
            skipped=skipped,
            in_summary=len(not_inline),
            rejected=len(rejected),
            resolved=resolved,
            reviews=reviews,
            summary_id=summary_id,
            notes=notes,
        )

    def _post(
        self, planned: list[tuple[Finding, dict[str, Any]]], review: Review
    ) -> tuple[list[Finding], list[Finding], int]:
        if not planned:
            return [], [], 0
        ok, bad, reviews = self._post_batch(planned, review, validate=True)
        return [f for f, _ in ok], [f for f, _ in bad], reviews

    def _post_batch(
        self, batch: list[tuple[Finding, dict[str, Any]]], review: Review, *, validate: bool
    ) -> tuple[list[tuple[Finding, dict[str, Any]]], list[tuple[Finding, dict[str, Any]]], int]:
        from github import GithubException

        if not batch:
            return [], [], 0
        body = (
            f"**prereview** · {len(batch)} comment(s) on `{review.head[:12]}` · {counts_line(review)}\n\n"
            "The summary comment has the overview."
        )
        try:
            self.api.create_review(
                self.number,
                {
                    "commit_id": review.head,
                    "event": "COMMENT",
                    "body": body,
                    "comments": [c for _, c in batch],
                },
            )
            return batch, [], 1
        except GithubException as exc:
            if exc.status != 422:
                raise
        if len(batch) == 1:
            return [], batch, 0
        if validate:
            # The diff GitHub holds may differ from ours (e.g. a local diff with other rename detection).
            truth = parse(patch_to_diff(self.api.files(self.number))[0])
            good = [p for p in batch if fits(truth, p[1])]
            if len(good) < len(batch):
                ok, bad, n = self._post_batch(good, review, validate=False)
                return ok, bad + [p for p in batch if p not in good], n
        mid = len(batch) // 2
        ok1, bad1, n1 = self._post_batch(batch[:mid], review, validate=False)
        ok2, bad2, n2 = self._post_batch(batch[mid:], review, validate=False)
        return ok1 + ok2, bad1 + bad2, n1 + n2

    def _post_on_files(self, findings: list[Finding], head: str) -> tuple[list[Finding], list[Finding]]:
        from github import GithubException

        ok: list[Finding] = []
        bad: list[Finding] = []
        for f in findings:
            try:
                self.api.create_review_comment(
                    self.number,
                    {"commit_id": head, "path": f.path, "body": file_comment_body(f), "subject_type": "file"},
                )
                ok.append(f)
            except GithubException as exc:
                if exc.status != 422:
                    raise
                bad.append(f)
        return ok, bad

    @staticmethod
    def _in_scope(c: PostedComment, scope: Diff) -> bool:
        return scope.file(c.path) is not None and (c.line is None or scope.has_line(c.path, c.line))

    def _resolve(
        self,
        existing: list[PostedComment],
        current: set[str],
        scope: Diff | None,
        head: str,
        unchecked: tuple[str, ...] = (),
    ) -> tuple[int, int]:
        """(resolved, kept open because their source did not run in this review)."""
        stale = []
        kept = 0
        for c in existing:
            fps = fingerprints_in(c.body)
            if fps & current:  # still reported: stays; say so if it also holds a finding not re-checked
                kept += bool(fps - current) and recheck.not_rechecked(c.body, unchecked)
                continue
            if scope is not None and not self._in_scope(c, scope):
                continue
            if recheck.not_rechecked(c.body, unchecked):
                kept += 1
                continue
            self.api.edit_review_comment(c.id, resolved_body(c.body, head))
            stale.append(c.id)
        if stale:
            self._resolve_threads(set(stale))
        return len(stale), kept

    def _resolve_threads(self, comment_ids: set[int]) -> None:
        """Mark the threads of stale comments resolved too (GraphQL `resolveReviewThread`), so GitHub folds
        them. The edited body already says "Resolved"; a token that may not resolve threads is a note."""
        from github import GithubException

        from ..forges.github import GraphQLFailure

        try:
            for t in self.api.review_threads(self.number):
                if t.first_comment in comment_ids and not t.resolved:
                    self.api.resolve_review_thread(t.id)
                    self.threads_resolved += 1
        except (GraphQLFailure, GithubException) as exc:
            self.thread_notes.append(f"could not resolve review threads over GraphQL ({str(exc)[:120]})")

    def _summary_body(
        self,
        review: Review,
        not_inline: tuple[Finding, ...],
        carried: set[str],
        paused: bool,
        title: str,
        previous: str = "",
    ) -> str:
        from ..render.markdown import summary

        text = summary(review, not_inline=not_inline, title=title)
        text = _keep_walkthrough(text, previous)
        extra = [fingerprint_marker(fp) for fp in sorted(carried)]
        extra.append(f"<!-- prereview:head={review.head} -->")
        if paused:
            extra.append(PAUSED_MARKER)
        text = text.rstrip("\n") + "\n" + "\n".join(extra) + "\n"
        if len(text) > MAX_BODY:  # keep the markers (they sit at the end): cut the table in the middle
            markers = "\n".join(ln for ln in text.splitlines() if ln.startswith("<!-- prereview:"))
            text = text[: MAX_BODY - len(markers) - 80] + "\n\n… (truncated)\n" + markers + "\n"
        return text

    def _upsert_summary(self, state: SummaryState, body: str) -> int:
        """Edit the summary in place; create it only when there is none even now. Two runs at once (a push
        review and a comment command) both read "none" at their start: the summary is read again before
        creating, and if one appeared meanwhile anyway, every run adopts the oldest and removes its own."""
        if state.comment_id is None:
            state = self.summary()
        if state.comment_id is None:
            created = int(self.api.create_issue_comment(self.number, body)["id"])
            oldest = self.summary()
            if oldest.comment_id is None or oldest.comment_id == created:
                return created
            self.api.delete_issue_comment(created)
            state = oldest
        comment_id = state.comment_id
        assert comment_id is not None
        if state.body.strip() != body.strip():
            self.api.edit_issue_comment(comment_id, body)
        return comment_id

    def set_walkthrough(self, block: str) -> None:
        """`/describe`: the walkthrough block into the one summary comment (created when there is none)."""
        from ..render.walkthrough import with_block

        state = self.summary()
        if state.comment_id is None:
            self.api.create_issue_comment(self.number, f"{SUMMARY_MARKER}\n### prereview\n\n{block}")
            return
        body = with_block(state.body, block)
        if body.strip() != state.body.strip():
            self.api.edit_issue_comment(state.comment_id, body)

    def set_description(self, block: str) -> None:
        """`/describe --update`: the block into the PR description; the author's text stays as it is."""
        from ..render.walkthrough import with_block

        pr = self.api.pull(self.number)
        body = pr.body or ""
        new = with_block(body, block)
        if new != body:
            self.api.update_pull(self.number, {"body": new})

    def set_paused(self, paused: bool) -> None:
        """`/pause` and `/resume`: remembered in the summary comment."""
        state = self.summary()
        if state.comment_id is None:
            if paused:
                self.api.create_issue_comment(
                    self.number,
                    f"{SUMMARY_MARKER}\n### prereview\n\nAutomatic reviews "
                    f"are paused (`/resume` to resume).\n{PAUSED_MARKER}\n",
                )
            return
        body = state.body.replace(PAUSED_MARKER, "").rstrip("\n") + "\n"
        if paused:
            body += PAUSED_MARKER + "\n"
        if body.strip() != state.body.strip():
            self.api.edit_issue_comment(state.comment_id, body)
