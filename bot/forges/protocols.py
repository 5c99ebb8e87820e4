"""What publishers need from a forge: the small protocols forges implement, and the errors they raise.

Publishers (bot/publish/) depend on these; forges never import a publisher.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .base import PermissionDenied, Rejected

__all__ = ["DiffRefs", "MRApi", "PermissionDenied", "PullReviewApi", "Rejected"]


@dataclass(frozen=True)
class DiffRefs:
    """The three commits a GitLab position is relative to (MR `diff_refs` or a diff version)."""

    base_sha: str
    start_sha: str
    head_sha: str


class MRApi(Protocol):
    """What publishing needs from GitLab (GitLabForge implements it)."""

    def diff_refs(self, iid: int, head_sha: str | None = None) -> DiffRefs: ...
    def discussions(self, iid: int) -> list[dict[str, Any]]: ...
    def create_discussion(
        self, iid: int, body: str, position: dict[str, Any] | None = None
    ) -> dict[str, Any]: ...
    def resolve_discussion(self, iid: int, discussion_id: str) -> None: ...
    def create_note(self, iid: int, body: str) -> dict[str, Any]: ...
    def update_note(self, iid: int, note_id: int, body: str) -> None: ...


class PullReviewApi(Protocol):
    """What publishing needs from Gitea / Forgejo (GiteaForge implements it)."""

    def own_login(self) -> str: ...
    def reviews(self, number: int) -> list[dict[str, Any]]: ...
    def review_comments(self, number: int, review_id: int) -> list[dict[str, Any]]: ...
    def create_review(self, number: int, data: dict[str, Any]) -> dict[str, Any]: ...
    def issue_comments(self, number: int) -> list[dict[str, Any]]: ...
    def create_comment(self, number: int, body: str) -> dict[str, Any]: ...
    def edit_comment(self, comment_id: int, body: str) -> None: ...
