"""The one escaper for untrusted text in PR/MR comments (paths, model messages, quotes, titles, git errors).

Untrusted text must never add raw HTML (a hidden `<!-- prereview:… -->` marker the bot would later read
back, an `<img>` every reader's browser fetches), ping people with @mentions, or embed images. `text` is
for prose; `code` for an inline code span (paths, rule ids), where markdown and HTML are shown literally
but the raw comment body must still not carry a marker.
"""

from __future__ import annotations

import re

ZWSP = "\u200b"  # invisible: breaks `<!--`, `@name` and `![` apart without changing what readers see


def text(s: str) -> str:
    """Prose: no raw HTML, no @mentions, no images."""
    s = s.replace("<", "&lt;").replace(">", "&gt;")
    s = re.sub(r"@(?=[A-Za-z0-9_])", "@" + ZWSP, s)
    return s.replace("![", "!" + ZWSP + "[")


def code(s: str) -> str:
    """`s` as one inline code span on one line: a fence longer than any backtick run inside it, and no
    `<!--`/@mention in the raw body (the span shows `<` literally, so it gets an invisible break instead)."""
    s = " ".join(s.splitlines()).replace("<", "<" + ZWSP)
    s = re.sub(r"@(?=[A-Za-z0-9_])", "@" + ZWSP, s)
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip() else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def cell(s: str) -> str:
    """Prose inside a markdown table cell: escaped, on one line, pipes kept as text."""
    return text(s).replace("|", "\\|").replace("\r", " ").replace("\n", " ")
