"""What every entry point shares: config from the base revision, the model, the pipeline, the exit code."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from . import config as config_mod
from . import git, merge, redact, review, scanners, sizecap, verify
from .config import Config
from .diff import parse as parse_diff
from .models import Model
from .models.registry import create
from .progress import Progress, Quiet
from .types import ChangeRequest, Review, severity_rank


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
    """Creates the model on first use, so a change with nothing to review loads nothing."""

    def __init__(self, cfg: Config, progress: Progress) -> None:
        self._cfg, self._progress = cfg, progress
        self._model: Model | None = None

    def __call__(self) -> Model:
        if self._model is None:
            self._model = create(self._cfg.model, self._progress.message)
        return self._model


def review_change(
    change: ChangeRequest, cfg: Config, *, progress: Progress | None = None, model: LazyModel | None = None
) -> Review:
    t0 = time.monotonic()  # stats.seconds_total: the whole review, redaction, scanners and tests included
    progress = progress or Quiet()
    repo = change.workdir
    cap = cfg.review.max_file_bytes

    # Oversized files are left out before anything reads them (scanners, redaction, prompts).
    def head_sizes(paths: list[str]) -> dict[str, int]:
        return git.sizes(repo, change.head_sha, paths) if repo is not None else {}

    diff_text, capped = sizecap.cap(change.diff_text, head_sizes, cap)
    change = replace(change, diff_text=diff_text)
    too_big = {s.path for s in capped}

    def show_head(path: str) -> str | None:
        return git.show(repo, change.head_sha, path) if repo is not None else None

    def show_base(path: str) -> str | None:
        return git.show(repo, change.base_sha, path) if repo is not None else None

    read_head = sizecap.reader(show_head, cap, too_big)
    read_base = sizecap.reader(show_base, cap, set())

    # Secrets are masked before any prompt and in the output; scanners see the real text to find them.
    lazy = model or LazyModel(cfg, progress)
    redactor = redact.for_change(change, read_head, [f.path for f in parse_diff(change.diff_text).files])
    scan = scanners.Scan(cfg.scanners, read_head, read_base, mask=redactor.finding)
    safe_change, safe_read = redactor.change(change), redactor.reader(read_head)
    result = review.run(
        safe_change, cfg, model_factory=lazy, read_head=safe_read, progress=progress, extra_findings=scan
    )
    result = merge.after_model(result, safe_change.diff_text, cfg, lazy, safe_read)
    # Optional: the project's tests at base/head (broken tests become findings) and verified patches.
    result = verify.after_review(result, safe_change, cfg, lazy, progress, read_for_prompt=safe_read)
    result = replace(
        result,
        notes=change.notes + result.notes + scan.notes,
        coverage=replace(result.coverage, skipped=result.coverage.skipped + tuple(capped)),
        stats=replace(result.stats, files=result.stats.files + len(capped)),
    )
    result = redactor.review(result)
    return replace(result, stats=replace(result.stats, seconds_total=round(time.monotonic() - t0, 3)))


def exit_code(review_: Review, fail_level: str) -> int:
    if fail_level == "none":
        return 0
    floor = severity_rank(fail_level)
    return 1 if any(severity_rank(f.severity) >= floor for f in review_.findings) else 0
