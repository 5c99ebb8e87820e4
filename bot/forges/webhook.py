"""Webhook payloads → one small `Event` record, whatever the forge (each forge's own reader is
`forges/<forge>/webhook.py`; the server's `events.py` picks one per route). Payloads are untrusted JSON
even when signed, so every field is read defensively by type (`get`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

BOT_MARKER = "<!-- prereview"  # every comment the bot writes carries one of its markers


@dataclass(frozen=True)
class Event:
    forge: str  # "github" | "gitlab" | "gitea" | "bitbucket"
    kind: str  # "pr" (opened/new commits) | "comment"
    repo: str
    number: int
    action: str = ""
    head_sha: str | None = None
    author: str = ""
    author_id: int | None = None
    association: str = ""  # GitHub author_association
    body: str = ""
    comment_id: int | None = None
    is_bot: bool = False
    draft: bool = False
    installation: int | None = None
    thread: str = ""  # a reply inside a review thread: GitHub root comment id / GitLab discussion id
    path: str = ""  # the thread's file and line (a reply is a question about them)
    line: int | None = None
    before: str = ""  # a push: the head it replaced (a force-push back to an old head is a new event)


def get(data: Any, *path: str, want: type | tuple[type, ...] = str) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    if want is int and isinstance(data, bool):
        return None
    return data if isinstance(data, want) else None


def is_bot(login: str, user_type: str | None, body: str, bot_logins: frozenset[str]) -> bool:
    return (
        (user_type or "").lower() == "bot"
        or login.endswith("[bot]")
        or login.lower() in bot_logins
        or BOT_MARKER in body
    )
