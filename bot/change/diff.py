"""Unified diff parsing (unidiff) into files, hunks and numbered lines, plus line look-ups."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from ..types import PrereviewError


@dataclass(frozen=True)
class Line:
    kind: str  # "+", "-" or " "
    old_no: int | None
    new_no: int | None
    text: str  # without the newline (and without a CR of a CRLF file)


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    section: str  # git's function heading after @@ ... @@
    lines: tuple[Line, ...]

    @property
    def added(self) -> tuple[Line, ...]:
        return tuple(ln for ln in self.lines if ln.kind == "+")

    @property
    def deletion_only(self) -> bool:
        return not any(ln.kind == "+" for ln in self.lines)

    @property
    def header(self) -> str:
        return (
            f"@@ -{self.old_start},{self.old_len} +{self.new_start},{self.new_len} @@ {self.section}".rstrip()
        )


@dataclass(frozen=True)
class FileDiff:
    path: str  # new path ("" never: deleted files keep their old path here)
    old_path: str
    status: str  # "added" | "deleted" | "modified" | "renamed"
    is_binary: bool
    hunks: tuple[Hunk, ...]

    @cached_property
    def by_new(self) -> dict[int, Line]:
        return {ln.new_no: ln for h in self.hunks for ln in h.lines if ln.new_no is not None}

    @cached_property
    def by_old(self) -> dict[int, Line]:
        return {
            ln.old_no: ln for h in self.hunks for ln in h.lines if ln.old_no is not None and ln.kind == "-"
        }

    @property
    def changed_lines(self) -> int:
        return sum(1 for h in self.hunks for ln in h.lines if ln.kind != " ")


@dataclass(frozen=True)
class Diff:
    files: tuple[FileDiff, ...]

    def file(self, path: str) -> FileDiff | None:
        return next((f for f in self.files if f.path == path), None)

    def has_line(self, path: str, line: int, side: str = "RIGHT") -> bool:
        """True when (path, line, side) is a line a review comment may sit on (inside a hunk)."""
        f = self.file(path)
        if f is None:
            return False
        return line in (f.by_new if side == "RIGHT" else f.by_old)

    @property
    def hunk_count(self) -> int:
        return sum(len(f.hunks) for f in self.files)


def _lines_keep_cr(text: str) -> list[str]:
    # str.splitlines() would also split on a lone CR or form feed inside a CRLF file's content.
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1] + "\n")
    return out


def parse(diff_text: str) -> Diff:
    """Parse `git diff` output. Raises PrereviewError for text that is not a unified diff."""
    if not diff_text.strip():
        return Diff(files=())
    try:
        patch = PatchSet(_lines_keep_cr(diff_text))
    except UnidiffParseError as exc:
        raise PrereviewError(f"could not parse the diff ({exc}); pass output of `git diff`") from exc
    files = []
    for pf in patch:
        status = (
            "added"
            if pf.is_added_file
            else "deleted"
            if pf.is_removed_file
            else "renamed"
            if pf.is_rename
            else "modified"
        )
        hunks = tuple(
            Hunk(
                old_start=h.source_start,
                old_len=h.source_length,
                new_start=h.target_start,
                new_len=h.target_length,
                section=(h.section_header or "").strip(),
                lines=tuple(
                    Line(
                        kind=ln.line_type,
                        old_no=ln.source_line_no,
                        new_no=ln.target_line_no,
                        text=ln.value.rstrip("\n").removesuffix("\r"),
                    )
                    for ln in h
                    if ln.line_type in ("+", "-", " ")
                ),
            )
            for h in pf
        )
        path = _strip_prefix(pf.target_file if not pf.is_removed_file else pf.source_file)
        old_path = _strip_prefix(pf.source_file if not pf.is_added_file else pf.target_file)
        files.append(FileDiff(path, old_path, status, bool(pf.is_binary_file), hunks))
    return Diff(files=tuple(files))


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote(p: str) -> str:
    """Undo git's C-style quoting of odd file names ("a/tab\\there.py", octal UTF-8 bytes)."""
    if len(p) < 2 or not (p.startswith('"') and p.endswith('"')):
        return p
    out, i, body = bytearray(), 0, p[1:-1]
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            octal = body[i + 1 : i + 4]
            if len(octal) == 3 and all(ch in "01234567" for ch in octal):
                out.append(int(octal, 8) & 0xFF)
                i += 4
                continue
            out += bytes([_ESCAPES[body[i + 1]]]) if body[i + 1] in _ESCAPES else body[i + 1].encode()
            i += 2
            continue
        out += c.encode("utf-8")
        i += 1
    return out.decode("utf-8", "replace")


def _strip_prefix(p: str) -> str:
    p = _unquote(p)
    for pre in ("a/", "b/"):
        if p.startswith(pre):
            return p[len(pre) :]
    return p


def render_hunk(f: FileDiff, hunk: Hunk) -> str:
    """A hunk as a small model reads it best: new-side line numbers, a marker column, the code."""
    rows = [hunk.header]
    for ln in hunk.lines:
        num = f"{ln.new_no:>5}" if ln.new_no is not None else "     "
        rows.append(f"{num} {ln.kind} {ln.text}")
    return "\n".join(rows)


def edit_at(f: FileDiff, line: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The change's edit at new-side `line`: (removed lines, added lines) of the run of changed lines that
    holds the line, or that starts right below it (code deleted there). ((), ()) when the change
    replaced or removed nothing there (an addition only, or a line outside the diff)."""
    for h in f.hunks:
        idx = next((i for i, ln in enumerate(h.lines) if ln.new_no == line), None)
        if idx is None:
            continue
        if h.lines[idx].kind == " ":
            idx += 1  # a context line: the edit that starts right below it, if any
        if idx >= len(h.lines) or h.lines[idx].kind == " ":
            return (), ()
        lo = hi = idx
        while lo > 0 and h.lines[lo - 1].kind != " ":
            lo -= 1
        while hi + 1 < len(h.lines) and h.lines[hi + 1].kind != " ":
            hi += 1
        run = h.lines[lo : hi + 1]
        removed = tuple(ln.text for ln in run if ln.kind == "-")
        return (removed, tuple(ln.text for ln in run if ln.kind == "+")) if removed else ((), ())
    return (), ()


def to_text(selection: list[tuple[FileDiff, list[Hunk]]]) -> str:
    """Unified diff text holding the chosen hunks of each file (a file with no hunk is left out)."""
    out: list[str] = []
    for f, hunks in selection:
        if not hunks:
            continue
        src = "/dev/null" if f.status == "added" else f"a/{f.old_path}"
        dst = "/dev/null" if f.status == "deleted" else f"b/{f.path}"
        out += [f"diff --git a/{f.old_path} b/{f.path}", f"--- {src}", f"+++ {dst}"]
        for h in hunks:
            out.append(h.header)
            out += [f"{ln.kind}{ln.text}" for ln in h.lines]
    return "\n".join(out) + "\n" if out else ""


def is_test_path(path: str) -> bool:
    """Test files and test fixtures: a patch that touches one is never accepted as a fix."""
    p = Path(path)
    name = p.name
    parts = set(p.parts[:-1])
    return (
        bool(parts & {"test", "tests", "testing", "__tests__", "spec", "testdata", "python_testcases"})
        or name == "conftest.py"
        or bool(re.match(r"(test_.*\.py|.*_test\.(py|go)|.*\.(test|spec)\.[jt]sx?|.*Tests?\.java)$", name))
    )
