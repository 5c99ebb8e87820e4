"""Secret redaction: find credentials in a change and mask them before any prompt, log or comment.

Two layers. `mask_patterns(text)` masks well-known token shapes (AWS, GitHub, GitLab, Slack, private
keys, …) with no state, so any text can be passed through it. A `Redactor` also masks the exact values
that detect-secrets (and those patterns) found in the change, wherever they appear later: in a model
reply, a scanner message, a quote or a suggestion.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from ..types import ChangeRequest, Finding, Review

MASK = "[REDACTED]"

# Shapes of real credentials; each match is replaced whole.
TOKEN_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)"
        ),
    ),
    ("AWS access key id", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b")),
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{40,255})\b")),
    ("GitLab token", re.compile(r"\bgl(?:pat|dt|ptt|rt|cbt|oas|soat|ffct|imt)-[A-Za-z0-9_\-]{20,}\b")),
    ("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    ("Slack webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}")),
    ("Stripe key", re.compile(r"\b[rs]k_live_[A-Za-z0-9]{16,}\b")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("OpenAI-style key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{32,}\b")),
    ("JSON web token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("URL password", re.compile(r"(?<=://)[^\s/:@'\"]{1,64}:[^\s/@'\"]{3,128}(?=@)")),
    # AWS secret key next to its usual name (40 chars of base64)
    ("AWS secret key", re.compile(r"(?i)(?<=aws_secret_access_key)(\s*[=:]\s*['\"]?)[A-Za-z0-9/+]{40}\b")),
)

_MIN_VALUE = 6  # shorter detect-secrets values ("ghp", "pass") would mask ordinary words


def mask_patterns(text: str) -> str:
    """Mask every substring shaped like a well-known credential."""
    for _, rx in TOKEN_PATTERNS:
        text = rx.sub(_masker, text)
    return text


def _masker(m: re.Match[str]) -> str:
    if m.re.groups:  # keep the separator captured before the value
        return m.group(1) + MASK
    pieces = m.group(0).split("\n")
    if len(pieces) == 1:
        return MASK
    # a multi-line key block: one mask per line, so line numbers (and diff markers) stay where they were
    return "\n".join(
        MASK if i == 0 else (p[:1] if p[:1] in "+- " else "") + MASK for i, p in enumerate(pieces)
    )


def pattern_hits(text: str) -> list[tuple[str, int, str]]:
    """(kind, 1-based line number, value) of each credential-shaped substring in text."""
    hits = []
    for kind, rx in TOKEN_PATTERNS:
        for m in rx.finditer(text):
            value = m.group(0)[len(m.group(1)) :] if rx.groups else m.group(0)
            hits.append((kind, text.count("\n", 0, m.start()) + 1, value))
    return hits


@dataclass(frozen=True)
class Redactor:
    """Masks known token shapes plus the exact secret values found in one change."""

    values: frozenset[str] = frozenset()
    public: tuple[str, ...] = ()  # the change's file paths: a value inside one is no secret

    def mask(self, text: str) -> str:
        text = mask_patterns(text)  # first: whole key blocks, before a value could split them
        for v in sorted(self.values, key=len, reverse=True):
            text = text.replace(v, MASK)
        return text

    def mask_opt(self, text: str | None) -> str | None:
        return None if text is None else self.mask(text)

    def change(self, change: ChangeRequest) -> ChangeRequest:
        return replace(
            change,
            diff_text=self.mask(change.diff_text),
            title=self.mask(change.title),
            body=self.mask(change.body),
        )

    def and_files(self, read: Callable[[str], str | None], paths: Iterable[str]) -> Redactor:
        """This redactor plus the secrets in these files' text (what `for_change` would find with them)."""
        texts = [t for t in (read(p) for p in paths) if t]
        found = secret_values(texts, self.public)
        return Redactor(self.values | found, self.public) if texts else self

    def reader(self, read: Callable[[str], str | None]) -> Callable[[str], str | None]:
        return lambda path: self.mask_opt(read(path))

    def finding(self, f: Finding) -> Finding:
        return f.with_(
            message=self.mask(f.message),
            quote=self.mask_opt(f.quote),
            suggestion=self.mask_opt(f.suggestion),
            evidence=self.mask_opt(f.evidence),
        )

    def review(self, r: Review) -> Review:
        return replace(
            r,
            title=self.mask(r.title),
            findings=tuple(self.finding(f) for f in r.findings),
            notes=tuple(self.mask(n) for n in r.notes),
            behaviour=tuple(
                replace(
                    b,
                    call=self.mask(b.call),
                    before=self.mask(b.before),
                    after=self.mask(b.after),
                    reason=self.mask(b.reason),
                )
                for b in r.behaviour
            ),
        )


def secret_values(texts: Iterable[str], public: Iterable[str] = ()) -> frozenset[str]:
    """Exact secret values in these texts: token shapes, plus detect-secrets when it is installed. A value
    found inside one of the `public` strings (the change's file paths) is left out: the pull request shows
    it to everyone already, and masking it renames the file (flask's test `SECRET_KEY="config"` turned
    `tests/test_config.py` into a path that does not exist, and the review crashed)."""
    found: set[str] = set()
    for text in texts:
        found.update(v for _, _, v in pattern_hits(text))
        found.update(v for _, _, v in detect_secrets_hits(text))
    shown = tuple(public)
    return frozenset(
        v
        for v in (f.strip() for f in found)
        if len(v) >= _MIN_VALUE and not _HEADER.match(v) and not any(v in p for p in shown)
    )


_PATH_LINE = re.compile(
    r"^(?:diff --git a/(.*) b/(.*)|(?:---|\+\+\+) [ab]/(.*)|(?:rename|copy) (?:from|to) (.*))$", re.M
)


def paths_in(diff_text: str) -> tuple[str, ...]:
    """The file paths a unified diff's headers name."""
    return tuple(dict.fromkeys(p for m in _PATH_LINE.finditer(diff_text) for p in m.groups() if p))


_HEADER = re.compile(r"^-*BEGIN [A-Z0-9 ]*PRIVATE KEY")  # detect-secrets reports the PEM header as the value


def detect_secrets_hits(text: str) -> list[tuple[str, int, str]]:
    """(type, line, value) from detect-secrets with its default plugins and filters; [] when absent."""
    try:
        from detect_secrets.core.scan import _process_line_based_plugins  # type: ignore[attr-defined]
        from detect_secrets.settings import default_settings
    except ImportError:
        return []
    lines = text.splitlines()
    out: list[tuple[str, int, str]] = []
    with default_settings():
        for secret in _process_line_based_plugins(
            lines=list(enumerate(lines, start=1)), filename="change.txt"
        ):
            if secret.secret_value:
                out.append((secret.type, secret.line_number, secret.secret_value))
    return out


def for_change(
    change: ChangeRequest, read_head: Callable[[str], str | None], paths: Iterable[str]
) -> Redactor:
    """A Redactor for every secret visible in the change: diff, metadata and the changed files' head text."""
    texts = [change.diff_text, change.title, change.body]
    texts += [t for t in (read_head(p) for p in paths) if t]
    public = paths_in(change.diff_text)
    return Redactor(secret_values(texts, public), public)
