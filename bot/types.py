"""Frozen records shared by every stage of the pipeline (event -> change -> findings -> review)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from .change.diff import Diff

Severity = Literal["info", "low", "medium", "high", "critical"]
SEVERITIES: tuple[str, ...] = ("info", "low", "medium", "high", "critical")
Category = Literal["bug", "security", "performance", "maintainability", "test"]
CATEGORIES: tuple[str, ...] = ("bug", "security", "performance", "maintainability", "test")
Side = Literal["RIGHT", "LEFT"]


def severity_rank(sev: str) -> int:
    """0 for info .. 4 for critical; unknown names rank below info."""
    return SEVERITIES.index(sev) if sev in SEVERITIES else -1


class PrereviewError(Exception):
    """A failure the user can fix: printed as one line (with the fix) and exit code 2."""


def install_extra(extra: str) -> str:
    """How to add an extra. `prereview` on the package index is not ours (anyone may register that name),
    so the hint installs from prereview's source, as README's install section does."""
    return (
        f"install the {extra} extra from prereview's source (it is not on PyPI): pip install -e '.[{extra}]' "
        f"in a checkout, or 'prereview[{extra}] @ git+https://…/prereview@<COMMIT-SHA>' or a release wheel"
    )


class Throttled(PrereviewError):
    """The forge is rate-limiting or unreachable for longer than prereview waits in one go; trying again
    `retry_after` seconds from now may work (the server re-queues the job for then)."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class ChangeRef:
    """What an entry point wants reviewed, before anything is fetched."""

    forge: str  # "local" | "github" | "gitlab"
    repo: str  # local directory, "owner/name" or a GitLab project id/path
    base: str | None = None
    head: str | None = None
    number: int | None = None  # PR / MR number (iid)


@dataclass(frozen=True)
class ChangeRequest:
    """A change resolved to exact commits, with its (untrusted) metadata and unified diff."""

    ref: ChangeRef
    base_sha: str
    head_sha: str
    diff_text: str
    title: str = ""
    body: str = ""
    author: str = ""
    url: str = ""
    workdir: Path | None = None  # head checked out here, base reachable
    labels: tuple[str, ...] = ()  # PR/MR labels (review.ignore.labels)
    notes: tuple[str, ...] = ()  # what resolving the change had to assume (e.g. a root commit's base)
    # The pull request's own base when `base_sha` was moved to compare against a commit of the PR (an
    # incremental review's last reviewed head); "" = `base_sha` is that base. See `env_source`.
    pr_base_sha: str = ""

    @cached_property
    def diff(self) -> Diff:
        """`diff_text` parsed, once per value (a `replace` with another diff_text parses its own)."""
        from .change.diff import parse  # change/ builds on these records

        return parse(self.diff_text)

    def sharing_diff(self, other: ChangeRequest) -> ChangeRequest:
        """This change, with `other`'s parsed diff when both have the same diff_text (no second parse)."""
        if other.diff_text == self.diff_text and "diff" in other.__dict__:
            self.__dict__["diff"] = other.__dict__["diff"]  # the cache of a frozen value, not a field
        return self

    @property
    def env_source(self) -> EnvSource:
        """Where the host-side environment build reads dependency files: the PR's real base, never a
        commit its author made (installing runs code on the host, with network)."""
        return EnvSource(self.pr_base_sha or self.base_sha)

    def compared_with(self, sha: str) -> ChangeRequest:
        """This change with its tests and scanners comparing head against `sha` (a commit the PR author
        may have made) — the environment still built from the real base."""
        if sha == self.base_sha:
            return self
        return replace(self, base_sha=sha, pr_base_sha=self.pr_base_sha or self.base_sha)


@dataclass(frozen=True)
class EnvSource:
    """The revision a project environment (venv, node_modules, go modules …) is built from on the host.
    Its own type, so a comparison base (which may be the PR's own earlier commit) cannot be passed for it
    by mistake: only `ChangeRequest.env_source` makes one."""

    sha: str


@dataclass(frozen=True)
class Finding:
    """One review finding, anchored (or not) to a line of the change."""

    path: str
    line: int
    message: str
    severity: str = "medium"
    category: str = "bug"
    end_line: int | None = None
    side: str = "RIGHT"
    cwe: str | None = None
    source: str = "model"
    rule_id: str | None = None
    in_diff: bool = True
    suggestion: str | None = None  # replacement text for lines line..end_line
    verified: bool = False
    evidence: str | None = None  # e.g. "tests: 12 passed, was 1 failed"
    quote: str | None = None  # the code the model quoted (used for anchoring, not rendered)

    @property
    def last_line(self) -> int:
        return self.end_line if self.end_line is not None else self.line

    @property
    def fingerprint(self) -> str:
        """Stable id across re-runs: independent of line numbers moving and of wording details."""
        basis = "\x1f".join(
            [
                self.path,
                self.category,
                self.cwe or "",
                self.rule_id or "",
                self.source,
                _norm(self.quote or ""),
            ]
        )
        if not self.quote:
            basis += "\x1f" + _norm(self.message)[:80]
        return hashlib.sha256(basis.encode()).hexdigest()[:16]

    def with_(self, **changes: object) -> Finding:
        return replace(self, **changes)  # type: ignore[arg-type]


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


@dataclass(frozen=True)
class Coverage:
    reviewed: tuple[str, ...] = ()
    skipped: tuple[Skipped, ...] = ()


@dataclass(frozen=True)
class Stats:
    files: int = 0
    hunks: int = 0
    chunks: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds_model: float = 0.0
    seconds_total: float = 0.0
    model: str = ""
    stages: dict[str, float] = field(default_factory=dict)  # wall seconds per pipeline stage


@dataclass(frozen=True)
class FileNote:
    path: str
    text: str  # one line: what the change does in this file


@dataclass(frozen=True)
class RiskSpot:
    path: str
    line: int  # a line of the diff (new side)
    why: str


@dataclass(frozen=True)
class Walkthrough:
    """What a change does (`/describe`, `review.walkthrough`): a summary, one line per file, risky spots,
    and the behaviour changes observed by running base and head (when that evidence exists)."""

    summary: str
    files: tuple[FileNote, ...] = ()
    risks: tuple[RiskSpot, ...] = ()
    behaviour: tuple[str, ...] = ()
    note: str = ""  # why there is no model summary (cut, invalid, nothing fits)
    model: str = ""


@dataclass(frozen=True)
class BehaviourChange:
    """A difference between base and head on the same inputs that the change intends (info level)."""

    path: str
    line: int
    callable: str  # qualified name
    call: str  # e.g. "sieve(10)"
    before: str
    after: str
    reason: str = ""  # why it looks intended (the model's words)
    origin: str = ""  # a test id, or how the input was made: doctest, hypothesis, boundary, model


@dataclass(frozen=True)
class Review:
    """Everything a renderer or publisher needs; no model, no forge."""

    base: str
    head: str
    findings: tuple[Finding, ...]
    stats: Stats
    coverage: Coverage
    title: str = ""
    notes: tuple[str, ...] = field(default=())  # warnings shown in the summary (e.g. sandbox off)
    walkthrough: Walkthrough | None = None  # review.walkthrough: true (or /describe)
    behaviour: tuple[BehaviourChange, ...] = field(default=())  # intended behaviour changes (info)
    # sources whose earlier findings this review could not re-check (their stage did not run): "tests",
    # "behaviour"; publishers never resolve those findings' comments (bot/publish/recheck.py)
    unchecked: tuple[str, ...] = field(default=())
    checked: tuple[str, ...] = field(default=())  # what ran, in words for readers (pipeline/checked.py)

    def highest(self) -> str | None:
        ranks = [severity_rank(f.severity) for f in self.findings]
        return SEVERITIES[max(ranks)] if ranks else None


Check = Callable[[Path], tuple[bool, str]]  # a patched head tree -> (ok, evidence or reason)


@dataclass(frozen=True)
class BehaviourResult:
    """What the behaviour stage (evidence/behaviour_stage.py) leaves for the later stages and the summary."""

    compared: int  # changed callables compared at base and head (0 without a sandbox)
    ran: bool  # False: there were callables to compare and no sandbox to run them in
    recheck: Callable[[Finding], Check | None]  # a finding -> the check a patch of it must pass
