"""A throwaway checkout of a PR for `/fix`: fetch base and head by commit id, token in a header only.

The token travels in `http.extraHeader` through git's environment (GIT_CONFIG_*), so it is not on a
command line, not in the URL (git prints URLs in errors) and not stored in the checkout's .git/config,
which the sandboxed tests can read.
"""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path

from ..types import PrereviewError


def auth_env(url: str, user: str, token: str | None) -> dict[str, str]:
    env = {"GIT_TERMINAL_PROMPT": "0"}
    if token and url.startswith(("https://", "http://")):
        basic = base64.b64encode(f"{user}:{token}".encode()).decode()
        env.update(
            GIT_CONFIG_COUNT="1",
            GIT_CONFIG_KEY_0="http.extraHeader",
            GIT_CONFIG_VALUE_0=f"Authorization: Basic {basic}",
        )
    return env


def checkout(
    url: str, shas: list[str], dest: Path, *, user: str, token: str | None, timeout: float = 600
) -> Path:
    """`dest` with the last of `shas` checked out and all of them reachable."""
    env = {**os.environ, **auth_env(url, user, token)}
    dest.mkdir(parents=True, exist_ok=True)
    steps = [
        ["git", "init", "-q", str(dest)],
        ["git", "-C", str(dest), "fetch", "--quiet", "--no-tags", "--depth=100", url, *shas],
        ["git", "-C", str(dest), "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", shas[-1]],
    ]
    for argv in steps:
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            detail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
            raise PrereviewError(
                f"cannot check out the PR ({argv[3] if len(argv) > 3 else argv[1]}): {detail[0]}"
            )
    return dest
