"""Token budgeting and chunking: which files are reviewed, and hunks packed into model-sized chunks."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..change.diff import Diff, FileDiff, Hunk
from ..config import ReviewConfig
from ..types import Skipped

# Skipped unless review.skip_defaults is false: they are not written by people, or not code.
DEFAULT_SKIP: dict[str, tuple[str, ...]] = {
    "lock file": (
        "*.lock",
        "package-lock.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "poetry.lock",
        "Cargo.lock",
        "go.sum",
        "composer.lock",
        "Gemfile.lock",
        "uv.lock",
        "Pipfile.lock",
    ),
    "vendored": (
        "vendor/*",
        "*/vendor/*",
        "third_party/*",
        "*/third_party/*",
        "node_modules/*",
        "*/node_modules/*",
    ),
    "generated": (
        "*_pb2.py",
        "*_pb2_grpc.py",
        "*.pb.go",
        "*.generated.*",
        "*.min.js",
        "*.min.css",
        "*.map",
        "dist/*",
        "build/*",
    ),
    "not code": (
        "*.svg",
        "*.png",
        "*.jpg",
        "*.jpeg",
        "*.gif",
        "*.ico",
        "*.pdf",
        "*.zip",
        "*.gz",
        "*.woff*",
        "*.ttf",
        "*.gguf",
        "*.bin",
    ),
}


# The skip reasons that are the project's own choice (the rest are defaults, sizes and file kinds).
NOT_INCLUDED = "not in review.include"
EXCLUDED = "matches review.exclude"
USER_RULES = (NOT_INCLUDED, EXCLUDED)
TOO_LARGE = "file too large"  # a limit of the model's prompt: the evidence stages still read the file


@dataclass(frozen=True)
class Section:
    """One hunk of one file, rendered for the prompt, with the lines it covers."""

    path: str
    hunk: Hunk
    text: str
    tokens: int


@dataclass(frozen=True)
class Chunk:
    sections: tuple[Section, ...]

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.path for s in self.sections))

    @property
    def tokens(self) -> int:
        return sum(s.tokens for s in self.sections)

    def render(self) -> str:
        parts, last = [], None
        for s in self.sections:
            if s.path != last:
                parts.append(f"File: {s.path}")
                last = s.path
            parts.append(s.text)
        return "\n".join(parts)


def select_files(
    diff: Diff, cfg: ReviewConfig, head_lines: Callable[[str], int | None]
) -> tuple[list[FileDiff], list[Skipped]]:
    """Files to review and the ones skipped, each with its reason."""
    keep: list[FileDiff] = []
    skipped: list[Skipped] = []
    for f in diff.files:
        reason = _skip_reason(f, cfg, head_lines)
        if reason:
            skipped.append(Skipped(f.path, reason))
        else:
            keep.append(f)
    return keep, skipped


def _skip_reason(f: FileDiff, cfg: ReviewConfig, head_lines: Callable[[str], int | None]) -> str | None:
    if f.is_binary:
        return "binary file"
    if f.hunks and all(ln.text.startswith("Subproject commit ") for h in f.hunks for ln in h.lines):
        return "submodule"
    if f.status == "deleted":
        return "file deleted"
    if cfg.include and not _match(f.path, cfg.include):
        return NOT_INCLUDED
    if _match(f.path, cfg.exclude):
        return EXCLUDED
    if cfg.skip_defaults:
        for reason, globs in DEFAULT_SKIP.items():
            if _match(f.path, globs):
                return reason
    if not f.hunks:
        return "no textual change (mode or rename only)"
    n = head_lines(f.path)
    if n is not None and n > cfg.max_file_lines:
        return f"{TOO_LARGE} ({n} lines > review.max_file_lines {cfg.max_file_lines})"
    return None


def _match(path: str, globs: list[str] | tuple[str, ...]) -> bool:
    name = Path(path).name
    return any(fnmatch.fnmatch(path, g) or fnmatch.fnmatch(name, g) for g in globs)


def render_section(path: str, hunk: Hunk, new_text: list[str] | None, context: int = 12) -> str:
    """A hunk with its new-side line numbers, widened with up to `context` lines of the head file
    (extended up to the enclosing def/class/function line) so the model sees the whole function."""
    rows: list[str] = []
    first = next((ln.new_no for ln in hunk.lines if ln.new_no is not None), hunk.new_start)
    last = max((ln.new_no for ln in hunk.lines if ln.new_no is not None), default=hunk.new_start)
    if new_text is not None and len(new_text) < last:  # not the text the diff was made from: no context
        new_text = None
    if new_text is not None:
        start = _enclosing_start(new_text, first, max_up=60) if first else first
        start = max(1, min(start, first - context)) if first > context else max(1, min(start, 1))
        for no in range(start, first):
            rows.append(f"{no:>5}   {new_text[no - 1]}")
    for ln in hunk.lines:
        num = f"{ln.new_no:>5}" if ln.new_no is not None else "     "
        rows.append(f"{num} {ln.kind} {ln.text}")
    if new_text is not None:
        for no in range(last + 1, min(len(new_text), last + context) + 1):
            rows.append(f"{no:>5}   {new_text[no - 1]}")
    return "\n".join(rows)


_OPENERS = ("def ", "async def ", "class ", "function ", "func ", "fn ", "public ", "private ", "static ")


def _enclosing_start(lines: list[str], first: int, max_up: int) -> int:
    """Line number of the nearest enclosing definition above `first` (heuristic, language-agnostic)."""
    for no in range(first - 1, max(0, first - max_up) - 1, -1):
        text = lines[no - 1] if no >= 1 else ""
        if text.lstrip().startswith(_OPENERS) and not text.startswith((" ", "\t")):
            return no
    return first


def pack(sections: list[Section], budget: int) -> list[Chunk]:
    """Greedy packing of sections into chunks of at most `budget` tokens (a larger section stands alone)."""
    chunks: list[Chunk] = []
    cur: list[Section] = []
    for s in sections:
        if cur and sum(x.tokens for x in cur) + s.tokens > budget:
            chunks.append(Chunk(tuple(cur)))
            cur = []
        cur.append(s)
    if cur:
        chunks.append(Chunk(tuple(cur)))
    return chunks


def split_hunk(hunk: Hunk, max_lines: int) -> list[Hunk]:
    """Split an oversized hunk into consecutive pieces of at most max_lines rows."""
    if len(hunk.lines) <= max_lines:
        return [hunk]
    pieces = []
    for i in range(0, len(hunk.lines), max_lines):
        rows = hunk.lines[i : i + max_lines]
        new_nos = [ln.new_no for ln in rows if ln.new_no is not None]
        old_nos = [ln.old_no for ln in rows if ln.old_no is not None]
        pieces.append(
            Hunk(
                old_start=old_nos[0] if old_nos else hunk.old_start,
                old_len=len(old_nos),
                new_start=new_nos[0] if new_nos else hunk.new_start,
                new_len=len(new_nos),
                section=hunk.section,
                lines=rows,
            )
        )
    return pieces
