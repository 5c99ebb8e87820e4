"""Deterministic finding sources beside the model: secrets, bandit, semgrep with the rules in bot/rules,
code left unreachable (unreachable.py), a `self.x` its class never defines (attributes.py), and the
safeguards a change deletes (safeguards.py, read from the diff itself)."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ... import pysyntax
from ...change.diff import Diff
from ...config import ScannersConfig
from ...pipeline.context import Background, ReviewContext
from ...types import Finding
from . import safeguards

FileReader = Callable[[str], "str | None"]

# name -> "module:function"; each function is scan(files: dict[path, text], root, cfg) -> list[Finding]
SCANNERS: dict[str, str] = {
    "secrets": "bot.findings.scanners.secrets:scan",
    "bandit": "bot.findings.scanners.bandit:scan",
    "patterns": "bot.findings.scanners.semgrep:scan",
    "unreachable": "bot.findings.scanners.unreachable:scan",  # in-process, from the AST
    "attributes": "bot.findings.scanners.attributes:scan",  # in-process, from the AST
}

# Scanners that also read the files the defaults leave out (vendored, generated, long): see selection.py.
WIDER_VIEW = ("secrets",)


class ScannerMissing(Exception):
    """The scanner's tool is not installed; the message says how to install it (shown as a note)."""


def run_json(
    name: str, argv: list[str], *, timeout: float, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run a scanner that reports JSON on stdout; no JSON at all means the tool itself failed."""
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    try:
        data = json.loads(proc.stdout or "{}")
    except json.JSONDecodeError:
        raise ScannerMissing(
            f"{name} gave no JSON (exit {proc.returncode}): {proc.stderr.strip()[:120]}"
        ) from None
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class ChangedFile:
    path: str
    head: str
    base: str | None
    added: frozenset[int]  # new-side line numbers the change adds


@dataclass(frozen=True)
class ScanResult:
    findings: tuple[Finding, ...]
    notes: tuple[str, ...]


def changed_files(
    diff: Diff, read_head: FileReader, read_base: FileReader, keep: Callable[[str], bool] = lambda p: True
) -> list[ChangedFile]:
    """The changed text files `keep` accepts, read at head (and base)."""
    out = []
    for f in diff.files:
        if f.is_binary or f.status == "deleted" or not _safe(f.path) or not keep(f.path):
            continue
        added = frozenset(ln.new_no for h in f.hunks for ln in h.lines if ln.kind == "+" and ln.new_no)
        head = read_head(f.path) if added else None
        if head is None:
            continue
        base = read_base(f.old_path) if f.status != "added" and _safe(f.old_path) else None
        out.append(ChangedFile(f.path, head, base, added))
    return out


def run(
    files: list[ChangedFile], cfg: ScannersConfig, selected: Callable[[str], bool] = lambda p: True
) -> ScanResult:
    """Every enabled scanner over the changed files; keeps only what the change introduces. The secrets
    scanner reads all `files`; the others only those `selected` accepts (pipeline/selection.py)."""
    findings: list[Finding] = []
    notes: list[str] = []
    for name, target in SCANNERS.items():
        mine = files if name in WIDER_VIEW else [f for f in files if selected(f.path)]
        if not getattr(cfg, name) or not mine:
            continue
        module, _, attr = target.partition(":")
        scan = getattr(importlib.import_module(module), attr)
        try:
            findings += introduced(scan, mine, cfg)
        except ScannerMissing as exc:
            notes.append(f"scanner '{name}' skipped: {exc}")
        except subprocess.TimeoutExpired:
            notes.append(f"scanner '{name}' skipped: it ran over {cfg.timeout:g}s; raise scanners.timeout")
    return ScanResult(tuple(findings), tuple(notes))


def introduced(
    scan: Callable[..., list[Finding]], files: list[ChangedFile], cfg: ScannersConfig
) -> list[Finding]:
    """Head findings on added lines whose (rule, code) pair did not already exist in the base version."""
    head = _scan_texts(scan, {f.path: f.head for f in files}, cfg)
    by_path = {f.path: f for f in files}
    head = [h for h in head if h.path in by_path and _touches(h, by_path[h.path].added)]
    if not head:
        return []
    bases = {f.path: f.base for f in files if f.base is not None and any(h.path == f.path for h in head)}
    old = (
        {(b.path, b.rule_id, _code(bases[b.path], b.line)) for b in _scan_texts(scan, bases, cfg)}
        if bases
        else set()
    )
    return [h for h in head if (h.path, h.rule_id, _code(by_path[h.path].head, h.line)) not in old]


def _scan_texts(
    scan: Callable[..., list[Finding]], texts: dict[str, str], cfg: ScannersConfig
) -> list[Finding]:
    with tempfile.TemporaryDirectory(prefix="prereview-scan-") as tmp:
        root = Path(tmp)
        for path, text in texts.items():
            dest = root / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(_parseable(path, text), encoding="utf-8")
        return list(scan(texts, root, cfg))


def _parseable(path: str, text: str) -> str:
    """A Python excerpt indented as a whole (a method cut out of its class) is dedented so the
    linters can parse it; line numbers stay the same."""
    if not path.endswith(".py"):
        return text
    try:
        pysyntax.parse(text)
    except SyntaxError:
        dedented = textwrap.dedent(text)
        try:
            pysyntax.parse(dedented)
        except SyntaxError:
            return text
        return dedented
    return text


def _touches(f: Finding, added: frozenset[int]) -> bool:
    return any(n in added for n in range(f.line, f.last_line + 1))


def _code(text: str, line: int) -> str:
    lines = text.splitlines()
    return " ".join(lines[line - 1].split()) if 0 < line <= len(lines) else ""


def _safe(path: str) -> bool:
    p = PurePosixPath(path)
    return bool(path) and not p.is_absolute() and ".." not in p.parts and "\x00" not in path


def relpath(root: Path, filename: str) -> str:
    """A scanner's reported filename back to the change's path."""
    return Path(os.path.realpath(filename)).relative_to(os.path.realpath(root)).as_posix()


def cwe_id(value: object) -> str | None:
    """'CWE-78', 78, 'CWE-078: OS command…' -> 'CWE-78'."""
    m = re.search(r"(\d+)", str(value or ""))
    return f"CWE-{int(m.group(1))}" if m and int(m.group(1)) > 0 else None


class ScannersStage:
    """Every enabled scanner once over all the change's files, started in the background as soon as the
    review begins (they are separate processes); the safeguards check reads the diff itself.

    Scanners read the real file text (to find secrets); what they report is masked like everything else.
    They look at the review's selection of files (pipeline/selection.py); the secrets scanner at a wider
    one (every file but those review.include/review.exclude leave out)."""

    name = "scanners"

    def __init__(self) -> None:
        self._pending: Background | None = None

    def prepare(self, ctx: ReviewContext) -> None:
        cfg, sel = ctx.cfg.scanners, ctx.selection()
        self._pending = Background(
            lambda: run(
                changed_files(ctx.diff, ctx.raw_head, ctx.raw_base, sel.allows_secrets), cfg, sel.allows
            ),
            "scanners",
        )

    def run(self, ctx: ReviewContext, findings: list[Finding]) -> list[Finding]:
        if self._pending is None:
            self.prepare(ctx)
        assert self._pending is not None
        result: ScanResult = self._pending.result()
        ctx.charge(self.name, self._pending)
        ctx.notes += result.notes
        found = list(result.findings)
        found += safeguards.scan(ctx.selection().diff) if ctx.cfg.scanners.safeguards else []
        return [*findings, *(ctx.mask(f) for f in found)]
