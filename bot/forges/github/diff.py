"""The PR diff from GitHub's `/pulls/{n}/files` patches, and its part a push re-reviews."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...change.diff import Hunk, parse, to_text


def patch_to_diff(files: Iterable[Any]) -> tuple[str, list[str]]:
    """Unified diff text from `/pulls/{n}/files` entries; also the paths GitHub sent without a patch."""
    out: list[str] = []
    no_patch: list[str] = []
    for f in files:
        old = getattr(f, "previous_filename", None) or f.filename
        patch = getattr(f, "patch", None)
        if not patch:
            no_patch.append(f.filename)
            continue
        src = "/dev/null" if f.status == "added" else f"a/{old}"
        dst = "/dev/null" if f.status == "removed" else f"b/{f.filename}"
        out += [f"diff --git a/{old} b/{f.filename}", f"--- {src}", f"+++ {dst}", patch.rstrip("\n")]
    return ("\n".join(out) + "\n") if out else "", no_patch


def restrict_diff(pr_diff: str, new_commits_diff: str) -> str:
    """The PR diff's hunks that hold a line added by the new commits (incremental review on a push).

    Both diffs end at the same head, so new-side line numbers compare directly; hunks stay whole so the
    model sees their context and comments stay on lines GitHub accepts.
    """
    added: dict[str, set[int]] = {}
    for f in parse(new_commits_diff).files:
        added[f.path] = {ln.new_no for h in f.hunks for ln in h.lines if ln.kind == "+" and ln.new_no}

    def touched(path: str, h: Hunk) -> bool:
        return any(ln.kind == "+" and ln.new_no in added.get(path, ()) for ln in h.lines)

    return to_text([(f, [h for h in f.hunks if touched(f.path, h)]) for f in parse(pr_diff).files])
