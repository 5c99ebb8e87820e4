"""No isolation: the command runs as the bot's own user. Explicit opt-in only (sandbox.backend: none)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from ..config import SandboxConfig
from .base import Bind, RunResult, clean_env, run_process


class NoSandbox:
    name = "none"
    warning: str | None = (
        "tests ran WITHOUT a sandbox (sandbox.backend: none): the change's code had this machine's network "
        "and files"
    )

    bounds = "none but the timeout"

    def __init__(self, cfg: SandboxConfig) -> None:
        self.cfg = cfg

    def run(self, argv: Sequence[str], *, cwd: Path, timeout: float, binds: Sequence[Bind] = ()) -> RunResult:
        # `binds`: every host path is visible (and writable) here anyway
        # Still a clean environment and a wall-time limit: no tokens reach the tests even here.
        path = ":".join([str(Path(sys.prefix) / "bin"), "/usr/local/bin", "/usr/bin", "/bin"])
        env = clean_env(str(cwd), path)
        return run_process(
            argv, cwd=cwd, env=env, timeout=timeout, max_output=self.cfg.max_output_bytes, backend=self.name
        )
