"""The CI environment -> the Bitbucket pull request a job reviews.

Bitbucket Data Center has no CI of its own (Bitbucket Pipelines and its BITBUCKET_* variables are
Bitbucket Cloud only); its pull requests are built by Jenkins, Bamboo, TeamCity and the like. Read, in
this order (the first that is set wins):

- prereview's own variables, for any CI: PREREVIEW_BITBUCKET_URL (`https://bitbucket.example.com`,
  with its context path if any), PREREVIEW_BITBUCKET_REPO (`PROJECT/slug`), PREREVIEW_BITBUCKET_PR (the
  pull request id);
- Jenkins multibranch with the "Bitbucket Server Integration" or "Bitbucket Branch Source" plugin, in a
  pull request build: CHANGE_ID (the id), CHANGE_URL (`…/projects/PRJ/repos/slug/pull-requests/12`,
  from which the server and repository are read), CHANGE_TARGET (the target branch, for the log);
- the checkout: WORKSPACE (Jenkins), else the current directory.

The token: PREREVIEW_BITBUCKET_TOKEN (an HTTP access token; from a Jenkins credential, never echoed).

A build a Bitbucket webhook triggered (Jenkins' Generic Webhook Trigger) passes the delivery's body in
PREREVIEW_BITBUCKET_EVENT (`comment_event`): a `pr:comment:added` is a comment command, answered through
the job dispatcher; `pr:opened` / `pr:from_ref_updated` name the pull request to review.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ...types import PrereviewError
from ..webhook import Event
from .webhook import parse

TOKEN_VARS = ("PREREVIEW_BITBUCKET_TOKEN",)
# …/projects/KEY/repos/slug/pull-requests/12[/overview] (a personal repository: …/users/name/repos/…)
_PR_URL = re.compile(
    r"^(?P<server>https?://.+?)/(?:projects/(?P<key>[^/]+)|users/(?P<user>[^/]+))/repos/(?P<slug>[^/]+)"
    r"/pull-requests/(?P<id>\d+)(?:/.*)?$"
)


@dataclass(frozen=True)
class Job:
    """A pull request review job from CI: where the server is, which repository and pull request."""

    server_url: str
    repo: str  # PROJECT/slug
    number: int
    workspace: Path
    target: str = ""  # the target branch, when the CI says it


def from_env(env: Mapping[str, str], *, pr: int | None = None, repo: str = "") -> Job | str:
    """The job, or a string saying why there is nothing to review (not a pull request build). `pr` and
    `repo`: from a webhook event (PREREVIEW_BITBUCKET_REPO, when set, must agree)."""
    m = _PR_URL.match(env.get("CHANGE_URL", "").strip())
    server = env.get("PREREVIEW_BITBUCKET_URL", "").strip() or (m["server"] if m else "")
    repo = pinned_repo(env, repo) if repo else env.get("PREREVIEW_BITBUCKET_REPO", "").strip()
    if not repo and m:
        repo = f"{m['key'] or '~' + m['user']}/{m['slug']}"
    number = (
        pr
        or _int(env.get("PREREVIEW_BITBUCKET_PR"))
        or _int(env.get("CHANGE_ID"))
        or (int(m["id"]) if m else None)
    )
    if number is None:
        return "not a pull request build (no CHANGE_ID or PREREVIEW_BITBUCKET_PR); nothing to review"
    if not server:
        raise PrereviewError("no Bitbucket URL; set PREREVIEW_BITBUCKET_URL (https://bitbucket.example.com)")
    if not repo:
        raise PrereviewError("no Bitbucket repository; set PREREVIEW_BITBUCKET_REPO to PROJECT/slug")
    return Job(
        server_url=server.rstrip("/"),
        repo=repo,
        number=number,
        workspace=Path(env.get("WORKSPACE") or "."),
        target=env.get("CHANGE_TARGET", ""),
    )


def token_from(env: Mapping[str, str]) -> str | None:
    return next((env[v].strip() for v in TOKEN_VARS if env.get(v, "").strip()), None)


def _int(value: str | None) -> int | None:
    value = (value or "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else None


EVENT_VAR = "PREREVIEW_BITBUCKET_EVENT"


def comment_event(env: Mapping[str, str]) -> Event | None:
    """The webhook delivery a build was triggered with (PREREVIEW_BITBUCKET_EVENT: its JSON body; the
    event key is the body's `eventKey`, or the `x_event_key` header variable), or None without one. A
    delivery prereview does not act on is an Event of kind "none"."""
    raw = env.get(EVENT_VAR, "").strip()
    if not raw:
        return None
    try:
        payload = json.loads(raw)
    except ValueError:
        raise PrereviewError(
            f"{EVENT_VAR} is not JSON; pass the webhook's whole body (Generic Webhook Trigger: JSONPath $)"
        ) from None
    key = payload.get("eventKey") if isinstance(payload, dict) else None
    got = parse(key if isinstance(key, str) else env.get("x_event_key", ""), payload)
    return got if isinstance(got, Event) else Event("bitbucket", "none", "", 0, got)


def pinned_repo(env: Mapping[str, str], repo: str) -> str:
    """An event's repository, which PREREVIEW_BITBUCKET_REPO (when set) must name (in any case; its own
    spelling is used): a job's token is never pointed at another repository by a payload."""
    pinned = env.get("PREREVIEW_BITBUCKET_REPO", "").strip()
    if pinned and pinned.lower() != repo.lower():
        raise PrereviewError(
            f"the event is for {repo}, not PREREVIEW_BITBUCKET_REPO={pinned}; check the webhook's repository"
        )
    return pinned or repo
