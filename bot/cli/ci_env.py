"""What the CI install steps (action.yml, the GitLab template, the image) tell a reviewing command.

`PREREVIEW_SANDBOX_OFF=REASON` (written by scripts/ci/sandbox.sh when bubblewrap cannot run on the
runner): the project's tests and fix verification are turned off, and the review says so in one note,
instead of every test run failing inside a sandbox that cannot start.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..config import Config

SANDBOX_OFF = "PREREVIEW_SANDBOX_OFF"


def sandbox_off(cfg: Config, env: Mapping[str, str]) -> tuple[Config, str | None]:
    """The config with tests off and the review note, when the runner has no working sandbox."""
    reason = " ".join(env.get(SANDBOX_OFF, "").split())
    if not reason or cfg.tests == "off":
        return cfg, None
    cfg = cfg.model_copy(
        update={"tests": "off", "sandbox": cfg.sandbox.model_copy(update={"backend": "none"})}
    )
    return cfg, f"Sandbox off on this runner: {reason}. The project's tests and fix verification did not run."
