"""Pick a Model backend by name; heavy imports happen only for the backend chosen."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from ..config import ModelConfig
from ..types import PrereviewError, install_extra
from .base import Model, ModelError

BACKENDS: dict[str, str] = {
    "llama_cpp": "bot.models.llama_cpp:from_config",
    "openai_http": "bot.models.openai_http:from_config",
    "scripted": "bot.models.scripted:from_config",
}
# What to install when a backend's module cannot be imported (its packages come with an extra).
INSTALL_HINTS: dict[str, str] = {
    "llama_cpp": f"{install_extra('model')} (or use --api-base with a llama-server)",
}


def create(cfg: ModelConfig, progress: Callable[[str], None] | None = None) -> Model:
    backend = "openai_http" if cfg.api_base and cfg.backend == "llama_cpp" else cfg.backend
    target = BACKENDS.get(backend)
    if target is None:
        raise PrereviewError(f"unknown model backend '{backend}'; use one of {', '.join(BACKENDS)}")
    module, _, attr = target.partition(":")
    try:
        factory = getattr(importlib.import_module(module), attr)
    except ImportError as exc:  # an extra not installed (llama_cpp needs numpy and llama-cpp-python)
        missing = exc.name or str(exc)
        hint = INSTALL_HINTS.get(backend, install_extra("model"))
        raise ModelError(f"the {backend} model backend needs {missing} (not installed); {hint}") from None
    return factory(cfg, progress)  # type: ignore[no-any-return]
