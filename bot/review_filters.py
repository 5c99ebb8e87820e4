"""Noise controls every entry point shares: which changes are not reviewed automatically (and why), and
which findings may become inline comments (`review.filter_mode`, `review.max_comments_per_file`).

The one review job (`jobs/review.py`), which every automatic review runs through (the CI commands and
the webhook worker), calls `skip_reason` once it knows the change and its config; the publishers call
`plan_inline`. Findings
that may not go inline are never dropped: they are listed in the summary.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from collections.abc import Iterable
from typing import Literal

from .change.diff import Diff
from .config import ReviewConfig
from .types import ChangeRequest, Finding

Placement = Literal["line", "file", "summary"]


def _glob(name: str, patterns: Iterable[str]) -> str | None:
    """The first pattern `name` matches: `*` and `?` are wildcards, case-insensitive, and brackets are
    literal (so `*[bot]` means a name ending in "[bot]", not in b, o or t)."""
    low = name.lower()
    for p in patterns:
        if fnmatch.fnmatchcase(low, p.lower().replace("[", "[[]")):
            return p
    return None


def _title_prefix(title: str, prefixes: Iterable[str]) -> str | None:
    """The prefix `title` starts with as a whole word: 'WIP: x' and 'wip x' match 'WIP', 'Wipe x' does not."""
    t = title.strip().lower()
    for p in prefixes:
        q = p.strip().lower()
        if not q or not t.startswith(q):
            continue
        rest = t[len(q) :]
        if not rest or not q[-1].isalnum() or not (rest[0].isalnum() or rest[0] == "_"):
            return p
    return None


def skip_reason(change: ChangeRequest, cfg: ReviewConfig) -> str | None:
    """Why an automatic review of `change` is skipped (`review.ignore`), or None to review it."""
    ig = cfg.ignore
    if change.author and (p := _glob(change.author, ig.authors)):
        return f"author {change.author} matches review.ignore.authors '{p}'"
    for label in change.labels:
        if p := _glob(label, ig.labels):
            return f"label '{label}' matches review.ignore.labels '{p}'"
    if p := _title_prefix(change.title, ig.title_prefixes):
        return f"the title starts with '{p}' (review.ignore.title_prefixes)"
    return None


def skip_message(reason: str, override: str = "comment `/review` on the PR") -> str:
    """The one line each entry point logs (and the Action writes to its step summary)."""
    return f"review skipped: {reason}; {override} to review it anyway"


def placement(f: Finding, diff: Diff, mode: str) -> Placement:
    """Where `filter_mode` lets a finding go: on its line, as a comment on its file, or the summary only."""
    fd = diff.file(f.path)
    if fd is None:
        return "summary"
    if mode == "added":
        line = (fd.by_new if f.side == "RIGHT" else fd.by_old).get(f.line)
        return "line" if line is not None and line.kind != " " else "summary"
    if f.in_diff or diff.has_line(f.path, f.line, f.side):  # the publisher falls back if the forge refuses
        return "line"
    return "file" if mode in ("file", "nofilter") else "summary"


def within(findings: Iterable[Finding], diff: Diff, mode: str) -> tuple[list[Finding], int]:
    """The findings `--filter-mode MODE` shows (as reviewdog filters its input), and how many it hides:
    added/diff_context/file keep those that could go on a line or file there; nofilter keeps all."""
    kept, hidden = [], 0
    for f in findings:
        if mode == "nofilter" or placement(f, diff, mode) != "summary":
            kept.append(f)
        else:
            hidden += 1
    return kept, hidden


def plan_inline(findings: Iterable[Finding], diff: Diff, cfg: ReviewConfig) -> dict[str, Placement]:
    """fingerprint -> placement for every finding, in ranked order; over `max_comments_per_file` on one
    file, the rest go to the summary (the most severe are kept: findings arrive ranked)."""
    per_file: Counter[str] = Counter()
    cap = cfg.max_comments_per_file
    out: dict[str, Placement] = {}
    for f in findings:
        where = placement(f, diff, cfg.filter_mode)
        if where != "summary" and cap:
            per_file[f.path] += 1
            if per_file[f.path] > cap:
                where = "summary"
        out.setdefault(f.fingerprint, where)
    return out
