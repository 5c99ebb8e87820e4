"""`/review -i` without a checkout: the PR diff's hunks holding lines added since the last review.

The server remembers the lines the last reviewed PR diff added (per file); a hunk of the current PR diff
is new when it adds a line (text) that was not added then. Hunks stay whole, so the model sees their
context and comments stay on lines the forge accepts.
"""

from __future__ import annotations

from collections import Counter

from ..change.diff import parse, to_text

MAX_REMEMBERED_BYTES = 2_000_000  # beyond this the next `-i` falls back to a full review


def added_lines(diff_text: str) -> dict[str, list[str]]:
    return {
        f.path: [ln.text for h in f.hunks for ln in h.lines if ln.kind == "+"] for f in parse(diff_text).files
    }


def new_hunks(pr_diff_text: str, before: dict[str, list[str]]) -> str:
    selection = []
    for f in parse(pr_diff_text).files:
        seen = Counter(before.get(f.path, []))
        hunks = []
        for h in f.hunks:
            fresh = False
            for ln in h.lines:
                if ln.kind != "+":
                    continue
                if seen[ln.text] > 0:
                    seen[ln.text] -= 1
                else:
                    fresh = True
            if fresh:
                hunks.append(h)
        selection.append((f, hunks))
    return to_text(selection)
