"""Options every reviewing command shares: config file, model/fail-level overrides and the common review
knobs (the flags reviewdog users expect: --filter-mode, --min-severity, --include/--exclude, --language,
and --quick for a local look without the slow evidence)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

FAIL_LEVELS = ["none", "info", "low", "medium", "high", "critical"]
SEVERITIES = FAIL_LEVELS[1:]
FILTER_MODES = ["added", "diff_context", "file", "nofilter"]
# --quick: the slow evidence stages off (the project's tests, behaviour comparison, verified patches)
QUICK = {"tests.enabled": False, "behaviour.enabled": False, "patches.enabled": False}


def config_options(
    config_help: str, *, fail_level: bool = True, knobs: bool = True
) -> Callable[[Callable[..., Any]], Any]:
    """Add --config, --model, --api-base, --n-gpu-layers (and --fail-level, and the review knobs); the
    command receives `config_file` and `overrides` (dotted config keys -> value or None) instead of the
    single flags. A knob given on the command line replaces the config's value."""

    def decorate(fn: Callable[..., Any]) -> Any:
        @functools.wraps(fn)
        def wrapper(
            *args: Any,
            config_file: Path | None,
            model: str | None,
            api_base: str | None,
            n_gpu_layers: int | None,
            fail_level: str | None = None,
            filter_mode: str | None = None,
            min_severity: str | None = None,
            include: tuple[str, ...] = (),
            exclude: tuple[str, ...] = (),
            language: str | None = None,
            quick: bool = False,
            **kwargs: Any,
        ) -> Any:
            overrides: dict[str, Any] = {
                "model.name": model,
                "model.api_base": api_base,
                "model.n_gpu_layers": n_gpu_layers,
                "review.fail_level": fail_level,
                "review.filter_mode": filter_mode,
                "review.min_severity": min_severity,
                "review.include": list(include) or None,
                "review.exclude": list(exclude) or None,
                "review.language": language,
            }
            if quick:
                overrides.update(QUICK)
            return fn(*args, config_file=config_file, overrides=overrides, **kwargs)

        options = [
            click.option("--config", "config_file", type=click.Path(path_type=Path), help=config_help),
            click.option(
                "--model", help="Catalog name (prereview models list), .gguf path or hf:OWNER/REPO/FILE.gguf."
            ),
            click.option(
                "--api-base",
                help="OpenAI-compatible server (llama-server, vLLM, Ollama), e.g. http://host:8080/v1.",
            ),
            click.option("--n-gpu-layers", type=int, help="Layers to offload to the GPU (default: all)."),
        ]
        if fail_level:
            options.append(
                click.option(
                    "--fail-level",
                    type=click.Choice(FAIL_LEVELS),
                    help="Exit 1 when a finding reaches this severity.",
                )
            )
        if knobs:
            options += [
                click.option(
                    "--filter-mode",
                    type=click.Choice(FILTER_MODES),
                    help="As reviewdog's: findings on added lines, on any line of a hunk (diff_context), on "
                    "changed files, or all (nofilter). Sets review.filter_mode.",
                ),
                click.option(
                    "--min-severity", type=click.Choice(SEVERITIES), help="Drop findings below this severity."
                ),
                click.option(
                    "--include",
                    multiple=True,
                    metavar="GLOB",
                    help="Review only matching files (repeatable).",
                ),
                click.option(
                    "--exclude",
                    multiple=True,
                    metavar="GLOB",
                    help="Never review matching files (repeatable; replaces review.exclude).",
                ),
                click.option(
                    "--language", metavar="CODE", help="Language of the model's messages (de, fr, zh, ja, …)."
                ),
                click.option(
                    "--quick",
                    is_flag=True,
                    help="Skip the slow evidence (project tests, behaviour comparison, verified patches).",
                ),
            ]
        for option in reversed(options):
            wrapper = option(wrapper)
        return wrapper

    return decorate
