"""Which job (if any) an event asks for: commands, authorisation, bots, pause and auto-review.

Comment text only picks a command and its question; it never reaches configuration.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

from ..config import ServerConfig
from ..forges.webhook import Event
from . import chatops
from .job import Job

# Forges whose commands are authorised by asking the forge (GitLab: Developer+, Gitea: write+, Bitbucket:
# REPO_WRITE); GitHub's signed payload carries the author's association instead.
CHECKED = frozenset({"gitlab", "gitea", "bitbucket"})


@dataclass(frozen=True)
class Decision:
    job: Job | None
    reason: str  # shown in the webhook response, for the forge's delivery log


def decide(event: Event, cfg: ServerConfig, *, paused: bool, delivery: str = "") -> Decision:
    base: dict[str, Any] = {
        "forge": event.forge,
        "repo": event.repo,
        "number": event.number,
        "delivery": delivery,
        "installation": event.installation,
    }
    if event.kind == "pr":
        if not cfg.auto_review:
            return Decision(None, "auto-review is off")
        if any(fnmatch.fnmatchcase(event.repo, pattern) for pattern in cfg.no_auto_review):
            return Decision(None, "auto-review is off for this repository")
        if paused:
            return Decision(None, "auto-review is paused on this PR")
        if event.draft:
            return Decision(None, "draft")
        return Decision(Job("review", head_sha=event.head_sha, auto=True, **base), "review queued")
    if event.is_bot:
        return Decision(None, "comment by a bot")
    if event.forge == "gitlab" and event.action not in ("create", ""):
        return Decision(None, "edited note")
    command = chatops.parse(event.body, cfg.command_prefix)
    if command is None and _addressed(event.body, cfg.command_prefix):
        command = chatops.Command("help")  # "/prereview frobnicate": an unknown command gets the help
    if command is None and event.thread and event.body.strip():
        return _thread_reply(event, base)
    if command is None:
        return Decision(None, "no command")
    who: dict[str, Any] = {
        "comment_id": event.comment_id,
        "author": event.author,
        "author_id": event.author_id,
    }
    if event.forge == "github" and not chatops.is_authorized(event.association):
        return Decision(Job("refuse", text=command.name, **who, **base), "not authorised")
    kind = command.name
    if kind == "ask" and not command.question:
        kind = "help"
    job = Job(
        kind,
        incremental=command.incremental,
        text=command.question,
        update=command.update,
        check_access=event.forge in CHECKED,
        **who,
        **base,
    )
    return Decision(job, f"{kind} queued")


def _thread_reply(event: Event, base: dict[str, Any]) -> Decision:
    """A reply inside a review thread is a question about that line (`/ask`), answered in the thread. Only
    trusted people get an answer (untrusted replies are left alone: no refusal in someone's thread); the
    worker answers only in threads prereview opened."""
    if event.forge == "github" and not chatops.is_authorized(event.association):
        return Decision(None, "thread reply by someone without write access")
    job = Job(
        "ask",
        text=event.body.strip(),
        comment_id=event.comment_id,
        author=event.author,
        author_id=event.author_id,
        check_access=event.forge in CHECKED,
        thread=event.thread,
        path=event.path,
        line=event.line,
        **base,
    )
    return Decision(job, "thread reply queued")


def _addressed(body: str, prefix: str) -> bool:
    """A word prefix (`/prereview`) names us; a bare `/word` may belong to another bot."""
    p = prefix.strip()
    if not p or not (p[-1].isalnum() or p[-1] in "-_"):
        return False
    return any(line.strip().lower().split(" ")[0] == p.lower() for line in body.splitlines())
