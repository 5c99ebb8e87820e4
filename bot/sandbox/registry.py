"""Pick a Sandbox backend by name; docker's SDK is imported only when docker is chosen."""

from __future__ import annotations

import importlib
import shutil
import tempfile
from pathlib import Path

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


def _build(cfg: SandboxConfig) -> Sandbox:
    name = resolve_name(cfg)
    target = BACKENDS.get(name)
    if target is None:
        raise PrereviewError(f"unknown sandbox backend '{name}'; use one of auto, {', '.join(BACKENDS)}")
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)(cfg)  # type: ignore[no-any-return]


def create(cfg: SandboxConfig) -> Sandbox:
    """The configured sandbox, started once with its own argv first: one that cannot start on this host
    is a PrereviewError here (each stage turns it into a note), never a failure in the middle of a run."""
    sandbox = _build(cfg)
    why = _starts(sandbox)
    if why is not None:
        raise PrereviewError(f"the {sandbox.name} sandbox cannot start on this host ({why})")
    return sandbox


def preflight(cfg: SandboxConfig) -> str | None:
    """Why the configured sandbox cannot run here (one line), or None when it starts."""
    try:
        return _starts(_build(cfg))
    except PrereviewError as exc:
        return str(exc)


def _starts(sandbox: Sandbox) -> str | None:
    check = getattr(sandbox, "preflight", None)
    if check is None:  # docker (checked at its first run) and none
        return None
    with tempfile.TemporaryDirectory(prefix="prereview-preflight-") as tmp:
        return check(Path(tmp))  # type: ignore[no-any-return]
