"""The model review stage: diff -> chunks -> model findings, anchored to the diff by their quotes."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from ..change.diff import Diff
from ..config import Config
from ..models import Model
from ..pipeline.context import ReviewContext, assemble
from ..progress import Progress, Quiet
from ..types import ChangeRequest, Finding, Review, Skipped
from . import analyze, chunks, rank

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


class ModelReviewStage:
    """The model reads the diff chunk by chunk and answers findings (grammar-constrained, quote-anchored)."""

    name = "model"

    def prepare(self, ctx: ReviewContext) -> None:
        # Start loading the model now when there is something for it to read (the load overlaps with the
        # scanners and the test runs that the earlier stages start).
        if ctx.selection().files and hasattr(ctx.model, "preload"):
            ctx.model.preload()

    def run(self, ctx: ReviewContext, findings: list[Finding]) -> list[Finding]:
        cfg = ctx.cfg
        selection = ctx.selection()  # the files every stage looks at, and the ones left out (coverage)
        files, skipped = list(selection.files), list(selection.skipped)
        tally = _Tally()
        found: list[Finding] = []
        sections: list[chunks.Chunk] = []
        if files:
            model = ctx.model()
            ctx.usage.model = model.name
            sections = _chunks(files, cfg, model, ctx.head_lines, tally.errors)
            system = analyze.system_prompt(cfg.review.instructions, cfg.review.language)
            for i, chunk in enumerate(sections, 1):
                ctx.progress.step(i - 1, len(sections), f"reviewing {', '.join(chunk.paths)}")
                found += _review_with_retry(model, chunk, system, ctx.change.title, cfg, tally)
            ctx.progress.step(len(sections), len(sections), "model review: all chunks read")
        ctx.usage.chunks += len(sections)
        ctx.usage.prompt_tokens += tally.prompt_tokens
        ctx.usage.completion_tokens += tally.completion_tokens
        ctx.usage.seconds_model += tally.seconds_model
        ctx.skipped += skipped + tally.errors
        errors = {s.path for s in tally.errors}
        ctx.reviewed = tuple(f.path for f in files if f.path not in errors)
        return [*findings, *found]


def run(
    change: ChangeRequest,
    cfg: Config,
    *,
    model_factory: ModelFactory,
    read_head: FileReader,
    progress: Progress | None = None,
    extra_findings: Callable[[Diff], list[Finding]] | None = None,
) -> Review:
    """The model review alone (no scanners, tests or merging), ranked: for benches and tests.

    `read_head(path)` returns a file's text at the head commit (None if absent)."""
    ctx = ReviewContext(
        change=change,
        diff=change.diff,
        cfg=cfg,
        model=model_factory,
        progress=progress or Quiet(),
        read_head=functools.cache(read_head),
        read_base=lambda p: None,
    )
    findings = list(extra_findings(ctx.diff)) if extra_findings else []
    findings = ModelReviewStage().run(ctx, findings)
    return assemble(ctx, rank.finalize(findings, ctx.diff, cfg))


def _chunks(
    files: list,
    cfg: Config,
    model: Model,
    head_lines: Callable[[str], list[str] | None],
    too_big: list[Skipped],
) -> list:
    system_tokens = model.count_tokens(analyze.system_prompt(cfg.review.instructions, cfg.review.language))
    room = model.n_ctx - system_tokens - cfg.review.max_new_tokens - 96
    budget = min(cfg.review.chunk_tokens or 1536, room)
    sections = []
    for f in files:
        text = head_lines(f.path)
        for hunk in f.hunks:  # deletion-only hunks too: the removed lines beside the function as it is now
            for piece in chunks.split_hunk(hunk, max_lines=120):
                rendered = chunks.render_section(f.path, piece, text)
                tokens = model.count_tokens(rendered)
                if tokens > room:  # a single enormous line: show the hunk without extra context
                    rendered = chunks.render_section(f.path, piece, None)
                    tokens = model.count_tokens(rendered)
                if tokens > room:  # still cannot fit: say so in coverage rather than send a doomed request
                    at = next((ln.new_no for ln in piece.added), piece.new_start)
                    why = f"the change at line {at} is larger than the model context"
                    too_big.append(Skipped(f.path, f"not reviewed: {why} ({tokens} > {room} tokens)"))
                    continue
                sections.append(chunks.Section(f.path, piece, rendered, tokens))
    return chunks.pack(sections, budget)


def _review_with_retry(
    model: Model, chunk: chunks.Chunk, system: str, title: str, cfg: Config, tally: _Tally
) -> list[Finding]:
    res = analyze.review_chunk(model, chunk, system=system, title=title, max_tokens=cfg.review.max_new_tokens)
    tally.add(res)
    if res.error is None:
        return list(res.findings)
    # One retry with a smaller request: half the chunk each, or fewer findings for a single hunk.
    if len(chunk.sections) > 1:
        mid = len(chunk.sections) // 2
        parts = [chunks.Chunk(chunk.sections[:mid]), chunks.Chunk(chunk.sections[mid:])]
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
