"""The webhook server's pre-queue authorisation: may a command's author run it? Asked of the forge for
the forges the server holds a token for (GitLab: Developer+, Gitea/Forgejo: write+,
Bitbucket: REPO_WRITE)."""

from __future__ import annotations

from collections.abc import Callable

from ..config import Config
from ..jobs.job import Job
from ..types import PrereviewError
from .forge_session import gitlab_access
from .secrets import Secrets


def access_check(cfg: Config, secrets: Secrets) -> Callable[[Job], bool] | None:
    """None without any such token; a job of a forge without one raises, which leaves its check to the
    worker."""
    checks: dict[str, Callable[[Job], bool]] = {}
    if secrets.gitlab_token:
        checks["gitlab"] = gitlab_access(cfg, secrets)
    if secrets.gitea_token:
        from .gitea_session import gitea_access

        checks["gitea"] = gitea_access(cfg, secrets)
    if secrets.bitbucket_token:
        from .bitbucket_session import bitbucket_access

        checks["bitbucket"] = bitbucket_access(cfg, secrets)
    if not checks:
        return None

    def check(job: Job) -> bool:
        if job.forge not in checks:
            raise PrereviewError(f"no token to ask {job.forge} about {job.author or 'the author'}")
        return checks[job.forge](job)

    return check
