"""The forge session of a job, by the job's forge: the one registry of server sessions (forge_session.py,
gitea_session.py and bitbucket_session.py hold the sessions; none of them imports this)."""

from __future__ import annotations

from collections.abc import Callable

from ..config import Config
from ..jobs.job import Job
from ..jobs.session import ForgeSession
from ..types import PrereviewError
from .bitbucket_session import BitbucketSession
from .forge_session import GitHubSession, GitLabSession
from .gitea_session import GiteaSession
from .secrets import Secrets

SESSIONS: dict[str, Callable[[Job, Config, Secrets], ForgeSession]] = {
    "github": GitHubSession,
    "gitlab": GitLabSession,
    "gitea": GiteaSession,
    "bitbucket": BitbucketSession,
}


def open_session(job: Job, cfg: Config, secrets: Secrets) -> ForgeSession:
    factory = SESSIONS.get(job.forge)
    if factory is None:
        raise PrereviewError(f"unknown forge '{job.forge}'; use one of {', '.join(SESSIONS)}")
    return factory(job, cfg, secrets)
