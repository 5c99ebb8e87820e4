"""The pipeline, top to bottom: change -> diff -> chunks -> findings -> anchored, ranked Review."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from . import analyze, context
from .config import Config
from .diff import Diff, parse
from .models import Model
from .progress import Progress, Quiet
from .types import ChangeRequest, Coverage, Finding, Review, Skipped, Stats, severity_rank

ModelFactory = Callable[[], Model]
FileReader = Callable[[str], "str | None"]


@dataclass
class _Tally:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds_model: float = 0.0
    errors: list[Skipped] = field(default_factory=list)

    def add(self, res: analyze.ChunkResult) -> None:
        if res.completion:
            self.prompt_tokens += res.completion.prompt_tokens
            self.completion_tokens += res.completion.completion_tokens
            self.seconds_model += res.completion.seconds


def run(
    change: ChangeRequest,
    cfg: Config,
    *,
    model_factory: ModelFactory,
    read_head: FileReader,
    progress: Progress | None = None,
    extra_findings: Callable[[Diff], list[Finding]] | None = None,
) -> Review:
    """Review one change. `read_head(path)` returns a file's text at the head commit (None if absent)."""
    progress = progress or Quiet()
    t0 = time.monotonic()
    diff = parse(change.diff_text)
    head_cache: dict[str, list[str] | None] = {}

    def head_lines(path: str) -> list[str] | None:
        if path not in head_cache:
            text = read_head(path)
            head_cache[path] = None if text is None else text.splitlines()
        return head_cache[path]

    files, skipped = context.select_files(diff, cfg.review, lambda p: _len(head_lines(p)))
    findings: list[Finding] = list(extra_findings(diff) if extra_findings else [])
    tally = _Tally()
    chunks: list[context.Chunk] = []
    model_name = ""
    if files:
        model = model_factory()
        model_name = model.name
        chunks = _chunks(files, cfg, model, head_lines, tally.errors)
        system = analyze.system_prompt(cfg.review.instructions)
        for i, chunk in enumerate(chunks, 1):
            progress.step(i - 1, len(chunks), f"reviewing {', '.join(chunk.paths)}")
            findings += _review_with_retry(model, chunk, system, change.title, cfg, tally)
        progress.step(len(chunks), len(chunks), "model done")
    findings = finalize(findings, diff, cfg)
    reviewed = tuple(f.path for f in files if f.path not in {s.path for s in tally.errors})
    return Review(
        base=change.base_sha,
        head=change.head_sha,
        title=change.title,
        findings=tuple(findings),
        stats=Stats(
            files=len(diff.files),
            hunks=diff.hunk_count,
            chunks=len(chunks),
            prompt_tokens=tally.prompt_tokens,
            completion_tokens=tally.completion_tokens,
            seconds_model=round(tally.seconds_model, 3),
            seconds_total=round(time.monotonic() - t0, 3),
            model=model_name,
        ),
        coverage=Coverage(reviewed=reviewed, skipped=tuple(skipped + tally.errors)),
    )


def _len(lines: list[str] | None) -> int | None:
    return None if lines is None else len(lines)


def _chunks(
    files: list,
    cfg: Config,
    model: Model,
    head_lines: Callable[[str], list[str] | None],
    too_big: list[Skipped],
) -> list:
    system_tokens = model.count_tokens(analyze.system_prompt(cfg.review.instructions))
    room = model.n_ctx - system_tokens - cfg.review.max_new_tokens - 96
    budget = min(cfg.review.chunk_tokens or 1536, room)
    sections = []
    for f in files:
        text = head_lines(f.path)
        for hunk in f.hunks:  # deletion-only hunks too: the removed lines beside the function as it is now
            for piece in context.split_hunk(hunk, max_lines=120):
                rendered = context.render_section(f.path, piece, text)
                tokens = model.count_tokens(rendered)
                if tokens > room:  # a single enormous line: show the hunk without extra context
                    rendered = context.render_section(f.path, piece, None)
                    tokens = model.count_tokens(rendered)
                if tokens > room:  # still cannot fit: say so in coverage rather than send a doomed request
                    at = next((ln.new_no for ln in piece.added), piece.new_start)
                    why = f"the change at line {at} is larger than the model context"
                    too_big.append(Skipped(f.path, f"not reviewed: {why} ({tokens} > {room} tokens)"))
                    continue
                sections.append(context.Section(f.path, piece, rendered, tokens))
    return context.pack(sections, budget)


def _review_with_retry(
    model: Model, chunk: context.Chunk, system: str, title: str, cfg: Config, tally: _Tally
) -> list[Finding]:
    res = analyze.review_chunk(model, chunk, system=system, title=title, max_tokens=cfg.review.max_new_tokens)
    tally.add(res)
    if res.error is None:
        return list(res.findings)
    # One retry with a smaller request: half the chunk each, or fewer findings for a single hunk.
    if len(chunk.sections) > 1:
        mid = len(chunk.sections) // 2
        parts = [context.Chunk(chunk.sections[:mid]), context.Chunk(chunk.sections[mid:])]
    else:
        parts = [chunk]
    out: list[Finding] = []
    for part in parts:
        retry = analyze.review_chunk(
            model, part, system=system, title=title, max_tokens=cfg.review.max_new_tokens, max_items=2
        )
        tally.add(retry)
        if retry.error is None:
            out += retry.findings
        else:
            tally.errors += [Skipped(p, f"not reviewed: {retry.error}") for p in part.paths]
    return out


def finalize(findings: list[Finding], diff: Diff, cfg: Config) -> list[Finding]:
    """Mark in/out of diff, drop below min_severity, dedupe by fingerprint, rank, cap."""
    floor = severity_rank(cfg.review.min_severity)
    out: dict[str, Finding] = {}
    for f in findings:
        f = f.with_(in_diff=diff.has_line(f.path, f.line, f.side))
        if severity_rank(f.severity) < floor:
            continue
        prev = out.get(f.fingerprint)
        if prev is None or severity_rank(f.severity) > severity_rank(prev.severity):
            out[f.fingerprint] = f
    ranked = sorted(out.values(), key=lambda f: (-severity_rank(f.severity), not f.in_diff, f.path, f.line))
    return ranked[: cfg.review.max_findings]
