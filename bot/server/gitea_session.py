"""The worker's forge session for Gitea and Forgejo: fetch, react, reply, publish, describe, authorise.

Built per job from the server's own settings (`server.gitea_url`, PREREVIEW_GITEA_TOKEN); nothing in an
event or a comment can point it elsewhere. Commands are allowed for users with `write`, `admin` or
`owner` permission on the repository (GET …/collaborators/{user}/permission, which Gitea answers about
other users only to a repository admin: the token's user must administer the repository).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..change.diff import Diff
from ..config import Config
from ..jobs.job import Job
from ..types import ChangeRef, ChangeRequest, PrereviewError, Review
from .forge_session import REPLY_MARKER, HeadBranch, _GitOverHttps, replied_to
from .secrets import Secrets

TRUSTED = frozenset({"write", "admin", "owner"})
BRANCH_MODE = "fix branches are not supported on Gitea yet (patches.fix_mode: suggest)"
NO_TOKEN = "no Gitea token; set PREREVIEW_GITEA_TOKEN (or PREREVIEW_GITEA_TOKEN_FILE)"  # noqa: S105


def _forge(cfg: Config, token: str | None, repo: str, **kw: Any) -> Any:
    from ..forges.gitea.forge import GiteaForge

    if not cfg.server.gitea_url:
        raise PrereviewError("server.gitea_url is not set; set it (or PREREVIEW_GITEA_URL) to the Gitea URL")
    return GiteaForge(cfg.server.gitea_url, token, repo, **kw)


class GiteaSession(_GitOverHttps):
    incremental = True  # the publisher resolves nothing, so a partial review leaves the rest alone
    kind = "PR"
    _git_user = "oauth2"

    def __init__(self, job: Job, cfg: Config, secrets: Secrets) -> None:
        if not secrets.gitea_token:
            raise PrereviewError(NO_TOKEN)
        self.job, self.cfg = job, cfg
        self._token = secrets.gitea_token
        self.forge = _forge(
            cfg, secrets.gitea_token, job.repo, timeout=cfg.gitea.timeout, retries=cfg.gitea.retries
        )

    def __repr__(self) -> str:  # never show the token
        return f"GiteaSession({self.job.repo!r}#{self.job.number})"

    def fetch(self) -> ChangeRequest:
        return self.forge.fetch(ChangeRef("gitea", self.job.repo, number=self.job.number))  # type: ignore[no-any-return]

    def react(self, comment_id: int) -> None:
        self.forge.react(comment_id, "eyes")

    def reply(self, text: str, comment_id: int | None) -> None:
        if comment_id is not None:
            bodies = [str(c.get("body") or "") for c in self.forge.issue_comments(self.job.number)]
            if comment_id in replied_to(bodies):
                return  # a retried job: this comment already has its answer
            text = f"{text.rstrip()}\n\n{REPLY_MARKER.format(comment_id)}\n"
        self.forge.create_comment(self.job.number, text)

    def publish(
        self, change: ChangeRequest, review: Review, scope: Diff | None = None, cfg: Config | None = None
    ) -> None:
        from ..publish.gitea import publish

        cfg = cfg or self.cfg
        publish(self.forge, change, review, cfg.gitea, review_cfg=cfg.review)

    def set_paused(self, paused: bool) -> None:
        return None  # remembered in the server's store only

    def describe(self, block: str, into_description: bool) -> None:
        from ..publish.gitea import set_walkthrough

        set_walkthrough(self.forge, self.job.number, block, into_description=into_description)

    def thread_is_ours(self, thread: str) -> bool:
        return False  # Gitea review-comment replies are not delivered as threads here

    def reply_in_thread(self, thread: str, text: str, comment_id: int | None) -> None:
        self.reply(text, comment_id)

    def may_command(self, job: Job) -> bool:
        return bool(job.author) and self.forge.permission(job.author) in TRUSTED

    def _git_url(self) -> str:
        from ..forges.gitea.api import server_root

        base = self.cfg.server.gitea_git_url or server_root(self.cfg.server.gitea_url)
        return f"{base.rstrip('/')}/{self.job.repo}.git"

    def current_head(self) -> str:
        """The PR's head commit now (read fresh, not from the fetched change)."""
        return str((self.forge.pull(self.job.number).get("head") or {}).get("sha") or "")

    def head_branch(self) -> HeadBranch:
        pr = self.forge.pull(self.job.number)
        head, base = pr.get("head") or {}, pr.get("base") or {}
        return HeadBranch(str(head.get("ref") or ""), head.get("repo_id") == base.get("repo_id"))

    def push(self, repo: Path, sha: str, branch: str) -> None:
        raise PrereviewError(BRANCH_MODE)  # `/fix` in branch mode: the fix goes in the reply instead

    def open_draft(self, branch: str, target: str, title: str, body: str) -> str:
        raise PrereviewError(BRANCH_MODE)


def gitea_access(cfg: Config, secrets: Secrets) -> Callable[[Job], bool]:
    """For the webhook server: may a Gitea command's author run it (write+)? A short timeout and no
    retries (the webhook is answered while Gitea waits); an error leaves the check to the worker."""

    def check(job: Job) -> bool:
        if not job.author:
            return False
        forge = _forge(cfg, secrets.gitea_token, job.repo, timeout=5.0, retries=0)
        return forge.permission(job.author) in TRUSTED  # type: ignore[no-any-return]

    return check
