"""A repository's `.prereview.yml` (as at the PR's base) merged over the server's config.

The same merge as the CLI's `runner.load_config`, except for what repository content must never decide
on a shared server: the `server` section (API URLs, git URLs, bots), the model (name or path, backend,
endpoint, the variable holding its key), the sandbox (backend `none`, host paths, limits), programs the
server runs (`scanners.semgrep`) and the unsafe `github.allow_tests_on_pull_request_target`. Those keys
are dropped with a log line naming the key (never its value). Budgets paid in the server's time may be
lowered, not raised, and `tests: off` on either side wins.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .. import config as config_mod
from ..config import CONFIG_FILE, Config
from ..types import PrereviewError

log = logging.getLogger("prereview.config")

# dotted key (or section) -> why only the server's own config may set it
SERVER_ONLY: dict[str, str] = {
    "server": "API and git URLs, queue, bots",
    "model": "the model, its path or URL and its key",
    "sandbox": "the sandbox that contains the repository's tests",
    "scanners.semgrep": "a program the server runs",
    "github.allow_tests_on_pull_request_target": "runs fork code with secrets",
    "tests.python": "an interpreter the server runs on its host",
    "tests.wheels_only": "whether dependency builds may run code on the server's host",
}
AT_MOST_SERVER = (
    "patches.candidates",
    "patches.budget_seconds",
    "patches.agent_steps",
    "scanners.timeout",
    "review.max_new_tokens",
    "tests.budget_seconds",
    "tests.build_timeout",
    "behaviour.budget_seconds",
    "behaviour.call_timeout",
    "behaviour.max_calls",
    "behaviour.max_traced_calls",
    "behaviour.wrapped_inputs",
    "behaviour.edge_calls",
    "behaviour.outer_calls",
)


def _leaves(data: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _leaves(value, dotted + ".")  # an empty section sets nothing
        else:
            yield dotted


def _get(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj.model_dump() if hasattr(obj, "model_dump") else obj


def _server_only(dotted: str) -> str | None:
    parts = dotted.split(".")
    for n in range(1, len(parts) + 1):
        why = SERVER_ONLY.get(".".join(parts[:n]))
        if why is not None:
            return why
    return None


def _kept(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if _server_only(dotted) is None:
            out[key] = _kept(value, dotted + ".") if isinstance(value, Mapping) else value
    return out


def merged(server: Config, data: Mapping[str, Any], source: str) -> Config:
    """`data` (the repository's parsed `.prereview.yml`) over `server`; bad keys or values raise one line
    (except inside what is ignored anyway, e.g. a model section meant for the CLI)."""
    for dotted in ignored(data):
        why = _server_only(dotted)
        log.warning("%s: ignored '%s' (%s: only the server's config sets it)", source, dotted, why)
    kept = _kept(data)
    repo = config_mod.build(kept, source=source, env={})  # validates the file on its own first
    out = server.model_dump()
    for dotted in _leaves(kept):
        value = _get(repo, dotted)
        if dotted in AT_MOST_SERVER and value > _get(server, dotted):
            log.warning("%s: '%s' capped at the server's %s", source, dotted, _get(server, dotted))
            continue
        config_mod.set_dotted(out, dotted, value)
    if not (server.tests.enabled and repo.tests.enabled):
        out["tests"] = "off"
    return Config.model_validate(out)


def ignored(data: Mapping[str, Any]) -> list[str]:
    """The keys of `data` that `merged` drops (for a note on the PR)."""
    return [d for d in _leaves(data) if _server_only(d) is not None]


def load(server: Config, read: Callable[[], str | None], base_sha: str) -> tuple[Config, tuple[str, ...]]:
    """The config for a job on a PR whose base is `base_sha`, and notes for its review.

    `read` gives the repository's `.prereview.yml` at the base (None: there is none) or raises
    PrereviewError when the repository cannot be reached: then the server's config, with a note.
    """
    source = f"{CONFIG_FILE} (at base {base_sha[:12]})"
    try:
        text = read()
    except PrereviewError as exc:
        log.warning("%s: %s; using the server's config", source, exc)
        note = f"Could not read the repository's `{CONFIG_FILE}` ({exc}); used the server's config."
        return server, (note,)
    if text is None:
        return server, ()
    data = config_mod.parse_yaml(text, source)
    dropped = ignored(data)
    notes: tuple[str, ...] = ()
    if dropped:
        keys = ", ".join(f"`{d}`" for d in dropped)
        notes = (f"`{CONFIG_FILE}` sets {keys}, which only the server's config may set: ignored.",)
    return merged(server, data, source), notes
