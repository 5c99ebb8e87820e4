"""What every entry point shares: config from the base revision, the model, the pipeline, the exit code.

`review_change` builds one `ReviewContext` for a change and passes it through the stage list
(`pipeline.stages.default`): redaction wraps the context once at the start (what the model and the
stages see) and the finished review once at the end (what leaves the process).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .. import config as config_mod
from ..change import git, redact, sizecap
from ..change.repo_secrets import RepoSecrets
from ..config import Config
from ..models import Model
from ..models.registry import create
from ..progress import Progress, Quiet
from ..types import ChangeRequest, Review, Skipped, severity_rank
from .checked import checked
from .context import Background, FileReader, ModelFactory, ReviewContext, assemble
from .stage import Prepares, Stage


def load_config(
    repo: Path | None,
    base: str | None,
    *,
    config_file: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> Config:
    """--config FILE wins; else `.prereview.yml` as it is at the BASE revision (never the change's own)."""
    if config_file is not None:
        data, source = config_mod.load_file(config_file), str(config_file)
    elif repo is not None and base is not None:
        text = git.show(repo, base, config_mod.CONFIG_FILE)
        source = f"{config_mod.CONFIG_FILE} (at base {base[:12]})"
        data = config_mod.parse_yaml(text, source) if text is not None else {}
    else:
        data, source = {}, config_mod.CONFIG_FILE
    return config_mod.build(data, source=source, overrides=overrides, env=env)


class LazyModel:
    """Creates the model on first use, so a change with nothing to review loads nothing.

    `preload()` starts the load in the background (llama.cpp releases the GIL while it reads the file), so
    the scanners and the diff preparation overlap with it; the first call waits for it."""

    def __init__(self, cfg: Config, progress: Progress) -> None:
        self._cfg, self._progress = cfg, progress
        self._model: Model | None = None
        self._loading: Background | None = None

    def preload(self) -> None:
        if self._model is None and self._loading is None:
            self._loading = Background(lambda: create(self._cfg.model, self._progress.message), "model-load")

    def __call__(self) -> Model:
        if self._model is None:
            if self._loading is not None:
                loading, self._loading = self._loading, None
                self._model = loading.result()
            else:
                self._model = create(self._cfg.model, self._progress.message)
        return self._model


def _reader(repo: Path | None, rev: str, max_bytes: int, skip: frozenset[str] = frozenset()) -> FileReader:
    """Cached text at `rev`; None for paths in `skip` and texts over `max_bytes` (see change/sizecap.py)."""
    if repo is None:
        return lambda path: None
    return functools.cache(sizecap.reader(lambda path: git.show(repo, rev, path), max_bytes, set(skip)))


def cap_change(change: ChangeRequest, cfg: Config) -> tuple[ChangeRequest, list[Skipped]]:
    """The change without files over review.max_file_bytes (before anything reads them), and those files."""
    repo = change.workdir

    def head_sizes(paths: list[str]) -> dict[str, int]:
        return git.sizes(repo, change.head_sha, paths) if repo is not None else {}

    diff_text, capped = sizecap.cap(change.diff_text, head_sizes, cfg.review.max_file_bytes)
    return replace(change, diff_text=diff_text), capped


def build_context(
    change: ChangeRequest,
    cfg: Config,
    *,
    progress: Progress,
    model: ModelFactory,
    cache_dir: Path | None = None,
    skip: frozenset[str] = frozenset(),
) -> tuple[ReviewContext, redact.Redactor]:
    """The context the stages share, with every secret of the change masked; and the redactor that masks
    the finished review the same way. Paths in `skip` (over the size cap) read as absent."""
    cap = cfg.review.max_file_bytes
    raw_head = _reader(change.workdir, change.head_sha, cap, skip)
    raw_base = _reader(change.workdir, change.base_sha, cap)
    # The diff is parsed once, already masked; the file list it gives decides which head files are read
    # for more secrets. Should those add a value that also occurs in the diff, the diff is masked and
    # parsed again (a secret in a file's text always stays out of the prompts).
    first = redact.for_change(change, raw_head, ())
    masked = first.change(change)
    redactor = first.and_files(raw_head, [f.path for f in masked.diff.files])  # the diff is not scanned again
    safe_change = redactor.change(change).sharing_diff(masked)
    ctx = ReviewContext(
        change=safe_change,
        diff=safe_change.diff,
        cfg=cfg,
        model=model,
        progress=progress,
        read_head=functools.cache(redactor.reader(raw_head)),
        read_base=functools.cache(redactor.reader(raw_base)),
        raw_head=raw_head,
        raw_base=raw_base,
        mask=redactor.finding,
        cache_dir=cache_dir,
    )
    return ctx, redactor


# What the progress bar says while a stage runs.
STAGE_LABELS = {
    "scanners": "scanners",
    "model": "model review",
    "rank": "ranking findings",
    "merge": "checking findings",
    "tests": "running tests",
    "behaviour": "comparing behaviour",
    "patches": "verifying fixes",
    "walkthrough": "walkthrough",
}


def run_stages(ctx: ReviewContext, stages: Sequence[Stage]) -> list:
    """Every stage's optional `prepare` first (background work), then every `run`, in order."""
    for stage in stages:
        if isinstance(stage, Prepares):
            t0 = time.monotonic()
            stage.prepare(ctx)
            ctx.seconds[stage.name] = ctx.seconds.get(stage.name, 0.0) + time.monotonic() - t0
    findings: list = []
    for i, stage in enumerate(stages):
        t0 = time.monotonic()
        # The bar names what runs now (a stage may refine it, as the model does chunk by chunk).
        ctx.progress.step(i, len(stages), STAGE_LABELS.get(stage.name, stage.name))
        findings = stage.run(ctx, findings)
        ctx.seconds[stage.name] = ctx.seconds.get(stage.name, 0.0) + time.monotonic() - t0
    return findings


def review_change(
    change: ChangeRequest,
    cfg: Config,
    *,
    progress: Progress | None = None,
    model: ModelFactory | None = None,
    stages: Sequence[Stage] | None = None,
    cache_dir: Path | None = None,
) -> Review:
    from .stages import default

    t0 = time.monotonic()  # stats.seconds_total: the whole review, redaction before and after included
    progress = progress or Quiet()
    lazy = model or LazyModel(cfg, progress)
    # Oversized files leave before anything reads them: scanners, redaction, prompts.
    change, capped = cap_change(change, cfg)
    too_big = frozenset(s.path for s in capped)
    ctx, redactor = build_context(
        change, cfg, progress=progress, model=lazy, cache_dir=cache_dir, skip=too_big
    )
    ctx.started = t0
    ctx.notes[:0] = change.notes
    ctx.skipped += capped
    # code run in the sandbox may print what it read from unchanged files: those files' secrets too
    runtime = RepoSecrets(change.workdir, [change.base_sha, change.head_sha], cfg.review.max_file_bytes)
    ctx.mask_runtime = runtime.mask
    findings = run_stages(ctx, default(cfg) if stages is None else stages)
    review = runtime.review(redactor.review(assemble(ctx, findings)))
    stats = replace(
        review.stats, files=review.stats.files + len(capped), seconds_total=round(time.monotonic() - t0, 3)
    )
    return replace(review, stats=stats, checked=checked(ctx, findings))


def exit_code(review_: Review, fail_level: str) -> int:
    if fail_level == "none":
        return 0
    floor = severity_rank(fail_level)
    return 1 if any(severity_rank(f.severity) >= floor for f in review_.findings) else 0
