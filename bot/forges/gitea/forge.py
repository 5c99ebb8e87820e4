"""The Gitea / Forgejo forge: a pull request fetched from the API alone, or checked out in CI.

`GiteaForge` is the API client (`api.py`) plus what a review needs from a forge: the change with its
diff as Gitea computes it, and a CI checkout where base and head are reachable.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...change import git
from ...render.markdown import fingerprints_in, is_summary
from ...types import ChangeRef, ChangeRequest, PrereviewError
from ..base import Comment, PermissionDenied, Posted, Posting, Published, Rejected
from .api import GiteaAPI
from .placement import GiteaPlacement

if TYPE_CHECKING:
    from ...progress import Progress


REVIEW_BODY = "**prereview** found {n} thing(s) on changed lines; the summary comment has the rest."


class GiteaForge(GiteaAPI):
    """A Gitea / Forgejo repository: `forges.base.Forge` and `ResolvesThreads` (Gitea 1.26+)."""

    name = "Gitea"

    def fetch(self, ref: ChangeRef) -> ChangeRequest:
        """A ChangeRequest from the API alone (no checkout): what the webhook server reviews."""
        if ref.number is None:
            raise PrereviewError("a Gitea change needs the pull request number")
        pr = self.pull(ref.number)
        base = (pr.get("base") or {}).get("sha") or ""
        head = (pr.get("head") or {}).get("sha") or ""
        if not head or not base:
            raise PrereviewError(f"pull request #{ref.number} has no base/head commit yet; retry shortly")
        return ChangeRequest(
            ref=ref,
            base_sha=str(pr.get("merge_base") or base),
            head_sha=str(head),
            diff_text=self.diff_text(ref.number),
            title=str(pr.get("title") or ""),
            body=str(pr.get("body") or ""),
            author=str((pr.get("user") or {}).get("login") or ""),
            url=str(pr.get("html_url") or ""),
            labels=tuple(
                str(x.get("name")) for x in pr.get("labels") or [] if isinstance(x, dict) and x.get("name")
            ),
        )

    @staticmethod
    def checkout(change: ChangeRequest, dest: Path, progress: Progress | None = None) -> Path:
        """`dest` is the CI checkout: make sure base and head are reachable there (shallow clones)."""
        for label, sha in (("base", change.base_sha), ("head", change.head_sha)):
            if _has(dest, sha):
                continue
            if progress is not None:
                progress.message(f"{label} commit {sha[:12]} is not in the checkout; fetching it")
            git.git(dest, "fetch", "--no-tags", "--quiet", "--depth=1", "origin", sha, check=False)
            if not _has(dest, sha):
                raise PrereviewError(
                    f"{label} commit {sha[:12]} is not in the checkout and could not be fetched; "
                    "check out with `fetch-depth: 0` in actions/checkout"
                )
        return dest

    # -- publishing (forges.base.Forge) -----------------------------------------------------------

    def placement(self, change: ChangeRequest) -> GiteaPlacement:
        return GiteaPlacement()

    def published(self, number: int) -> Published:
        """The comments of the bot's own reviews that carry fingerprints, and its summary comment (anyone
        else's text is never state)."""
        own = self.own_login()
        comments: list[Posted] = []
        for r in self.reviews(number):
            if login_of(r) != own or not r.get("comments_count") or not isinstance(r.get("id"), int):
                continue
            for c in self.review_comments(number, int(r["id"])):
                body = str(c.get("body") or "")
                if login_of(c) == own and fingerprints_in(body):
                    comments.append(_posted(c))
        found = own_summary(self.issue_comments(number), own)
        summary = None if found is None else Posted(str(found.get("id")), str(found.get("body") or ""))
        return Published(tuple(comments), summary)

    def post_review(self, number: int, head: str, body: str, comments: Sequence[Comment]) -> Posting:
        """All comments in one COMMENT review; Gitea refuses a review as a whole (422, e.g. the PR was
        closed meanwhile): then every comment comes back refused, and the summary says why."""
        if not comments:
            return Posting()
        data = {
            "commit_id": head,
            "event": "COMMENT",
            "body": REVIEW_BODY.format(n=len(comments)),
            "comments": [dict(c.where) for c in comments],
        }
        try:
            self.create_review(number, data)
        except Rejected as exc:
            note = f"Gitea refused the inline comments ({exc}); they are listed here."
            return Posting(refused=tuple((c, str(exc)) for c in comments), notes=(note,))
        return Posting(tuple(comments), requests=1)

    def upsert_summary(self, number: int, body: str, previous: Posted | None) -> str:
        if previous is None:
            self.create_comment(number, body)
            return "created"
        if same_summary(previous.body, body):
            return "unchanged"
        self.edit_comment(int(previous.id), body)
        return "updated"

    def reply(self, number: int, body: str, thread: str | None = None) -> None:
        self.create_comment(number, body)  # Gitea's API has no answer inside a review thread

    def resolve(self, number: int, comment: Posted, head: str) -> None:
        """Resolve the review comment (its conversation folds, `resolver` is set)."""
        if not self.resolve_comment(int(comment.id)):
            raise PermissionDenied(
                "Outdated prereview comments stay open: this server has no API to resolve review comments "
                "(Gitea 1.26 added one; Forgejo has none yet)."
            )


def login_of(item: dict[str, Any]) -> str:
    user = item.get("user")
    return str(user.get("login") or "") if isinstance(user, dict) else ""


def own_summary(comments: list[dict[str, Any]], own: str) -> dict[str, Any] | None:
    """The bot's summary comment: starts with the summary marker and was written by the token's user."""
    return next((c for c in comments if login_of(c) == own and is_summary(str(c.get("body") or ""))), None)


def _posted(c: dict[str, Any]) -> Posted:
    new, old = int(c.get("position") or 0), int(c.get("original_position") or 0)
    return Posted(
        id=str(c.get("id")),
        body=str(c.get("body") or ""),
        path=str(c.get("path") or ""),
        line=new or old or None,
        side="LEFT" if not new and old else "RIGHT",
        resolved=bool(c.get("resolver")),
    )


_SECONDS = re.compile(r"\b\d+(?:\.\d+)?s\b")


def same_summary(a: str, b: str) -> bool:
    """Equal apart from timings, so an identical re-run edits nothing."""
    return _SECONDS.sub("", a).strip() == _SECONDS.sub("", b).strip()


def _has(repo: Path, sha: str) -> bool:
    try:
        git.git(repo, "cat-file", "-e", f"{sha}^{{commit}}")
    except git.GitError:
        return False
    return True
