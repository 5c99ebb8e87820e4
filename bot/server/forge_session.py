"""What a worker needs from a forge for one PR: fetch, react, reply, publish, pause; GitHub and GitLab.

Sessions are built per job from the server's own settings (API URL, token); nothing in an event or a
comment can point them elsewhere.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Protocol

from ..config import Config
from ..diff import Diff, parse
from ..types import ChangeRef, ChangeRequest, Finding, PrereviewError, Review
from .checkout import checkout
from .jobs import Job
from .secrets import Secrets

REPLY_MARKER = "<!-- prereview:reply-to={} -->"
_REPLY = re.compile(r"<!-- prereview:reply-to=(\d+) -->")


def replied_to(bodies: list[str]) -> set[int]:
    return {int(m) for b in bodies for m in _REPLY.findall(b)}


class ForgeSession(Protocol):
    def fetch(self) -> ChangeRequest: ...
    def react(self, comment_id: int) -> None: ...
    def reply(self, text: str, comment_id: int | None) -> None: ...

    incremental: bool  # can publish a review of part of the PR (`scope`) without resolving the rest

    def publish(self, change: ChangeRequest, review: Review, scope: Diff | None = None) -> None: ...
    def set_paused(self, paused: bool) -> None: ...
    def may_command(self, job: Job) -> bool: ...
    def clone(self, shas: list[str], dest: Path) -> Path: ...
    def suggest(self, change: ChangeRequest, findings: list[Finding], evidence: str) -> bool: ...


class GitHubSession:
    incremental = True

    def __init__(self, job: Job, cfg: Config, secrets: Secrets) -> None:
        self.job, self.cfg, self._secrets = job, cfg, secrets
        self._token: str | None = None
        self._api: Any = None

    @property
    def api(self) -> Any:
        """The REST client, created on first use (a GitHub App token costs an API call)."""
        from ..forges.github import GitHubAPI

        if self._api is None:
            self._token = _github_token(self.job, self.cfg, self._secrets)
            self._api = GitHubAPI(
                self.cfg.server.github_api_url, self._token, self.job.repo, write_interval=0.0
            )
        return self._api

    def fetch(self) -> ChangeRequest:
        from ..forges.github import GitHubForge

        return GitHubForge(self.api).fetch(ChangeRef("github", self.job.repo, number=self.job.number))

    def react(self, comment_id: int) -> None:
        self.api.react(comment_id, "eyes")

    def reply(self, text: str, comment_id: int | None) -> None:
        if comment_id is not None:
            if comment_id in replied_to([n.body for n in self.api.issue_comments(self.job.number)]):
                return  # a retried job: this comment already has its answer
            text = f"{text.rstrip()}\n\n{REPLY_MARKER.format(comment_id)}\n"
        self.api.create_issue_comment(self.job.number, text)

    def publish(self, change: ChangeRequest, review: Review, scope: Diff | None = None) -> None:
        from ..publish.github import GitHubPublisher

        publisher = GitHubPublisher(
            self.api, self.job.number, max_comments=self.cfg.github.max_comments_per_request
        )
        publisher.publish(review, parse(change.diff_text), scope=scope)

    def set_paused(self, paused: bool) -> None:
        from ..publish.github import GitHubPublisher

        GitHubPublisher(self.api, self.job.number).set_paused(paused)

    def may_command(self, job: Job) -> bool:
        return True  # author_association was checked by the server from the signed payload

    def clone(self, shas: list[str], dest: Path) -> Path:
        url = f"{self.cfg.server.github_git_url.rstrip('/')}/{self.job.repo}.git"
        _ = self.api  # makes sure the token exists
        return checkout(url, shas, dest, user="x-access-token", token=self._token)

    def suggest(self, change: ChangeRequest, findings: list[Finding], evidence: str) -> bool:
        """Post the fix as one review of committable suggestions; False when GitHub cannot place them."""
        from github import GithubException

        from ..publish.github import GitHubPublisher, inline_comment

        diff = parse(change.diff_text)
        posted = GitHubPublisher(self.api, self.job.number).posted()
        comments = [inline_comment(f, diff) for f in findings if f.fingerprint not in posted]
        if any(c is None for c in comments):
            return False
        if not comments:
            return True  # a retried job: the suggestions are already there
        body = f"**prereview** · verified fix ({evidence}): commit the suggestions below."
        try:
            self.api.create_review(
                self.job.number,
                {"commit_id": change.head_sha, "event": "COMMENT", "body": body, "comments": comments},
            )
        except GithubException as exc:
            if exc.status != 422:
                raise
            return False
        return True

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


class GitLabSession:
    incremental = False  # the GitLab publisher resolves what a review does not repeat: always review all

    def __init__(self, job: Job, cfg: Config, secrets: Secrets) -> None:
        from ..forges.gitlab import GitLabForge

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

    def publish(self, change: ChangeRequest, review: Review, scope: Diff | None = None) -> None:
        self.forge.post_review(change, review, self.cfg.gitlab)

    def set_paused(self, paused: bool) -> None:
        return None  # remembered in the server's store only

    def may_command(self, job: Job) -> bool:
        """Developer or higher, inherited memberships included (GET /projects/:id/members/all/:user_id)."""
        import gitlab
        import gitlab.exceptions

        from ..forges.gitlab import api_root

        if job.author_id is None:
            return False
        client = gitlab.Gitlab(
            api_root(self.cfg.server.gitlab_url), private_token=self._token, keep_base_url=True, timeout=30
        )
        try:
            member = client.projects.get(job.repo, lazy=True).members_all.get(job.author_id)
        except gitlab.exceptions.GitlabGetError as exc:
            if exc.response_code == 404:
                return False  # not a member
            raise
        return int(member.access_level) >= DEVELOPER

    def suggest(self, change: ChangeRequest, findings: list[Finding], evidence: str) -> bool:
        return False  # GitLab gets the patch as a diff in the reply

    def clone(self, shas: list[str], dest: Path) -> Path:
        from ..forges.gitlab import api_root

        url = f"{api_root(self.cfg.server.gitlab_url)}/{self.job.repo}.git"
        return checkout(url, shas, dest, user="oauth2", token=self._token)


SESSIONS: dict[str, Any] = {"github": GitHubSession, "gitlab": GitLabSession}


def open_session(job: Job, cfg: Config, secrets: Secrets) -> ForgeSession:
    factory = SESSIONS.get(job.forge)
    if factory is None:
        raise PrereviewError(f"unknown forge '{job.forge}'; use one of {', '.join(SESSIONS)}")
    return factory(job, cfg, secrets)  # type: ignore[no-any-return]
