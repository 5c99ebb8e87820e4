"""What a job may say on a PR: never a path of the machine it runs on (checkouts, caches, the venv)."""

from __future__ import annotations

import re

# Absolute paths on the server (checkouts, caches, the venv) never go into a PR comment.
_ABS_PATH = re.compile(r"(?<![\w.:/~-])(?:~|/)(?:[\w.+@-]+/)+[\w.+@-]*")


def scrub_paths(text: str) -> str:
    """`text` with server paths (two or more `/`-separated parts from `/` or `~`) as `<path>`; a
    command such as `/review` or a repository path such as `src/app.py` stays."""
    return _ABS_PATH.sub("<path>", text)


def public_reason(exc: BaseException, limit: int = 300) -> str:
    """One line for the PR: the exception's first line, server paths hidden, shortened."""
    first = (str(exc).strip().splitlines() or [""])[0]
    first = scrub_paths(first)
    if len(first) > limit:
        first = first[: limit - 1] + "…"
    return first
