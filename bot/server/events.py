"""Webhook payloads (GitHub, GitLab, Gitea/Forgejo) -> one small Event record; any other shape -> None.

Payloads are untrusted JSON even when signed, so every field is read defensively by type.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

BOT_MARKER = "<!-- prereview"  # every comment the bot writes carries one of its markers


@dataclass(frozen=True)
class Event:
    forge: str  # "github" | "gitlab" | "gitea"
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


def _get(data: Any, *path: str, want: type | tuple[type, ...] = str) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    if want is int and isinstance(data, bool):
        return None
    return data if isinstance(data, want) else None


def _is_bot(login: str, user_type: str | None, body: str, bot_logins: frozenset[str]) -> bool:
    return (
        (user_type or "").lower() == "bot"
        or login.endswith("[bot]")
        or login.lower() in bot_logins
        or BOT_MARKER in body
    )


PR_ACTIONS = frozenset({"opened", "reopened", "synchronize", "ready_for_review"})


def github(event_type: str, payload: Any, bot_logins: frozenset[str] = frozenset()) -> Event | None:
    repo = _get(payload, "repository", "full_name")
    action = _get(payload, "action") or ""
    installation = _get(payload, "installation", "id", want=int)
    if not repo:
        return None
    if event_type == "pull_request" and action in PR_ACTIONS:
        number = _get(payload, "pull_request", "number", want=int) or _get(payload, "number", want=int)
        if not number:
            return None
        return Event(
            "github",
            "pr",
            repo,
            number,
            action,
            head_sha=_get(payload, "pull_request", "head", "sha"),
            author=_get(payload, "sender", "login") or "",
            draft=bool(_get(payload, "pull_request", "draft", want=bool)),
            installation=installation,
            before=_get(payload, "before") or "",
        )
    if event_type == "issue_comment" and action == "created":
        if _get(payload, "issue", "pull_request", want=dict) is None:
            return None  # a comment on an issue, not on a PR
        number = _get(payload, "issue", "number", want=int)
    elif event_type == "pull_request_review_comment" and action == "created":
        number = _get(payload, "pull_request", "number", want=int)
    else:
        return None
    comment = _get(payload, "comment", want=dict)
    if not number or comment is None:
        return None
    login = _get(comment, "user", "login") or ""
    body = _get(comment, "body") or ""
    return Event(
        "github",
        "comment",
        repo,
        number,
        action,
        author=login,
        author_id=_get(comment, "user", "id", want=int),
        association=_get(comment, "author_association") or "",
        body=body,
        comment_id=_get(comment, "id", want=int),
        is_bot=_is_bot(login, _get(comment, "user", "type"), body, bot_logins),
        installation=installation,
        **_github_thread(event_type, comment),
    )


def _github_thread(event_type: str, comment: dict[str, Any]) -> dict[str, Any]:
    """A reply in a review thread (`in_reply_to_id` names the thread's first comment)."""
    root = _get(comment, "in_reply_to_id", want=int)
    if event_type != "pull_request_review_comment" or not root:
        return {}
    line = _get(comment, "line", want=int) or _get(comment, "original_line", want=int)
    return {"thread": str(root), "path": _get(comment, "path") or "", "line": line}


def _gitlab_thread(attrs: Any) -> dict[str, Any]:
    """A note in a diff discussion (a reply, or the thread's first note: the worker checks it is ours)."""
    discussion = _get(attrs, "discussion_id")
    if not discussion or _get(attrs, "type") != "DiffNote":
        return {}
    path = _get(attrs, "position", "new_path") or _get(attrs, "position", "old_path") or ""
    line = _get(attrs, "position", "new_line", want=int) or _get(attrs, "position", "old_line", want=int)
    return {"thread": discussion, "path": path, "line": line}


MR_ACTIONS = frozenset({"open", "reopen", "update"})


def gitlab(payload: Any, bot_logins: frozenset[str] = frozenset()) -> Event | None:
    kind = _get(payload, "object_kind")
    project = _get(payload, "project", "path_with_namespace") or _id_str(
        _get(payload, "project", "id", want=int)
    )
    if not project:
        return None
    user = _get(payload, "user", "username") or ""
    user_id = _get(payload, "user", "id", want=int)
    if kind == "merge_request":
        action = _get(payload, "object_attributes", "action") or ""
        iid = _get(payload, "object_attributes", "iid", want=int)
        if action not in MR_ACTIONS or not iid:
            return None
        if action == "update" and not _get(payload, "object_attributes", "oldrev"):
            return None  # title/label edits, not new commits
        return Event(
            "gitlab",
            "pr",
            project,
            iid,
            action,
            head_sha=_get(payload, "object_attributes", "last_commit", "id"),
            author=user,
            author_id=user_id,
            draft=bool(_get(payload, "object_attributes", "draft", want=bool)),
            before=_get(payload, "object_attributes", "oldrev") or "",
        )
    if kind == "note" and _get(payload, "object_attributes", "noteable_type") == "MergeRequest":
        iid = _get(payload, "merge_request", "iid", want=int)
        if not iid:
            return None
        body = _get(payload, "object_attributes", "note") or ""
        return Event(
            "gitlab",
            "comment",
            project,
            iid,
            _get(payload, "object_attributes", "action") or "create",
            author=user,
            author_id=user_id,
            body=body,
            comment_id=_get(payload, "object_attributes", "id", want=int),
            is_bot=_is_bot(
                user, "bot" if _get(payload, "user", "bot", want=bool) else None, body, bot_logins
            ),
            **_gitlab_thread(_get(payload, "object_attributes", want=dict)),
        )
    return None


# Gitea's HookIssueAction spelling (modules/structs/hook.go): `synchronized`, not GitHub's `synchronize`.
GITEA_PR_ACTIONS = frozenset({"opened", "reopened", "synchronized"})


def gitea(event_type: str, payload: Any, bot_logins: frozenset[str] = frozenset()) -> Event | None:
    """Gitea's and Forgejo's PullRequestPayload / IssueCommentPayload (`X-Gitea-Event` pull_request,
    issue_comment; a comment on a PR carries `is_pull: true`)."""
    repo = _get(payload, "repository", "full_name")
    action = _get(payload, "action") or ""
    if not repo:
        return None
    if event_type == "pull_request" and action in GITEA_PR_ACTIONS:
        number = _get(payload, "number", want=int) or _get(payload, "pull_request", "number", want=int)
        if not number:
            return None
        return Event(
            "gitea",
            "pr",
            repo,
            number,
            action,
            head_sha=_get(payload, "pull_request", "head", "sha"),
            author=_get(payload, "sender", "login") or "",
            draft=bool(_get(payload, "pull_request", "draft", want=bool)),
            before=_get(payload, "before") or "",
        )
    if event_type != "issue_comment" or action != "created":
        return None
    on_pr = (
        _get(payload, "is_pull", want=bool) or _get(payload, "issue", "pull_request", want=dict) is not None
    )
    number = _get(payload, "issue", "number", want=int)
    comment = _get(payload, "comment", want=dict)
    if not on_pr or not number or comment is None:
        return None
    login = _get(comment, "user", "login") or ""
    body = _get(comment, "body") or ""
    return Event(
        "gitea",
        "comment",
        repo,
        number,
        action,
        author=login,
        author_id=_get(comment, "user", "id", want=int),
        body=body,
        comment_id=_get(comment, "id", want=int),
        is_bot=_is_bot(login, None, body, bot_logins),
    )


def _id_str(value: int | None) -> str | None:
    return str(value) if value else None


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
