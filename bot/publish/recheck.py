"""Which earlier findings a review may resolve: only those whose source it could run again.

A finding from the project's tests or the behaviour checks that is missing from a review which could not
run them (a `/review` comment whose workflow checks out the default branch, a runner without a sandbox)
was not re-checked, not fixed: its comment stays as it is. `Review.unchecked` names those sources; the
source of a posted comment is read from the heading prereview wrote (`… · tests`, `… · behaviour`).
"""

from __future__ import annotations

# Findings that only running the project's code can produce (breakage.py, behaviour/judge.py).
RUN_SOURCES = ("tests", "behaviour")
_WHAT = {"tests": "the project's tests", "behaviour": "the behaviour checks"}


def source_of(body: str) -> str | None:
    """The source named in the heading of a comment prereview posted (`🔴 **high** · bug · tests`)."""
    first = (body or "").lstrip().split("\n", 1)[0]
    parts = first.split(" · ")
    if len(parts) < 3:  # icon+severity · category [· source]: a model finding names no source
        return None
    word = parts[-1].split(" ", 1)[0].replace("\\", "")
    return word if word in RUN_SOURCES else None


def not_rechecked(body: str, unchecked: tuple[str, ...]) -> bool:
    """True when a finding of the comment comes from a source this review could not run: keep it open.
    Findings on the same lines share one comment (publish/grouping.py), each under its own heading."""
    return any(source_of(part) in unchecked for part in (body or "").split("\n---\n"))


def kept_note(count: int, unchecked: tuple[str, ...]) -> str:
    what = " and ".join(_WHAT.get(s, s) for s in unchecked)
    return (
        f"{count} earlier finding(s) from {what} left open: {what} did not run in this review, so they "
        "were not re-checked."
    )
