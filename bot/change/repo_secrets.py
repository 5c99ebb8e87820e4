"""Secrets of the whole repository that show up in runtime text (behaviour results, test output).

The review's `Redactor` knows the secrets of the change (diff and changed files) and masks token shapes.
Code run in the sandbox can also read unchanged files — a `settings.py` with a password — and print or
return what it read, so runtime text is masked with the repository's own secret values too. Scanning a
whole repository up front would cost seconds on large ones; instead the strings of the runtime text that
could be secrets are looked up with `git grep` at base and head, and only the lines that contain one are
scanned (detect-secrets and token shapes, as for the change), each once per review.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..models.base import Completion, Message, Model, Scores
from ..types import Review
from . import redact

# Candidate strings: long runs of the characters secrets are made of, and quoted literals (with spaces).
_RUN = re.compile(r"[A-Za-z0-9_\-+/=.:@!$%^&*~#?]{6,200}")
_QUOTED = re.compile(r"""'([^'\n]{6,200})'|"([^"\n]{6,200})\"""")
MAX_CANDIDATES = 400  # per text; the rest of a huge text is masked with what is already known
MAX_LINES = 5000  # repository lines scanned per review
MAX_LINE = 2000  # longer lines (minified, data) are not scanned


def _secret_like(s: str) -> bool:
    """Worth looking up: not a plain lower-case word or identifier (those are in every file)."""
    return len(s) >= 12 or any(c.isdigit() for c in s) or not s.replace("_", "").isalpha() or s != s.lower()


class RepoSecrets:
    """`mask(text)`: text with the secret values of the repository's files (at `revs`) that occur in it."""

    def __init__(self, repo: Path | None, revs: Sequence[str], max_file_bytes: int) -> None:
        self.repo, self.revs, self.max_file_bytes = (
            repo,
            tuple(dict.fromkeys(r for r in revs if r)),
            max_file_bytes,
        )
        self.values: set[str] = set()
        self._looked_up: set[str] = set()
        self._scanned: set[str] = set()  # repository lines already scanned
        self._lock = threading.Lock()

    def mask(self, text: str) -> str:
        if not text or self.repo is None or not self.revs:
            return text
        with self._lock:
            self._learn(text)
            found = [v for v in self.values if v in text]
        for v in sorted(found, key=len, reverse=True):
            text = text.replace(v, redact.MASK)
        return text

    def _learn(self, text: str) -> None:
        cands = {m.group(0) for m in _RUN.finditer(text)}
        cands |= {a or b for a, b in _QUOTED.findall(text)}
        new = sorted(c for c in cands - self._looked_up if _secret_like(c))[:MAX_CANDIDATES]
        if not new:
            return
        self._looked_up.update(new)
        lines = [ln for ln in self._lines_with(new) if ln not in self._scanned][
            : MAX_LINES - len(self._scanned)
        ]
        if lines:
            self._scanned.update(lines)
            self.values |= redact.secret_values(["\n".join(lines)])

    def _lines_with(self, needles: list[str]) -> list[str]:
        """The lines of the files at `revs` that contain one of `needles` (fixed strings), each once: the
        secret scanners read a line at a time, so these are all they need to find a value on them."""
        assert self.repo is not None
        try:
            proc = subprocess.run(
                ["git", "-C", str(self.repo), "grep", "-h", "-I", "-F", "-f", "-", *self.revs, "--"],
                input="\n".join(needles).encode(),
                capture_output=True,
                timeout=60,
            )
        except (OSError, subprocess.SubprocessError):
            return []
        out = proc.stdout.decode("utf-8", "replace").splitlines()
        return list(dict.fromkeys(ln for ln in out if len(ln) <= MAX_LINE))

    def review(self, r: Review) -> Review:
        """The finished review masked wherever a value found in its runtime text occurs (the summary,
        inline comments and the JSON report are all made from it)."""
        values = set()
        for text in _texts(r):
            if self.mask(text) != text:
                values |= {v for v in self.values if v in text}
        return redact.Redactor(frozenset(values)).review(r) if values else r


RUNTIME_SOURCES = ("behaviour", "tests")  # findings whose text quotes what ran in the sandbox


def _texts(r: Review) -> list[str]:
    """The review's runtime text: notes (a test run's first error), findings made from runs, behaviour."""
    out = list(r.notes)
    for f in r.findings:
        if f.source in RUNTIME_SOURCES:
            out += [f.message, f.evidence or ""]
    for b in r.behaviour:
        out += [b.call, b.before, b.after, b.reason]
    return [t for t in out if t]


class MaskedPrompts:
    """A Model whose prompts and completions pass through `mask` (the judge's prompt quotes runtime text)."""

    def __init__(self, inner: Model, mask: Callable[[str], str]) -> None:
        self._inner, self._mask = inner, mask
        self.name, self.n_ctx = inner.name, inner.n_ctx

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def count_tokens(self, text: str) -> int:
        return self._inner.count_tokens(text)

    def score(self, messages: list[Message], words: list[str]) -> Scores | None:
        return self._inner.score([Message(m.role, self._mask(m.content)) for m in messages], words)

    def complete(self, messages: list[Message], **kwargs: Any) -> Completion:
        out = self._inner.complete([Message(m.role, self._mask(m.content)) for m in messages], **kwargs)
        return dataclasses.replace(out, text=self._mask(out.text))
