"""What a worker needs from a forge for one PR: fetch, react, reply, publish, pause; GitHub and GitLab here,
Gitea/Forgejo in gitea_session.py, Bitbucket in bitbucket_session.py; sessions.py picks one per job.

Sessions are built per job from the server's own settings (API URL, token); nothing in an event or a
comment can point them elsewhere.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..change.checkout import checkout, push, read_file
from ..change.diff import Diff, parse
from ..config import Config
from ..forges.base import HeadBranch, OpensDraftFixes
from ..jobs.job import Job
from ..types import ChangeRef, ChangeRequest, Finding, PrereviewError, Review
from .secrets import Secrets

REPLY_MARKER = "<!-- prereview:reply-to={} -->"
_REPLY = re.compile(r"<!-- prereview:reply-to=(\d+) -->")


def replied_to(bodies: list[str]) -> set[int]:
    return {int(m) for b in bodies for m in _REPLY.findall(b)}


class _GitOverHttps:
    """clone / base_file / push over the session's git URL, authenticated with its token; a fix posted as
    suggestions, a draft fix's branch and PR through the forge's optional abilities (`forges/base.py`)."""

    _git_user: str | None  # None: the token as a bearer token
    _token: str | None
    job: Job
    forge: Any  # the `forges.base.Forge` of the job's repository

    def _git_url(self) -> str:
        raise NotImplementedError

    def clone(self, shas: list[str], dest: Path) -> Path:
        return checkout(self._git_url(), shas, dest, user=self._git_user, token=self._token)

    def base_file(self, sha: str, path: str, dest: Path) -> str | None:
        return read_file(self._git_url(), sha, path, dest, user=self._git_user, token=self._token)

    def push(self, repo: Path, sha: str, branch: str) -> None:
        push(repo, self._git_url(), sha, branch, user=self._git_user, token=self._token)

    def suggest(self, change: ChangeRequest, findings: list[Finding], evidence: str) -> bool:
        """The fix as committable suggestions where the forge has them; False: the patch goes in the reply."""
        from ..jobs.suggest import post

        return post(self.forge, self.job.number, change, findings, evidence)

    def _drafts(self) -> OpensDraftFixes:
        if not isinstance(self.forge, OpensDraftFixes):
            raise PrereviewError(
                f"fix branches are not supported on {self.forge.name} (patches.fix_mode: suggest)"
            )
        return self.forge

    def head_branch(self) -> HeadBranch:
        return self._drafts().head_branch(self.job.number)

    def open_draft(self, branch: str, target: str, title: str, body: str) -> str:
        return self._drafts().open_draft(branch, target, title, body)


class GitHubSession(_GitOverHttps):
    incremental = True
    kind = "PR"
    _git_user = "x-access-token"

    def __init__(self, job: Job, cfg: Config, secrets: Secrets) -> None:
        self.job, self.cfg, self._secrets = job, cfg, secrets
        self._bots = frozenset(x.lower() for x in cfg.server.bot_logins)
        self._token: str | None = None
        self._api: Any = None

    @property
    def api(self) -> Any:
        """The REST client, created on first use (a GitHub App token costs an API call)."""
        from ..forges.github.api import GitHubAPI

        if self._api is None:
            self._token = _github_token(self.job, self.cfg, self._secrets)
            self._api = GitHubAPI(
                self.cfg.server.github_api_url, self._token, self.job.repo, write_interval=0.0
            )
        return self._api

    @property
    def forge(self) -> Any:
        """The `GitHubForge` of the job's repository (on the REST client above)."""
        from ..forges.github.forge import GitHubForge

        return GitHubForge(self.api, bot_logins=self._bots)

    def fetch(self) -> ChangeRequest:
        return self.forge.fetch(ChangeRef("github", self.job.repo, number=self.job.number))  # type: ignore[no-any-return]

    def react(self, comment_id: int) -> None:
        self.api.react(comment_id, "eyes")

    def reply(self, text: str, comment_id: int | None) -> None:
        if comment_id is not None:
            if comment_id in replied_to([n.body for n in self.api.issue_comments(self.job.number)]):
                return  # a retried job: this comment already has its answer
            text = f"{text.rstrip()}\n\n{REPLY_MARKER.format(comment_id)}\n"
        self.api.create_issue_comment(self.job.number, text)

    def publish(
        self, change: ChangeRequest, review: Review, scope: Diff | None = None, cfg: Config | None = None
    ) -> None:
        """`cfg`: the job's config (the repository's publishing options); the session's own by default."""
        from ..publish.github import GitHubPublisher

        cfg = cfg or self.cfg
        publisher = GitHubPublisher(
            self.api,
            self.job.number,
            max_comments=cfg.github.max_comments_per_request,
            bot_logins=self._bots,
            review_cfg=cfg.review,
        )
        publisher.publish(review, parse(change.diff_text), scope=scope)

    def set_paused(self, paused: bool) -> None:
        from ..publish.github import GitHubPublisher

        GitHubPublisher(self.api, self.job.number, bot_logins=self._bots).set_paused(paused)

    def thread_is_ours(self, thread: str) -> bool:
        """The thread's first comment carries prereview's fingerprint (a finding we posted)."""
        from ..render.markdown import fingerprints_in

        root = next((c for c in self.api.review_comments(self.job.number) if str(c.id) == thread), None)
        return root is not None and bool(fingerprints_in(root.body))

    def reply_in_thread(self, thread: str, text: str, comment_id: int | None) -> None:
        if comment_id is not None:
            if comment_id in replied_to([c.body for c in self.api.review_comments(self.job.number)]):
                return  # a retried job: already answered
            text = f"{text.rstrip()}\n\n{REPLY_MARKER.format(comment_id)}\n"
        self.api.reply_to_review_comment(self.job.number, int(thread), text)

    def describe(self, block: str, into_description: bool) -> None:
        from ..publish.github import GitHubPublisher

        # The server's bot logins too: with a personal access token, its user's summary is ours to update.
        publisher = GitHubPublisher(self.api, self.job.number, bot_logins=self._bots)
        if into_description:
            publisher.set_description(block)
        else:
            publisher.set_walkthrough(block)

    def may_command(self, job: Job) -> bool:
        return True  # author_association was checked by the server from the signed payload

    def _git_url(self) -> str:
        _ = self.api  # makes sure the token exists
        return f"{self.cfg.server.github_git_url.rstrip('/')}/{self.job.repo}.git"

    def current_head(self) -> str:
        return str((self.api.request("GET", f"/pulls/{self.job.number}").get("head") or {}).get("sha") or "")

    def __repr__(self) -> str:  # never show the token
        return f"GitHubSession({self.job.repo!r}#{self.job.number})"


def _github_token(job: Job, cfg: Config, secrets: Secrets) -> str:
    if secrets.github_app_id and secrets.github_private_key and job.installation:
        from github import Auth, GithubIntegration

        app = Auth.AppAuth(int(secrets.github_app_id), secrets.github_private_key)
        integration = GithubIntegration(auth=app, base_url=cfg.server.github_api_url.rstrip("/"))
        return integration.get_access_token(job.installation).token
    if secrets.github_token:
        return secrets.github_token
    raise PrereviewError(
        "no GitHub credentials; set PREREVIEW_GITHUB_TOKEN, or PREREVIEW_GITHUB_APP_ID and "
        "PREREVIEW_GITHUB_PRIVATE_KEY (or their _FILE variants)"
    )


DEVELOPER = 30  # GitLab access levels: 10 guest, 20 reporter, 30 developer, 40 maintainer, 50 owner


class GitLabSession(_GitOverHttps):
    incremental = True
    kind = "MR"
    _git_user = "oauth2"

    def __init__(self, job: Job, cfg: Config, secrets: Secrets) -> None:
        from ..forges.gitlab.forge import GitLabForge

        if not secrets.gitlab_token:
            raise PrereviewError(
                "no GitLab token; set PREREVIEW_GITLAB_TOKEN (or PREREVIEW_GITLAB_TOKEN_FILE)"
            )
        self.job, self.cfg = job, cfg
        self._token = secrets.gitlab_token
        self.forge = GitLabForge(cfg.server.gitlab_url, secrets.gitlab_token, job.repo)

    def __repr__(self) -> str:  # never show the token
        return f"GitLabSession({self.job.repo!r}!{self.job.number})"

    def fetch(self) -> ChangeRequest:
        return self.forge.fetch(ChangeRef("gitlab", self.job.repo, number=self.job.number))

    def react(self, comment_id: int) -> None:
        self.forge.award_emoji(self.job.number, comment_id, "eyes")

    def reply(self, text: str, comment_id: int | None) -> None:
        if comment_id is not None:
            if comment_id in replied_to([n.get("body") or "" for n in self.forge.notes(self.job.number)]):
                return
            text = f"{text.rstrip()}\n\n{REPLY_MARKER.format(comment_id)}\n"
        self.forge.create_note(self.job.number, text)

    def publish(
        self, change: ChangeRequest, review: Review, scope: Diff | None = None, cfg: Config | None = None
    ) -> None:
        from ..publish.gitlab import publish

        cfg = cfg or self.cfg
        publish(self.forge, change, review, cfg.gitlab, scope=scope, review_cfg=cfg.review)

    def set_paused(self, paused: bool) -> None:
        return None  # remembered in the server's store only

    def thread_is_ours(self, thread: str) -> bool:
        from ..render.markdown import fingerprints_in

        for d in self.forge.discussions(self.job.number):
            if str(d.get("id")) == thread:
                notes = d.get("notes") or [{}]
                return bool(fingerprints_in(str(notes[0].get("body") or "")))
        return False

    def reply_in_thread(self, thread: str, text: str, comment_id: int | None) -> None:
        if comment_id is not None:
            bodies = [
                str(n.get("body") or "")
                for d in self.forge.discussions(self.job.number)
                if str(d.get("id")) == thread
                for n in d.get("notes") or []
            ]
            if comment_id in replied_to(bodies):
                return
            text = f"{text.rstrip()}\n\n{REPLY_MARKER.format(comment_id)}\n"
        self.forge.reply_to_discussion(self.job.number, thread, text)

    def describe(self, block: str, into_description: bool) -> None:
        from ..publish.gitlab import set_walkthrough

        set_walkthrough(self.forge, self.job.number, block, into_description=into_description)

    def may_command(self, job: Job) -> bool:
        """Developer or higher, inherited memberships included (GET /projects/:id/members/all/:user_id)."""
        return job.author_id is not None and self.forge.access_level(job.author_id) >= DEVELOPER

    def _git_url(self) -> str:
        from ..forges.gitlab.api import api_root

        base = self.cfg.server.gitlab_git_url or api_root(self.cfg.server.gitlab_url)
        return f"{base.rstrip('/')}/{self.job.repo}.git"

    def current_head(self) -> str:
        return str(self.forge.merge_request(self.job.number).get("sha") or "")


def gitlab_access(cfg: Config, secrets: Secrets) -> Callable[[Job], bool]:
    """For the webhook server: may a GitLab command's author run it (Developer+)? A short timeout and no
    retries (the webhook is answered while GitLab waits); an error leaves the check to the worker."""
    from ..forges.gitlab.forge import GitLabForge

    def check(job: Job) -> bool:
        if job.author_id is None:
            return False
        forge = GitLabForge(cfg.server.gitlab_url, secrets.gitlab_token, job.repo, timeout=5.0, retries=0)
        return forge.access_level(job.author_id) >= DEVELOPER

    return check
