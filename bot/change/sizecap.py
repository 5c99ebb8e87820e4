"""A byte cap per file, applied before anything reads a change's files: scanners, redaction, prompts.

A 50 MB one-line file made secret scanning and redaction take minutes. Files whose head version, or whose
section of the diff, is larger than `review.max_file_bytes` are dropped from the diff the rest of the
pipeline sees and listed in the review's coverage with the reason; readers return None for them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..types import PrereviewError, Skipped
from .diff import parse

_SECTION = re.compile(r"^diff --git ", re.M)


def sections(diff_text: str) -> list[str]:
    """The diff split into one text per file (`diff --git` headers); [] when it has no such headers."""
    starts = [m.start() for m in _SECTION.finditer(diff_text)]
    if not starts:
        return []
    return [diff_text[a:b] for a, b in zip(starts, [*starts[1:], len(diff_text)], strict=True)]


def _path(section: str) -> str | None:
    """The file a section is about, read from its header only (never parsing a huge body)."""
    cut = re.search(r"^(@@ |Binary files |GIT binary patch)", section, re.M)
    header = section[: cut.start()] if cut else section[:4096]
    try:
        files = parse(header).files
    except PrereviewError:
        files = ()
    if files:
        return files[0].path
    m = re.match(r"diff --git a/(\S+) b/(\S+)", section)
    return m.group(2) if m else None


def cap(
    diff_text: str, head_sizes: Callable[[list[str]], dict[str, int]], max_bytes: int
) -> tuple[str, list[Skipped]]:
    """(the diff without oversized files, one Skipped per file left out). `head_sizes(paths)` gives the
    byte size of each path's head version it knows."""
    parts = sections(diff_text)
    if not parts:
        return diff_text, []
    paths = [_path(sec) for sec in parts]
    sizes = head_sizes([p for p in paths if p])
    first = _SECTION.search(diff_text)
    keep: list[str] = [diff_text[: first.start()] if first else ""]
    skipped: list[Skipped] = []
    for sec, path in zip(parts, paths, strict=True):
        size = max(len(sec.encode("utf-8", "replace")), sizes.get(path, 0) if path else 0)
        if size > max_bytes:
            why = f"not scanned or reviewed: {size:,} bytes > review.max_file_bytes ({max_bytes:,})"
            skipped.append(Skipped(path or "(unknown file)", why))
        else:
            keep.append(sec)
    return "".join(keep), skipped


def reader(read: Callable[[str], str | None], max_bytes: int, skip: set[str]) -> Callable[[str], str | None]:
    """`read` returning None for skipped paths and for texts over the cap."""

    def capped(path: str) -> str | None:
        if path in skip:
            return None
        text = read(path)
        return None if text is None or len(text) > max_bytes else text

    return capped
