"""GitLab webhook payloads (Merge Request Hook, Note Hook) → Event; a pipeline a note webhook triggered
carries the same JSON in TRIGGER_PAYLOAD."""

from __future__ import annotations

from typing import Any

from ..webhook import Event, get, is_bot


def _gitlab_thread(attrs: Any) -> dict[str, Any]:
    """A note in a diff discussion (a reply, or the thread's first note: the worker checks it is ours)."""
    discussion = get(attrs, "discussion_id")
    if not discussion or get(attrs, "type") != "DiffNote":
        return {}
    path = get(attrs, "position", "new_path") or get(attrs, "position", "old_path") or ""
    line = get(attrs, "position", "new_line", want=int) or get(attrs, "position", "old_line", want=int)
    return {"thread": discussion, "path": path, "line": line}


MR_ACTIONS = frozenset({"open", "reopen", "update"})


def parse(payload: Any, bot_logins: frozenset[str] = frozenset()) -> Event | None:
    kind = get(payload, "object_kind")
    project = get(payload, "project", "path_with_namespace") or _id_str(
        get(payload, "project", "id", want=int)
    )
    if not project:
        return None
    user = get(payload, "user", "username") or ""
    user_id = get(payload, "user", "id", want=int)
    if kind == "merge_request":
        action = get(payload, "object_attributes", "action") or ""
        iid = get(payload, "object_attributes", "iid", want=int)
        if action not in MR_ACTIONS or not iid:
            return None
        if action == "update" and not get(payload, "object_attributes", "oldrev"):
            return None  # title/label edits, not new commits
        return Event(
            "gitlab",
            "pr",
            project,
            iid,
            action,
            head_sha=get(payload, "object_attributes", "last_commit", "id"),
            author=user,
            author_id=user_id,
            draft=bool(get(payload, "object_attributes", "draft", want=bool)),
            before=get(payload, "object_attributes", "oldrev") or "",
        )
    if kind == "note" and get(payload, "object_attributes", "noteable_type") == "MergeRequest":
        iid = get(payload, "merge_request", "iid", want=int)
        if not iid:
            return None
        body = get(payload, "object_attributes", "note") or ""
        return Event(
            "gitlab",
            "comment",
            project,
            iid,
            get(payload, "object_attributes", "action") or "create",
            author=user,
            author_id=user_id,
            body=body,
            comment_id=get(payload, "object_attributes", "id", want=int),
            is_bot=is_bot(user, "bot" if get(payload, "user", "bot", want=bool) else None, body, bot_logins),
            **_gitlab_thread(get(payload, "object_attributes", want=dict)),
        )
    return None


def _id_str(value: int | None) -> str | None:
    return str(value) if value else None
