"""GitHub webhook payloads (pull_request, issue_comment, pull_request_review_comment) → Event; the Action's
event payload is the same JSON."""

from __future__ import annotations

from typing import Any

from ..webhook import Event, get, is_bot

PR_ACTIONS = frozenset({"opened", "reopened", "synchronize", "ready_for_review"})


def parse(event_type: str, payload: Any, bot_logins: frozenset[str] = frozenset()) -> Event | None:
    repo = get(payload, "repository", "full_name")
    action = get(payload, "action") or ""
    installation = get(payload, "installation", "id", want=int)
    if not repo:
        return None
    if event_type == "pull_request" and action in PR_ACTIONS:
        number = get(payload, "pull_request", "number", want=int) or get(payload, "number", want=int)
        if not number:
            return None
        return Event(
            "github",
            "pr",
            repo,
            number,
            action,
            head_sha=get(payload, "pull_request", "head", "sha"),
            author=get(payload, "sender", "login") or "",
            draft=bool(get(payload, "pull_request", "draft", want=bool)),
            installation=installation,
            before=get(payload, "before") or "",
        )
    if event_type == "issue_comment" and action == "created":
        if get(payload, "issue", "pull_request", want=dict) is None:
            return None  # a comment on an issue, not on a PR
        number = get(payload, "issue", "number", want=int)
    elif event_type == "pull_request_review_comment" and action == "created":
        number = get(payload, "pull_request", "number", want=int)
    else:
        return None
    comment = get(payload, "comment", want=dict)
    if not number or comment is None:
        return None
    login = get(comment, "user", "login") or ""
    body = get(comment, "body") or ""
    return Event(
        "github",
        "comment",
        repo,
        number,
        action,
        author=login,
        author_id=get(comment, "user", "id", want=int),
        association=get(comment, "author_association") or "",
        body=body,
        comment_id=get(comment, "id", want=int),
        is_bot=is_bot(login, get(comment, "user", "type"), body, bot_logins),
        installation=installation,
        **_github_thread(event_type, comment),
    )


def _github_thread(event_type: str, comment: dict[str, Any]) -> dict[str, Any]:
    """A reply in a review thread (`in_reply_to_id` names the thread's first comment)."""
    root = get(comment, "in_reply_to_id", want=int)
    if event_type != "pull_request_review_comment" or not root:
        return {}
    line = get(comment, "line", want=int) or get(comment, "original_line", want=int)
    return {"thread": str(root), "path": get(comment, "path") or "", "line": line}
