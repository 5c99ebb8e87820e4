"""The worker's forge session for Bitbucket Data Center: fetch, reply, publish, describe, authorise.

Built per job from the server's own settings (`server.bitbucket_url`, PREREVIEW_BITBUCKET_TOKEN); nothing
in an event or a comment can point it elsewhere. Publishing is `publish/flow.py` over `BitbucketForge`,
then the Code Insights report on the head. Git goes to `{url}/scm/{KEY}/{slug}.git` with the token as a
bearer header in git's environment (`change/checkout.py`), never in the URL or on a command line.
Commands are allowed for users with write permission on the repository (`BitbucketApi.may_write`).
Bitbucket has no committable suggestions here and no fix branches: `/fix` answers with the diff.
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

BRANCH_MODE = "fix branches are not supported on Bitbucket (patches.fix_mode: suggest)"
NO_TOKEN = "no Bitbucket token; set PREREVIEW_BITBUCKET_TOKEN (or PREREVIEW_BITBUCKET_TOKEN_FILE)"  # noqa: S105
MAX_COMMENTS = 30  # new inline comments per review, as `prereview bitbucket`'s default


def _api(cfg: Config, token: str | None, repo: str, **kw: Any) -> Any:
    from ..forges.bitbucket.api import BitbucketApi

    if not cfg.server.bitbucket_url:
        raise PrereviewError(
            "server.bitbucket_url is not set; set it (or PREREVIEW_BITBUCKET_URL) to the Bitbucket URL"
        )
    return BitbucketApi(cfg.server.bitbucket_url, token, repo, **kw)


class BitbucketSession(_GitOverHttps):
    incremental = True  # the flow leaves threads outside the re-reviewed part alone
    kind = "PR"
    _git_user = None  # the HTTP access token as `Authorization: Bearer`

    def __init__(self, job: Job, cfg: Config, secrets: Secrets) -> None:
        from ..forges.bitbucket.forge import BitbucketForge

        if not secrets.bitbucket_token:
            raise PrereviewError(NO_TOKEN)
        self.job, self.cfg = job, cfg
        self._token = secrets.bitbucket_token
        self.api = _api(cfg, secrets.bitbucket_token, job.repo)
        self.forge = BitbucketForge(self.api)

    def __repr__(self) -> str:  # never show the token
        return f"BitbucketSession({self.job.repo!r}#{self.job.number})"

    def fetch(self) -> ChangeRequest:
        return self.api.fetch(ChangeRef("bitbucket", self.job.repo, number=self.job.number))  # type: ignore[no-any-return]

    def react(self, comment_id: int) -> None:
        return None  # comment reactions are a plugin endpoint (/rest/comment-likes): not used

    def _answered(self, comment_id: int) -> bool:
        from ..forges.bitbucket.markers import from_bitbucket

        bodies = [from_bitbucket(str(c.get("text") or "")) for c in self.api.comments(self.job.number)]
        return comment_id in replied_to(bodies)

    def reply(self, text: str, comment_id: int | None) -> None:
        """In the asking comment's thread (a reply to it), or a new comment without one."""
        if comment_id is not None:
            if self._answered(comment_id):
                return  # a retried job: this comment already has its answer
            text = f"{text.rstrip()}\n\n{REPLY_MARKER.format(comment_id)}\n"
        self.forge.reply(self.job.number, text, str(comment_id) if comment_id is not None else None)

    def publish(
        self, change: ChangeRequest, review: Review, scope: Diff | None = None, cfg: Config | None = None
    ) -> None:
        from ..pipeline.run import exit_code
        from ..publish import flow

        cfg = cfg or self.cfg
        opts = flow.Options(max_comments=MAX_COMMENTS, file_fallback=True, review=cfg.review)
        flow.publish(self.forge, change, review, opts, scope=scope)
        self.forge.report(change.head_sha, review, failed=exit_code(review, cfg.review.fail_level) != 0)

    def set_paused(self, paused: bool) -> None:
        return None  # remembered in the server's store only

    def describe(self, block: str, into_description: bool) -> None:
        """`/describe`: the walkthrough into the summary comment, or into the description (`--update`)."""
        from ..forges.bitbucket.markers import to_bitbucket
        from ..render.markdown import SUMMARY_MARKER
        from ..render.walkthrough import with_block

        number = self.job.number
        if into_description:
            pr = self.api.pull(number)
            old = str(pr.get("description") or "")
            if (new := with_block(old, block)) != old:
                self.api.update_pull(number, new, int(pr.get("version") or 0))
            return
        summary = self.forge.published(number).summary
        if summary is None:
            self.api.create_comment(number, to_bitbucket(f"{SUMMARY_MARKER}\n### prereview\n\n{block}"))
            return
        body = with_block(summary.body, block)
        if body.strip() != summary.body.strip():
            version = int(self.api.comment(number, int(summary.id)).get("version") or 0)
            self.api.update_comment(number, int(summary.id), to_bitbucket(body), version)

    def thread_is_ours(self, thread: str) -> bool:
        """The replied-to comment is the token's user's and carries prereview's fingerprints."""
        from ..forges.bitbucket.markers import from_bitbucket
        from ..render.markdown import fingerprints_in

        if not thread.isdigit():
            return False
        c = self.api.comment(self.job.number, int(thread))
        mine = str((c.get("author") or {}).get("slug") or "") == self.api.own_user(self.job.number)
        return mine and bool(fingerprints_in(from_bitbucket(str(c.get("text") or ""))))

    def reply_in_thread(self, thread: str, text: str, comment_id: int | None) -> None:
        self.reply(text, comment_id if comment_id is not None else int(thread))

    def may_command(self, job: Job) -> bool:
        return bool(job.author) and bool(self.api.may_write(job.author))

    def _git_url(self) -> str:
        from ..forges.bitbucket.api import server_root

        base = self.cfg.server.bitbucket_git_url or f"{server_root(self.cfg.server.bitbucket_url)}/scm"
        return f"{base.rstrip('/')}/{self.api.project}/{self.api.slug}.git"

    def current_head(self) -> str:
        """The PR's head commit now (`fromRef.latestCommit`, read fresh)."""
        return str((self.api.pull(self.job.number).get("fromRef") or {}).get("latestCommit") or "")

    def head_branch(self) -> HeadBranch:
        pr = self.api.pull(self.job.number)
        head, base = pr.get("fromRef") or {}, pr.get("toRef") or {}

        def where(ref: dict[str, Any]) -> tuple[Any, Any]:
            repo = ref.get("repository") or {}
            return (repo.get("project") or {}).get("key"), repo.get("slug")

        return HeadBranch(str(head.get("displayId") or ""), where(head) == where(base))

    def push(self, repo: Path, sha: str, branch: str) -> None:
        raise PrereviewError(BRANCH_MODE)  # `/fix` in branch mode: the fix goes in the reply instead

    def open_draft(self, branch: str, target: str, title: str, body: str) -> str:
        raise PrereviewError(BRANCH_MODE)


def bitbucket_access(cfg: Config, secrets: Secrets) -> Callable[[Job], bool]:
    """For the webhook server: may a Bitbucket command's author run it (write)? A short timeout and no
    retries (the webhook is answered while Bitbucket waits); an error leaves the check to the worker."""

    def check(job: Job) -> bool:
        if not job.author:
            return False
        return bool(
            _api(cfg, secrets.bitbucket_token, job.repo, timeout=5.0, retries=0).may_write(job.author)
        )

    return check
