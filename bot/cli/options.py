"""Options every reviewing command shares: config file and model/fail-level overrides."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

FAIL_LEVELS = ["none", "info", "low", "medium", "high", "critical"]


def config_options(config_help: str, *, fail_level: bool = True) -> Callable[[Callable[..., Any]], Any]:
    """Add --config, --model, --api-base, --n-gpu-layers (and --fail-level); the command receives
    `config_file` and `overrides` (dotted config keys -> value or None) instead of the single flags."""

    def decorate(fn: Callable[..., Any]) -> Any:
        @functools.wraps(fn)
        def wrapper(
            *args: Any,
            config_file: Path | None,
            model: str | None,
            api_base: str | None,
            n_gpu_layers: int | None,
            fail_level: str | None = None,
            **kwargs: Any,
        ) -> Any:
            overrides = {
                "model.name": model,
                "model.api_base": api_base,
                "model.n_gpu_layers": n_gpu_layers,
                "review.fail_level": fail_level,
            }
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
        for option in reversed(options):
            wrapper = option(wrapper)
        return wrapper

    return decorate
