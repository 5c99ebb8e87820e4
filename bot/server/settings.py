"""The server's configuration: its own file plus environment, never a repository's or a comment's."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import config as config_mod
from ..config import Config

# Environment variables for the queue (the server reads them; repository config cannot set them).
QUEUE_ENV = {
    "PREREVIEW_QUEUE": "server.queue",
    "PREREVIEW_QUEUE_PATH": "server.queue_path",
    "PREREVIEW_REDIS_URL": "server.redis_url",
    "PREREVIEW_GITHUB_API_URL": "server.github_api_url",
    "PREREVIEW_GITLAB_URL": "server.gitlab_url",
    "PREREVIEW_GITEA_URL": "server.gitea_url",
    "PREREVIEW_BITBUCKET_URL": "server.bitbucket_url",
}


# Where the server's own config says nothing, it differs from the CLI's defaults here: the server's host
# holds every repository's tokens, so no dependency's build code runs on it unless its owner says so.
SERVER_DEFAULTS: dict[str, Any] = {"tests.wheels_only": True}


def load(
    config_file: Path | None, overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> Config:
    env = os.environ if env is None else env
    data = config_mod.load_file(config_file) if config_file is not None else {}
    if isinstance(data.get("tests"), bool) or data.get("tests") in ("auto", "on", "off"):  # scalar form
        data["tests"] = Config._scalar_tests(data["tests"])
    for dotted, value in SERVER_DEFAULTS.items():
        section, key = dotted.split(".")
        if isinstance(data.setdefault(section, {}), dict):
            data[section].setdefault(key, value)
    merged: dict[str, Any] = {dotted: env[var] for var, dotted in QUEUE_ENV.items() if env.get(var)}
    merged.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return config_mod.build(data, source=str(config_file or "server config"), env=env, overrides=merged)


def options_to_argv(config_file: Path | None, overrides: Mapping[str, Any]) -> list[str]:
    """The same settings as `prereview worker` arguments (for the workers `serve` starts)."""
    argv = ["--config", str(config_file)] if config_file is not None else []
    flags = {
        "server.queue": "--queue",
        "server.queue_path": "--queue-path",
        "server.redis_url": "--redis-url",
    }
    for dotted, flag in flags.items():
        if overrides.get(dotted) is not None:
            argv += [flag, str(overrides[dotted])]
    return argv
