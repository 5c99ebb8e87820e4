"""PR/MR comment commands (`/review`, `/review -i`, `/fix`, `/ask …`, `/help`, `/pause`, `/resume`).

Shared by the GitHub Action (`prereview github` on `issue_comment`) and the webhook server. Parsing is
pure: a comment body and the configured prefix in, a `Command` (or None when the comment holds no
command of ours) out. Authorisation is a separate, equally small check on the author's association.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

COMMANDS: dict[str, str] = {
    "review": "review the change again (full); `-i` reviews only what changed since the last review",
    "fix": "propose verified fixes for the findings (optionally: a finding's file:line)",
    "describe": "summarise the change file by file in the summary comment; `--update` puts it in the "
    "description (between markers, your text stays)",
    "ask": "ask a question about the change, e.g. `ask is this thread-safe?`",
    "help": "show this help",
    "pause": "stop automatic reviews on new pushes",
    "resume": "resume automatic reviews on new pushes",
}
_INCREMENTAL_FLAGS = {"-i", "--incremental"}
_FULL_FLAGS = {"-f", "--full"}

# Who may run commands: GitHub's author_association values for people with write access.
AUTHORIZED_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})


@dataclass(frozen=True)
class Command:
    """One parsed command. `args` holds the words after the name, `text` the raw rest of the line."""

    name: str  # one of COMMANDS
    incremental: bool = False  # `/review -i`
    args: tuple[str, ...] = ()
    text: str = ""

    @property
    def update(self) -> bool:
        """`/describe --update`: write the walkthrough into the PR/MR description."""
        return self.name == "describe" and any(w in ("--update", "-u") for w in self.args)

    @property
    def question(self) -> str:
        """The question of `/ask`; empty when none was given (reply with the help then)."""
        return self.text if self.name == "ask" else ""


def is_authorized(author_association: str | None) -> bool:
    return (author_association or "").upper() in AUTHORIZED_ASSOCIATIONS


def _pattern(prefix: str) -> re.Pattern[str]:
    # "/" -> "/review"; "/prereview" or "@bot" -> "/prereview review" (a word prefix needs a space).
    sep = r"\s+" if prefix and (prefix[-1].isalnum() or prefix[-1] in "-_") else ""
    return re.compile(rf"^{re.escape(prefix)}{sep}([a-z]+)(?:[ \t]+(.*))?$", re.IGNORECASE)


def parse(body: str | None, prefix: str = "/") -> Command | None:
    """The first command line of a comment, or None.

    Lines inside fenced code blocks and quoted lines (`> /review`) are ignored, so quoting a command
    in a reply does not run it. Unknown command words (e.g. another bot's `/retest`) give None.
    """
    pattern = _pattern(prefix.strip() or "/")
    in_fence = False
    for raw in (body or "").splitlines():
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        if in_fence or not line or line.startswith(">"):
            continue
        m = pattern.match(line)
        if m is None:
            continue
        name, rest = m.group(1).lower(), (m.group(2) or "").strip()
        if name not in COMMANDS:
            continue
        return _command(name, rest)
    return None


def _command(name: str, rest: str) -> Command:
    try:
        words = tuple(shlex.split(rest))
    except ValueError:  # an unbalanced quote in a question
        words = tuple(rest.split())
    if name == "review":
        incremental = any(w in _INCREMENTAL_FLAGS for w in words) and not any(w in _FULL_FLAGS for w in words)
        args = tuple(w for w in words if w not in _INCREMENTAL_FLAGS | _FULL_FLAGS)
        return Command(name, incremental=incremental, args=args, text=rest)
    return Command(name, args=words, text=rest)


def help_text(prefix: str = "/") -> str:
    """Markdown help listing every command with the configured prefix."""
    p = prefix.strip() or "/"
    sep = " " if p[-1].isalnum() or p[-1] in "-_" else ""
    rows = [
        f"| `{p}{sep}{name}`" + (f" · `{p}{sep}{name} -i`" if name == "review" else "") + f" | {desc} |"
        for name, desc in COMMANDS.items()
    ]
    return (
        "\n".join(
            [
                "**prereview commands** (for the repository's owners, members and collaborators):",
                "",
                "| Command | What it does |",
                "|---|---|",
                *rows,
            ]
        )
        + "\n"
    )
