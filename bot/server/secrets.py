"""Server secrets from the environment or from files (`NAME_FILE=/run/secrets/...`); never printed."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from ..types import PrereviewError

ENV = {
    "github_webhook_secret": "PREREVIEW_GITHUB_WEBHOOK_SECRET",
    "github_token": "PREREVIEW_GITHUB_TOKEN",
    "github_app_id": "PREREVIEW_GITHUB_APP_ID",
    "github_private_key": "PREREVIEW_GITHUB_PRIVATE_KEY",
    "gitlab_webhook_token": "PREREVIEW_GITLAB_WEBHOOK_TOKEN",
    "gitlab_token": "PREREVIEW_GITLAB_TOKEN",
    "gitea_webhook_secret": "PREREVIEW_GITEA_WEBHOOK_SECRET",
    "gitea_token": "PREREVIEW_GITEA_TOKEN",
    "bitbucket_webhook_secret": "PREREVIEW_BITBUCKET_WEBHOOK_SECRET",
    "bitbucket_token": "PREREVIEW_BITBUCKET_TOKEN",
}


@dataclass(frozen=True, repr=False)
class Secrets:
    github_webhook_secret: str | None = None
    github_token: str | None = None
    github_app_id: str | None = None
    github_private_key: str | None = None
    gitlab_webhook_token: str | None = None
    gitlab_token: str | None = None
    gitea_webhook_secret: str | None = None
    gitea_token: str | None = None
    bitbucket_webhook_secret: str | None = None
    bitbucket_token: str | None = None

    def values(self) -> frozenset[str]:
        """Every secret value that is set: what the masking layer hides in anything a job sends out
        (a Gitea token is 40 hex characters, a shape no pattern can tell from a commit sha)."""
        return frozenset(v for f in fields(self) if len(v := getattr(self, f.name) or "") >= 8)

    def __repr__(self) -> str:  # names only: a repr must never leak a secret into a log
        have = [f.name for f in fields(self) if getattr(self, f.name)]
        return f"Secrets(set={have})"


def from_env(env: Mapping[str, str] | None = None) -> Secrets:
    """`NAME` holds the value, or `NAME_FILE` a path to it (Docker/Kubernetes secrets)."""
    env = os.environ if env is None else env
    values: dict[str, str | None] = {}
    for attr, name in ENV.items():
        value = env.get(name) or None
        path = env.get(f"{name}_FILE")
        if value is None and path:
            try:
                value = Path(path).read_text(encoding="utf-8").strip() or None
            except OSError as exc:
                raise PrereviewError(
                    f"{name}_FILE={path} cannot be read ({exc.strerror}); fix the path"
                ) from None
        values[attr] = value
    return Secrets(**values)
