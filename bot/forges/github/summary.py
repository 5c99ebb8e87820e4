"""What the bot remembers on a GitHub PR, in its own comments: the summary's trailing markers (the
fingerprints it lists, the last reviewed head, `/pause`) and the marker of a comment it resolved."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...render.markdown import fingerprint_marker, fingerprints_in, is_summary, trailing_markers

RESOLVED_MARKER = "<!-- prereview:resolved -->"
PAUSED_MARKER = "<!-- prereview:paused -->"
_HEAD = re.compile(r"<!-- prereview:head=([0-9a-f]{7,64}) -->")
MAX_BODY = 65_000  # GitHub rejects comment bodies over 65,536 characters


@dataclass(frozen=True)
class SummaryState:
    """What the summary comment remembers between runs."""

    comment_id: int | None = None
    body: str = ""
    paused: bool = False
    head: str | None = None  # head sha of the last review

    @property
    def fingerprints(self) -> set[str]:
        return fingerprints_in("\n".join(trailing_markers(self.body)))  # the trailing marker block only


def is_bot_login(login: str, bot_logins: frozenset[str] = frozenset()) -> bool:
    """Comments the bot may have written: a GitHub App or Actions token (`*[bot]`), or an account the
    server's `server.bot_logins` names (a personal access token's user)."""
    return login.endswith("[bot]") or login.lower() in bot_logins


def summary_state(notes: list[Any], bot_logins: frozenset[str] = frozenset()) -> SummaryState:
    """The bot's summary comment: it starts with the summary marker, its author is the bot, and its state
    (paused, last head, fingerprints) is read from its trailing marker block only."""
    for n in sorted(notes, key=lambda n: n.id):  # the oldest: the one concurrent runs all adopt
        if is_summary(n.body) and is_bot_login(getattr(n, "login", ""), bot_logins):
            return state_of(n.id, n.body)
    return SummaryState()


def state_of(comment_id: int, body: str) -> SummaryState:
    """The state the summary comment `body` holds in its trailing marker block."""
    markers = trailing_markers(body)
    heads = [m.group(1) for m in map(_HEAD.fullmatch, markers) if m]
    return SummaryState(comment_id, body, PAUSED_MARKER in markers, heads[-1] if heads else None)


def with_state(text: str, head: str, carried: set[str], paused: bool) -> str:
    """The summary `text` with its trailing markers: the fingerprints carried over, the head, paused."""
    extra = [fingerprint_marker(fp) for fp in sorted(carried)]
    extra.append(f"<!-- prereview:head={head} -->")
    if paused:
        extra.append(PAUSED_MARKER)
    text = text.rstrip("\n") + "\n" + "\n".join(extra) + "\n"
    if len(text) > MAX_BODY:  # keep the markers (they sit at the end): cut the table in the middle
        markers = "\n".join(ln for ln in text.splitlines() if ln.startswith("<!-- prereview:"))
        text = text[: MAX_BODY - len(markers) - 80] + "\n\n… (truncated)\n" + markers + "\n"
    return text


def resolved_body(old: str, head: str) -> str:
    return (
        f"✅ **Resolved** — prereview no longer reports this at `{head[:12]}`.\n\n"
        f"<details><summary>Original comment</summary>\n\n{old}\n\n</details>\n{RESOLVED_MARKER}"
    )
