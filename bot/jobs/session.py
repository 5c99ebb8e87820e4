"""What a job needs from a forge for one PR (`ForgeSession`) and from the store that remembers its PRs
(`JobState`). The server's sessions (server/forge_session.py, server/gitea_session.py) and its
`ServerState` implement them; a job never sees more of either. A CI job's session also has a log of its
own (`OwnLog`: cli/ci_review.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..change.diff import Diff
from ..config import Config
from ..progress import Progress
from ..types import ChangeRequest, Finding, Review
from .job import Job


@dataclass(frozen=True)
class HeadBranch:
    """The PR's source branch, and whether it lives in the PR's own repository (not a fork)."""

    ref: str
    same_repo: bool


class ForgeSession(Protocol):
    kind: str  # "PR" | "MR", for replies

    def fetch(self) -> ChangeRequest: ...
    def react(self, comment_id: int) -> None: ...
    def reply(self, text: str, comment_id: int | None) -> None: ...

    incremental: bool  # can publish a review of part of the PR (`scope`) without resolving the rest

    def publish(
        self, change: ChangeRequest, review: Review, scope: Diff | None = None, cfg: Config | None = None
    ) -> None: ...
    def set_paused(self, paused: bool) -> None: ...
    def describe(self, block: str, into_description: bool) -> None: ...
    def thread_is_ours(self, thread: str) -> bool: ...
    def reply_in_thread(self, thread: str, text: str, comment_id: int | None) -> None: ...
    def may_command(self, job: Job) -> bool: ...
    def clone(self, shas: list[str], dest: Path) -> Path: ...
    def base_file(self, sha: str, path: str, dest: Path) -> str | None: ...
    def suggest(self, change: ChangeRequest, findings: list[Finding], evidence: str) -> bool: ...
    def head_branch(self) -> HeadBranch: ...
    def current_head(self) -> str: ...  # the PR's head commit now, read fresh
    def push(self, repo: Path, sha: str, branch: str) -> None: ...
    def open_draft(self, branch: str, target: str, title: str, body: str) -> str: ...


class JobState(Protocol):
    """What jobs remember per PR (`pr_key`): paused, the last reviewed head and its added lines (`/review
    -i`), the last findings (`/ask`)."""

    def paused(self, pr_key: str) -> bool: ...
    def set_paused(self, pr_key: str, paused: bool) -> None: ...
    def last_reviewed(self, pr_key: str) -> dict[str, Any] | None: ...
    def set_reviewed(self, pr_key: str, head: str, added: dict[str, list[str]], max_bytes: int) -> None: ...
    def last_findings(self, pr_key: str) -> dict[str, Any] | None: ...
    def set_findings(self, pr_key: str, head: str, findings: Iterable[Any], most: int = 40) -> None: ...


@runtime_checkable
class OwnLog(Protocol):
    """A session with a log of its own (a CI job's): the review's steps, and why an automatic review was
    skipped, are said there. The server's sessions have none: the worker logs."""

    progress: Progress

    def skipped(self, why: str) -> None:
        """An automatic review is not run: `why` is `review_filters.skip_reason`'s answer."""
        ...
