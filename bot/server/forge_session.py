"""What a worker needs from a forge for one PR: fetch, react, reply, publish, pause; GitHub and GitLab.

Sessions are built per job from the server's own settings (API URL, token); nothing in an event or a
comment can point them elsewhere.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from ..config import Config
from ..diff import parse
from ..types import ChangeRef, ChangeRequest, PrereviewError, Review
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
    def publish(self, change: ChangeRequest, review: Review) -> None: ...
    def set_paused(self, paused: bool) -> None: ...
    def may_command(self, job: Job) -> bool: ...


class GitHubSession:
    def __init__(self, job: Job, cfg: Config, secrets: Secrets) -> None:
        from ..forges.github import GitHubAPI

        token = _github_token(job, cfg, secrets)
        self.job = job
        self.cfg = cfg
        self.api = GitHubAPI(cfg.server.github_api_url, token, job.repo, write_interval=0.0)

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

    def publish(self, change: ChangeRequest, review: Review) -> None:
        from ..publish.github import GitHubPublisher

        publisher = GitHubPublisher(
            self.api, self.job.number, max_comments=self.cfg.github.max_comments_per_request
        )
        publisher.publish(review, parse(change.diff_text))

    def set_paused(self, paused: bool) -> None:
        from ..publish.github import GitHubPublisher

        GitHubPublisher(self.api, self.job.number).set_paused(paused)

    def may_command(self, job: Job) -> bool:
        return True  # author_association was checked by the server from the signed payload


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


SESSIONS: dict[str, Any] = {"github": GitHubSession}


def open_session(job: Job, cfg: Config, secrets: Secrets) -> ForgeSession:
    factory = SESSIONS.get(job.forge)
    if factory is None:
        raise PrereviewError(f"unknown forge '{job.forge}'; use one of {', '.join(SESSIONS)}")
    return factory(job, cfg, secrets)  # type: ignore[no-any-return]
