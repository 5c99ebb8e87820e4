"""GitHub Actions' event → what `prereview github` is asked to do (`plan`): a review of a PR (a push, an
opened PR, safe mode on pull_request_target, a workflow_dispatch), a comment command, or nothing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...types import PrereviewError

PR_ACTIONS = {"opened", "synchronize", "reopened", "ready_for_review"}


@dataclass(frozen=True)
class Job:
    """What one event asks for."""

    number: int
    safe: bool = False  # pull_request_target: never touch the PR's code
    automatic: bool = False  # a push or an opened PR (not a person asking): /pause stops these
    incremental: bool = False  # synchronize: review only what is new since the last reviewed head
    comment_body: str | None = None  # issue_comment: parsed once the config (command prefix) is known
    comment_id: int | None = None
    author_association: str | None = None


def plan(event_name: str, event: Mapping[str, Any], *, pr: int | None = None) -> Job | str:
    """The job for an event, or a string saying why there is nothing to do."""
    if pr is not None:
        return Job(pr)
    if event_name in ("pull_request", "pull_request_target"):
        action = event.get("action")
        if action not in PR_ACTIONS:
            return f"nothing to do for {event_name}.{action}"
        pull = event.get("pull_request") or {}
        if pull.get("draft") and action != "ready_for_review":
            return (
                "draft pull request: review waits for ready_for_review (github.review_drafts: true to change)"
            )
        number = int(event.get("number") or pull["number"])
        return Job(
            number,
            safe=event_name == "pull_request_target",
            incremental=action == "synchronize",
            automatic=True,
        )
    if event_name == "issue_comment":
        issue = event.get("issue") or {}
        comment = event.get("comment") or {}
        if event.get("action") != "created" or not issue.get("pull_request"):
            return "comment is not a new comment on a pull request"
        return Job(
            int(issue["number"]),
            comment_id=comment.get("id"),
            author_association=comment.get("author_association"),
            comment_body=comment.get("body") or "",
        )
    if event_name == "workflow_dispatch":
        inputs = event.get("inputs") or {}
        given = inputs.get("pr") or inputs.get("pr-number") or inputs.get("pull_request")
        if not str(given or "").strip().isdigit():
            raise PrereviewError(
                f"workflow_dispatch needs a `pr` input with the pull request number (got {given!r}); "
                "add one or pass --pr N"
            )
        return Job(int(str(given)))
    if event_name in ("push", "schedule"):  # the default-branch warm-up (docs/github.md): caches filled
        return f"nothing to review on {event_name}: prereview is installed and its caches are saved (warm-up)"
    raise PrereviewError(
        f"event '{event_name}' is not supported; run on pull_request, pull_request_target, issue_comment or "
        "workflow_dispatch (or pass --pr N)"
    )
