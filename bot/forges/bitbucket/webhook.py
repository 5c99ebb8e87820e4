"""Bitbucket Data Center webhooks: the `X-Hub-Signature` check and payload -> Event.

Headers (Atlassian, "Event payload" and "Webhook secrets" of Bitbucket Data Center): `X-Event-Key`
(e.g. `pr:opened`), `X-Request-Id` (a UUID per delivery), and, when the webhook has a secret,
`X-Hub-Signature: sha256=<hex HMAC-SHA256 of the exact body>`.

Events used: `pr:opened`, `pr:from_ref_updated` (new commits on the source branch; `previousFromHash`
is the head it replaced) and `pr:comment:added` (`comment`, `commentParentId` for a reply). Anything
else (`diagnostics:ping` from "Test connection", `pr:merged`, …) is ignored, with the reason. Payloads
are untrusted even when signed: every field is read by type. The repository is `PROJECT/slug`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from typing import Any

from ..webhook import BOT_MARKER, Event
from .markers import from_bitbucket

PR_EVENTS = {"pr:opened": "opened", "pr:from_ref_updated": "synchronize"}
COMMENT_EVENT = "pr:comment:added"
# Project keys: letters, digits, `_` (a personal project: `~user`); slugs: letters, digits, `-`, `_`, `.`.
_REPO = re.compile(r"~?[A-Za-z0-9_][A-Za-z0-9_.@-]{0,127}/[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


def signature(secret: str, body: bytes) -> str:
    """The `X-Hub-Signature` value Bitbucket sends for `body`."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signature_ok(secret: str | None, body: bytes, header: str | None) -> bool:
    """Constant-time comparison; no secret or no header is never valid."""
    if not secret or not header:
        return False
    return hmac.compare_digest(signature(secret, body).encode(), header.strip().encode("utf-8", "replace"))


def valid_repo(repo: str) -> bool:
    """A plain `PROJECT/slug` (it goes into API and clone URLs with the token)."""
    return bool(_REPO.fullmatch(repo)) and ".." not in repo and not repo.lower().endswith(".git")


def _get(data: Any, *path: str, want: type = str) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    if want is int and isinstance(data, bool):
        return None
    return data if isinstance(data, want) else None


def _repo(pr: Any) -> str:
    """The pull request's target repository, `PROJECT/slug`."""
    key = _get(pr, "toRef", "repository", "project", "key") or ""
    slug = _get(pr, "toRef", "repository", "slug") or ""
    return f"{key}/{slug}" if key and slug else ""


def parse(event_key: str, payload: Any, bot_logins: frozenset[str] = frozenset()) -> Event | str:
    """The Event, or a string saying why the delivery is ignored."""
    if event_key not in PR_EVENTS and event_key != COMMENT_EVENT:
        return f"event {event_key or '(no X-Event-Key)'} is not one prereview acts on"
    pr = _get(payload, "pullRequest", want=dict)
    number = _get(pr, "id", want=int)
    repo = _repo(pr)
    if not number or not repo or not valid_repo(repo):
        return f"{event_key} payload has no valid pull request (id and toRef repository)"
    actor = _get(payload, "actor", "slug") or _get(payload, "actor", "name") or ""
    if event_key in PR_EVENTS:
        return Event(
            "bitbucket",
            "pr",
            repo,
            number,
            PR_EVENTS[event_key],
            head_sha=_get(pr, "fromRef", "latestCommit"),
            author=actor,
            author_id=_get(payload, "actor", "id", want=int),
            draft=bool(_get(pr, "draft", want=bool)),
            before=_get(payload, "previousFromHash") or "",
        )
    comment = _get(payload, "comment", want=dict)
    if comment is None:
        return "pr:comment:added payload has no comment"
    body = from_bitbucket(_get(comment, "text") or "")
    login = _get(comment, "author", "slug") or actor
    parent = _get(payload, "commentParentId", want=int)
    is_bot = login.lower() in bot_logins or BOT_MARKER in body or _get(comment, "author", "type") == "SERVICE"
    return Event(
        "bitbucket",
        "comment",
        repo,
        number,
        "created",
        author=login,
        author_id=_get(comment, "author", "id", want=int),
        body=body,
        comment_id=_get(comment, "id", want=int),
        is_bot=is_bot,
        thread=str(parent) if parent else "",
    )


def receive(
    secret: str | None, body: bytes, headers: Mapping[str, str], bot_logins: frozenset[str] = frozenset()
) -> Event | tuple[int, str]:
    """One delivery as the webhook server sees it (`headers` with lower-case names): the Event to queue,
    or the (status, reason) to answer. A missing or wrong signature is 401 before the body is read as
    JSON; "Test connection" (`diagnostics:ping`) is answered 200; other events are 200 with the reason."""
    if not signature_ok(secret, body, headers.get("x-hub-signature")):
        return (
            401,
            "missing or bad X-Hub-Signature (set the webhook's secret to PREREVIEW_BITBUCKET_WEBHOOK_SECRET)",
        )
    key = headers.get("x-event-key", "")
    if key == "diagnostics:ping":
        return 200, "pong"
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return 400, "body is not JSON"
    got = parse(key, payload, bot_logins)
    return (200, got) if isinstance(got, str) else got
