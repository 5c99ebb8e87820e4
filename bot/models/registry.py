"""Pick a Model backend by name; heavy imports happen only for the backend chosen."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from ..config import ModelConfig
from ..types import PrereviewError
from .base import Model

BACKENDS: dict[str, str] = {
    "llama_cpp": "bot.models.llama_cpp:from_config",
    "openai_http": "bot.models.openai_http:from_config",
    "scripted": "bot.models.scripted:from_config",
}


def create(cfg: ModelConfig, progress: Callable[[str], None] | None = None) -> Model:
    backend = "openai_http" if cfg.api_base and cfg.backend == "llama_cpp" else cfg.backend
    target = BACKENDS.get(backend)
    if target is None:
        raise PrereviewError(f"unknown model backend '{backend}'; use one of {', '.join(BACKENDS)}")
    module, _, attr = target.partition(":")
    factory = getattr(importlib.import_module(module), attr)
    return factory(cfg, progress)  # type: ignore[no-any-return]
