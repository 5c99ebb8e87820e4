"""The server's webhook routes → each forge's payload reader (`forges/<forge>/webhook.py`, giving one
`Event`), plus what the server adds: which repository names may go into URLs (`valid_repo`) and what makes
two deliveries the same event (`identity`)."""

from __future__ import annotations

import hashlib
import re

from ..forges.bitbucket.webhook import valid_repo as _bitbucket_repo
from ..forges.gitea.webhook import parse as gitea
from ..forges.github.webhook import parse as github
from ..forges.gitlab.webhook import parse as gitlab
from ..forges.webhook import BOT_MARKER, Event

__all__ = ["BOT_MARKER", "Event", "gitea", "github", "gitlab", "identity", "valid_repo"]


# GitHub: owner (user or organisation, Enterprise Managed Users add `_shortcode`) / repository.
_GITHUB_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}/[A-Za-z0-9._-]{1,100}")
# GitLab: group/subgroup/…/project, each part starting and ending with a letter, digit or underscore;
# or a numeric project id (when the payload has no path).
_GITLAB_PART = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,253}[A-Za-z0-9_])?"
_GITLAB_REPO = re.compile(rf"{_GITLAB_PART}(?:/{_GITLAB_PART}){{1,20}}|[0-9]{{1,18}}")
# Gitea/Forgejo: owner/name, letters, digits, `-`, `_`, `.` (models/user `IsValidUsername`, repo names alike).
_GITEA_REPO = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}")


def valid_repo(forge: str, repo: str) -> bool:
    """The payload's repository name is a plain name: it goes into API and git URLs with the token, so
    `..`, `?`, `#`, `%` or a scheme must never get through."""
    parts = repo.split("/")
    if forge == "github":
        return bool(_GITHUB_REPO.fullmatch(repo)) and parts[1] not in (".", "..")
    if forge == "bitbucket":
        return _bitbucket_repo(repo)
    if forge == "gitea":
        return bool(_GITEA_REPO.fullmatch(repo)) and not any(
            p in (".", "..") or p.lower().endswith((".git", ".wiki")) for p in parts
        )
    return (
        bool(_GITLAB_REPO.fullmatch(repo))
        and ".." not in repo
        and not any(p.lower().endswith((".git", ".atom")) for p in parts)
    )


def identity(event: Event) -> str:
    """What makes an event the same event whatever its delivery id: the comment (id and text) for a
    command; the action, the head commit and the head it replaced for a push (so a force-push back to a
    head reviewed before is a new event, while a replay of one push is not)."""
    fields = [event.forge, event.kind, event.repo.lower(), str(event.number), event.action]
    if event.kind == "comment":
        fields += [str(event.comment_id), hashlib.sha256(event.body.encode()).hexdigest()]
    else:
        fields += [event.head_sha or ""] + ([event.before] if event.before else [])
    return hashlib.sha256("\0".join(fields).encode()).hexdigest()[:32]
