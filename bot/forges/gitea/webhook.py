"""Gitea/Forgejo webhook payloads (pull_request, issue_comment) → Event; an Actions run's event payload
is the same JSON."""

from __future__ import annotations

from typing import Any

from ..webhook import Event, get, is_bot

# Gitea's HookIssueAction spelling (modules/structs/hook.go): `synchronized`, not GitHub's `synchronize`.
GITEA_PR_ACTIONS = frozenset({"opened", "reopened", "synchronized"})


def parse(event_type: str, payload: Any, bot_logins: frozenset[str] = frozenset()) -> Event | None:
    """Gitea's and Forgejo's PullRequestPayload / IssueCommentPayload (`X-Gitea-Event` pull_request,
    issue_comment; a comment on a PR carries `is_pull: true`)."""
    repo = get(payload, "repository", "full_name")
    action = get(payload, "action") or ""
    if not repo:
        return None
    if event_type == "pull_request" and action in GITEA_PR_ACTIONS:
        number = get(payload, "number", want=int) or get(payload, "pull_request", "number", want=int)
        if not number:
            return None
        return Event(
            "gitea",
            "pr",
            repo,
            number,
            action,
            head_sha=get(payload, "pull_request", "head", "sha"),
            author=get(payload, "sender", "login") or "",
            draft=bool(get(payload, "pull_request", "draft", want=bool)),
            before=get(payload, "before") or "",
        )
    if event_type != "issue_comment" or action != "created":
        return None
    on_pr = get(payload, "is_pull", want=bool) or get(payload, "issue", "pull_request", want=dict) is not None
    number = get(payload, "issue", "number", want=int)
    comment = get(payload, "comment", want=dict)
    if not on_pr or not number or comment is None:
        return None
    login = get(comment, "user", "login") or ""
    body = get(comment, "body") or ""
    return Event(
        "gitea",
        "comment",
        repo,
        number,
        action,
        author=login,
        author_id=get(comment, "user", "id", want=int),
        body=body,
        comment_id=get(comment, "id", want=int),
        is_bot=is_bot(login, None, body, bot_logins),
    )
