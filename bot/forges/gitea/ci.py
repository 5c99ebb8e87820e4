"""Gitea/Forgejo Actions' environment → what `prereview gitea` is asked to do: a pull request to review
(`Run.from_env`) or a comment command (`comment_event`).

Both runners (act_runner, forgejo-runner) run GitHub-style workflows and set the GitHub-style
variables this command reads: GITHUB_EVENT_NAME, GITHUB_EVENT_PATH (Gitea's `PullRequestPayload`),
GITHUB_REPOSITORY, GITHUB_SERVER_URL, GITHUB_WORKSPACE, plus GITEA_ACTIONS=true or FORGEJO_ACTIONS=true.
The job's checkout drives the review (the local git diff merge-base..head); posting needs a token:
PREREVIEW_GITEA_TOKEN, else GITEA_TOKEN, else the run's own GITHUB_TOKEN.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...types import PrereviewError
from ..webhook import Event
from .webhook import parse

TOKEN_VARS = ("PREREVIEW_GITEA_TOKEN", "GITEA_TOKEN", "GITHUB_TOKEN")
# Gitea's webhook payload says `synchronized`; GitHub-style workflow filters say `synchronize`.
PR_ACTIONS = frozenset({"opened", "reopened", "synchronized", "synchronize"})
NOT_POSTING = (
    "no token (PREREVIEW_GITEA_TOKEN, GITEA_TOKEN or GITHUB_TOKEN), so nothing is posted; pass "
    "`PREREVIEW_GITEA_TOKEN: ${{ secrets.PREREVIEW_GITEA_TOKEN }}` in the step's env "
    "(or the run's `${{ secrets.GITHUB_TOKEN }}`)"
)


@dataclass(frozen=True)
class Run:
    """The pull request an Actions run is for, from its environment and event payload."""

    server_url: str
    repo: str
    number: int
    base_sha: str
    head_sha: str
    workspace: Path
    title: str = ""
    body: str = ""
    author: str = ""
    labels: tuple[str, ...] = ()
    forge: str = "Gitea"

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, pr: int | None = None) -> Run | str:
        """The run, or a string saying why there is nothing to review."""
        repo = _need(env, "GITHUB_REPOSITORY", "run in Gitea/Forgejo Actions or set it to owner/name")
        url = env.get("PREREVIEW_GITEA_URL") or _need(
            env, "GITHUB_SERVER_URL", "run in Gitea/Forgejo Actions or set PREREVIEW_GITEA_URL"
        )
        event = _event(env)
        name = env.get("GITHUB_EVENT_NAME", "")
        raw = event.get("pull_request")
        pull: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if pr is None:
            if name not in ("pull_request", ""):
                raise PrereviewError(
                    f"event '{name}' is not supported; run on `pull_request` (or pass --pr N)"
                )
            action = str(event.get("action") or "")
            if action not in PR_ACTIONS:
                return f"nothing to do for pull_request.{action or '?'}"
        number = pr or _int(event.get("number")) or _int(pull.get("number"))
        if number is None:
            raise PrereviewError("no pull request number in the event; run on pull_request or pass --pr N")
        base, head = pull.get("base") or {}, pull.get("head") or {}
        return cls(
            server_url=url,
            repo=repo,
            number=number,
            base_sha=str(pull.get("merge_base") or base.get("sha") or ""),
            head_sha=str(head.get("sha") or env.get("GITHUB_SHA") or ""),
            workspace=Path(env.get("GITHUB_WORKSPACE") or "."),
            title=str(pull.get("title") or ""),
            body=str(pull.get("body") or ""),
            author=str((pull.get("user") or {}).get("login") or ""),
            labels=tuple(
                str(x["name"]) for x in pull.get("labels") or [] if isinstance(x, dict) and x.get("name")
            ),
            forge="Forgejo" if env.get("FORGEJO_ACTIONS") == "true" else "Gitea",
        )


def _need(env: Mapping[str, str], name: str, hint: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise PrereviewError(f"{name} is not set; {hint}")
    return value


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _event(env: Mapping[str, str]) -> dict[str, Any]:
    path = env.get("GITHUB_EVENT_PATH", "").strip()
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PrereviewError(f"cannot read the event payload GITHUB_EVENT_PATH={path} ({exc})") from None
    return data if isinstance(data, dict) else {}


def token_from(env: Mapping[str, str]) -> str | None:
    return next((env[v].strip() for v in TOKEN_VARS if env.get(v, "").strip()), None)


def comment_event(env: Mapping[str, str]) -> Event | None:
    """An `issue_comment` run's comment (the webhook's own `IssueCommentPayload`) as an Event (kind
    "none" when it is not a new comment on a pull request), or None for any other run."""
    if env.get("GITHUB_EVENT_NAME", "") != "issue_comment":
        return None
    return parse("issue_comment", _event(env)) or Event("gitea", "none", "", 0)
