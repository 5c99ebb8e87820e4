"""What every forge offers (one small `Forge` protocol), what some offer (optional abilities, each its own
protocol, detected with `isinstance`), the records they exchange with the publishing flow, and the two
errors a forge raises for a caller to handle.

A forge is one folder, `bot/forges/<name>/`: `api.py` (the HTTP client, retries through `forges/http.py`),
`placement.py` (where a finding may be commented: the forge's line/position rules) and `forge.py` (the
class that implements `Forge`). `bot/publish/flow.py` drives any `Forge`; forges never import publish.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..change.diff import Diff
from ..types import ChangeRef, ChangeRequest, Finding, PrereviewError


class PermissionDenied(PrereviewError):
    """The token may not do this (401/403 on a write): a fork PR's read-only token, a missing scope, or a
    role below the one the action needs (GitLab: Developer to resolve threads)."""


class Rejected(Exception):
    """The forge refused one request's content, not the token: a position not on its diff (GitHub 422,
    GitLab 400), a review on a closed PR (Gitea 422). The flow lists what it held in the summary."""


@dataclass(frozen=True)
class Posted:
    """A comment the bot wrote on a change, as the forge holds it now."""

    id: str  # the comment's own id (a review comment, a note, a conversation comment)
    body: str
    path: str = ""  # "" for a conversation comment (the summary)
    line: int | None = None  # the line it sits on; None when on the whole file, or outdated
    side: str = "RIGHT"  # "LEFT": `line` counts in the old file
    thread: str = ""  # what a reply or a resolve addresses (GitLab: the discussion id); "" = `id`
    resolved: bool = False  # nothing left to resolve: resolved already, or a note the forge cannot resolve


@dataclass(frozen=True)
class Published:
    """What the bot has on a change: its inline comments still open (fingerprint markers in their bodies,
    written by the bot's own user) and its one summary comment."""

    comments: tuple[Posted, ...] = ()
    summary: Posted | None = None
    listed: frozenset[str] = frozenset()  # fingerprints the summary keeps as state (KeepsState forges)


@dataclass(frozen=True)
class Comment:
    """One inline comment to post: the finding that leads it, the others on its lines (`also`), its text,
    and where it goes in the forge's own terms (built by the forge's placement, read only by the forge)."""

    finding: Finding
    body: str
    where: Mapping[str, Any]
    also: tuple[Finding, ...] = ()
    on_file: bool = False  # on the whole file, not on lines


@dataclass(frozen=True)
class Posting:
    """What became of one `post_review`: the comments now on the change, those the forge refused (with
    its reason; the flow lists their findings in the summary), and the requests that succeeded."""

    posted: tuple[Comment, ...] = ()
    refused: tuple[tuple[Comment, str], ...] = ()
    requests: int = 0
    notes: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class HeadBranch:
    """The PR's source branch, and whether it lives in the PR's own repository (not a fork)."""

    ref: str
    same_repo: bool


class Placement(Protocol):
    """Where a forge accepts a comment for a finding (its `placement.py`), for one change."""

    def on_line(self, finding: Finding, diff: Diff, also: tuple[Finding, ...] = ()) -> Comment | None:
        """The comment on the finding's lines, or None when none of them is on the diff as the forge
        counts it."""
        ...

    def on_file(
        self, finding: Finding, diff: Diff, why: str, also: tuple[Finding, ...] = ()
    ) -> Comment | None:
        """A comment on the finding's whole file (`why` says why not on its line), or None when the
        forge has no file comments."""
        ...


class Forge(Protocol):
    """One code host, for one repository. Constructing it does no I/O; `number` is the PR/MR number."""

    name: str  # "GitHub", "GitLab", "Gitea": in messages

    def fetch(self, ref: ChangeRef) -> ChangeRequest:
        """The change (metadata and its diff as the forge computes it)."""
        ...

    def placement(self, change: ChangeRequest) -> Placement:
        """The position rules for comments on `change` (GitLab reads its diff refs here)."""
        ...

    def published(self, number: int) -> Published:
        """The bot's own comments on the change, read fresh."""
        ...

    def post_review(self, number: int, head: str, body: str, comments: Sequence[Comment]) -> Posting:
        """Post `comments` on commit `head`, as one review where the forge has reviews (`body`: the
        review's counts line, for its text); a comment the forge refuses is in `Posting.refused`, never
        an exception."""
        ...

    def upsert_summary(self, number: int, body: str, previous: Posted | None) -> str:
        """Create the summary comment, or edit `previous` in place: "created", "updated", "unchanged"."""
        ...

    def reply(self, number: int, body: str, thread: str | None = None) -> None:
        """A comment on the change's conversation, or an answer inside `thread` (`Posted.thread or id`)."""
        ...


@runtime_checkable
class ResolvesThreads(Protocol):
    """The forge can mark an earlier comment as resolved (GitHub, GitLab; Gitea edits it to say so)."""

    def resolve(self, number: int, comment: Posted, head: str) -> None:
        """Mark `comment` resolved: its finding is gone at `head`. PermissionDenied when the token's role
        may post but not resolve."""
        ...


@runtime_checkable
class KeepsState(Protocol):
    """The forge keeps the bot's state in the summary comment itself (GitHub: the fingerprints listed
    there, the last reviewed head, `/pause`), as hidden markers at its end."""

    def with_state(self, body: str, head: str, carried: set[str], previous: Posted | None) -> str:
        """`body` with the state markers: `head`, the fingerprints `carried` over from `previous` (an
        incremental review keeps what it did not re-review), whether reviews are paused."""
        ...


@runtime_checkable
class SuggestsFixes(Protocol):
    """The forge has committable suggestions: a verified fix becomes one click for the author."""

    def suggest(self, number: int, head: str, body: str, comments: Sequence[Comment]) -> bool:
        """Post `comments` (their bodies carry suggestion blocks) as one review; False when the forge
        cannot place one of them (the caller falls back to a patch in a reply)."""
        ...


@runtime_checkable
class OpensDraftFixes(Protocol):
    """The forge can open a draft PR/MR from a branch the bot pushed (`prereview fix` on the server)."""

    def head_branch(self, number: int) -> HeadBranch:
        """The PR's source branch (a fix branch starts from it; a fork's cannot be pushed to)."""
        ...

    def open_draft(self, branch: str, target: str, title: str, body: str) -> str:
        """A draft PR/MR from `branch` into `target` (both in this repository); its address."""
        ...
