"""Incremental review: the PR diff's hunks that add a line the last reviewed PR diff did not add.

One algorithm for every entry point (the GitHub Action on `synchronize` and `/review -i`, the server's
`/review -i`). What was reviewed is remembered as the lines the PR diff added then, per file, in order
(the server stores them; the Action rebuilds them from its checkout at the head its summary recorded).

A line counts as reviewed when the same text was added then: first matched in order (so a second copy
of a common line, `return None`, in a new place is new), then anywhere in the same file (a line a commit
only moved keeps its text: its findings are already posted, under fingerprints that ignore line numbers,
and reviewing it again would only re-flag them). A line whose text changed — an edit, a re-indent — is
new. A hunk holding a new line is reviewed whole, so the model sees its context and comments stay on
lines the forge accepts; hunks holding only reviewed lines are left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from difflib import SequenceMatcher
from pathlib import Path

from ..types import PrereviewError
from . import git
from .diff import FileDiff, Hunk, parse, to_text

MAX_REMEMBERED_BYTES = 2_000_000  # beyond this the next `-i` falls back to a full review

Added = dict[str, list[str]]  # path -> the texts of the lines the PR diff added there, in order


def added_lines(diff_text: str) -> Added:
    """What a review of `diff_text` saw: the added lines' texts per file, in order."""
    return {f.path: [ln.text for h in f.hunks for ln in h.added] for f in parse(diff_text).files}


def new_hunks(pr_diff_text: str, before: Mapping[str, Sequence[str]]) -> str:
    """The hunks of `pr_diff_text` holding a line `before` (an earlier `added_lines`) does not account for."""
    selection: list[tuple[FileDiff, list[Hunk]]] = []
    for f in parse(pr_diff_text).files:
        added = [(i, ln.text) for i, h in enumerate(f.hunks) for ln in h.added]
        fresh = _fresh([t for _, t in added], list(before.get(f.path, ())))
        hunks = {added[k][0] for k in fresh}
        selection.append((f, [h for i, h in enumerate(f.hunks) if i in hunks]))
    return to_text(selection)


def added_at(repo: Path, base: str, head: str) -> Added | None:
    """`added_lines` of the PR diff as it was at `head` (from the merge base of `base` and `head`, as the
    forges show it), read from the checkout `repo`; None when either commit is not there."""
    try:
        start = git.git(repo, "merge-base", git.resolve(repo, base), git.resolve(repo, head)).strip()
        return added_lines(git.diff(repo, start, head)) if start else None
    except PrereviewError:  # not in the checkout (a force-push, a shallow clone)
        return None


def _fresh(now: list[str], before: list[str]) -> list[int]:
    """Indexes of the texts in `now` that `before` does not account for: matched in order first, then
    (a moved line) anywhere."""
    matched: set[int] = set()
    used: set[int] = set()
    for block in SequenceMatcher(None, before, now, autojunk=False).get_matching_blocks():
        matched.update(range(block.b, block.b + block.size))
        used.update(range(block.a, block.a + block.size))
    moved = Counter(t for i, t in enumerate(before) if i not in used)  # reviewed, now elsewhere
    fresh = []
    for i, text in enumerate(now):
        if i in matched:
            continue
        if moved[text] > 0:
            moved[text] -= 1
        else:
            fresh.append(i)
    return fresh
