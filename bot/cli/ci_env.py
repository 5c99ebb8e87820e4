"""What the CI install steps (action.yml, the GitLab template, the image) tell a reviewing command.

`PREREVIEW_SANDBOX_OFF=REASON` (written by scripts/ci/sandbox.sh when bubblewrap cannot run on the
runner), or a sandbox that cannot start with its own argv here (a masked /proc in a Docker executor, a
`container:` job, a Kubernetes runner): the project's tests, the behaviour checks and fix verification
are turned off, and the review says so in one note, instead of failing inside a sandbox that cannot start.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path

from ..config import Config, SandboxConfig
from ..sandbox import preflight

SANDBOX_OFF = "PREREVIEW_SANDBOX_OFF"


def sandbox_off(
    cfg: Config, env: Mapping[str, str], check: Callable[[SandboxConfig], str | None] = preflight
) -> tuple[Config, str | None]:
    """The config with every sandboxed stage off and the review note, when the runner has no working
    sandbox (the install step said so, or the sandbox fails to start with the argv its runs use)."""
    if not cfg.tests.enabled and not cfg.behaviour.enabled:
        return cfg, None
    reason = " ".join(env.get(SANDBOX_OFF, "").split())
    if not reason and cfg.sandbox.backend in ("auto", "bubblewrap"):
        reason = " ".join((check(cfg.sandbox) or "").split())
    if not reason:
        return cfg, None
    cfg = cfg.model_copy(
        update={
            "tests": cfg.tests.model_copy(update={"enabled": False}),
            "sandbox": cfg.sandbox.model_copy(update={"backend": "none"}),
            "behaviour": cfg.behaviour.model_copy(update={"enabled": False}),
        }
    )
    return cfg, (
        f"Sandbox off on this runner: {reason.rstrip('.')}. The project's tests, the behaviour checks and "
        "fix verification did not run."
    )


def trust_checkout(path: Path | None, environ: MutableMapping[str, str] | None = None) -> str | None:
    """The CI job's own checkout, owned by another user (a `container:` job, a Docker executor that cloned
    as root): git refuses it ("dubious ownership") and the review would silently run from the API alone.
    Trusted for this process's git calls only (`safe.directory`, as actions/checkout does, through
    GIT_CONFIG_COUNT, which git reads as command-line config). Returns the log line, or None."""
    environ = os.environ if environ is None else environ
    if path is None or not path.exists() or path.stat().st_uid == os.geteuid():
        return None
    n = int(environ.get("GIT_CONFIG_COUNT", "0") or 0)
    environ[f"GIT_CONFIG_KEY_{n}"] = "safe.directory"
    environ[f"GIT_CONFIG_VALUE_{n}"] = str(path)
    environ["GIT_CONFIG_COUNT"] = str(n + 1)
    return f"the checkout {path} belongs to another user: trusted for git (safe.directory) in this run"
