"""Pick a Sandbox backend by name; docker's SDK is imported only when docker is chosen."""

from __future__ import annotations

import importlib
import shutil

from ..config import SandboxConfig
from ..types import PrereviewError
from .base import Sandbox

BACKENDS: dict[str, str] = {
    "bubblewrap": "bot.sandbox.bubblewrap:BubblewrapSandbox",
    "docker": "bot.sandbox.docker:DockerSandbox",
    "none": "bot.sandbox.none:NoSandbox",
}


def resolve_name(cfg: SandboxConfig) -> str:
    """`auto` means bubblewrap when `bwrap` is installed; `none` is never chosen implicitly."""
    if cfg.backend != "auto":
        return cfg.backend
    if shutil.which("bwrap"):
        return "bubblewrap"
    raise PrereviewError(
        "no sandbox for running tests: install bubblewrap (apt-get install bubblewrap), set "
        "sandbox.backend: docker, or set tests: off (sandbox.backend: none runs them unisolated)"
    )


def create(cfg: SandboxConfig) -> Sandbox:
    name = resolve_name(cfg)
    target = BACKENDS.get(name)
    if target is None:
        raise PrereviewError(f"unknown sandbox backend '{name}'; use one of auto, {', '.join(BACKENDS)}")
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)(cfg)  # type: ignore[no-any-return]
