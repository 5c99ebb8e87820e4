"""What the CI install steps (action.yml, the GitLab template, the image) tell a reviewing command.

`PREREVIEW_SANDBOX_OFF=REASON` (written by scripts/ci/sandbox.sh when bubblewrap cannot run on the
runner), or a sandbox that cannot start with its own argv here (a masked /proc in a Docker executor, a
`container:` job, a Kubernetes runner): the project's tests, the behaviour checks and fix verification
are turned off, and the review says so in one note, instead of failing inside a sandbox that cannot start.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..config import Config, SandboxConfig
from ..sandbox import preflight

SANDBOX_OFF = "PREREVIEW_SANDBOX_OFF"


def sandbox_off(
    cfg: Config, env: Mapping[str, str], check: Callable[[SandboxConfig], str | None] = preflight
) -> tuple[Config, str | None]:
    """The config with every sandboxed stage off and the review note, when the runner has no working
    sandbox (the install step said so, or the sandbox fails to start with the argv its runs use)."""
    if cfg.tests == "off" and not cfg.behaviour.enabled:
        return cfg, None
    reason = " ".join(env.get(SANDBOX_OFF, "").split())
    if not reason and cfg.sandbox.backend in ("auto", "bubblewrap"):
        reason = " ".join((check(cfg.sandbox) or "").split())
    if not reason:
        return cfg, None
    cfg = cfg.model_copy(
        update={
            "tests": "off",
            "sandbox": cfg.sandbox.model_copy(update={"backend": "none"}),
            "behaviour": cfg.behaviour.model_copy(update={"enabled": False}),
        }
    )
    return cfg, (
        f"Sandbox off on this runner: {reason.rstrip('.')}. The project's tests, the behaviour checks and "
        "fix verification did not run."
    )
