"""The package sources a date-bounded pip install can bound: those that serve upload times.

pip's `--uploaded-prior-to` (datebound.py) filters by the upload times an index serves (PEP 700); a local
source, a `file://` index or a find-links folder, serves none, and pip keeps its files whatever the bound.
Where the configuration adds one (a mirror of recent wheels on disk), its newest release wins: a 2021
flask tree rebuilt "as of its date" still got Werkzeug 3, and its tests did not import. `without_local`
gives the pip environment for the dated install with the local sources left out and every other setting
kept (the configured indexes, certificates, proxies, timeouts); the caller installs again with them when
that install fails (a package only the local source has).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from .envbase import EnvError, run_build

# the settings that name package sources: a local one among them is left out of the dated install
SOURCES = ("index-url", "extra-index-url", "find-links")
_LINE = re.compile(r"^(?P<scope>[^.\s]*)\.(?P<key>[\w-]+)='(?P<value>.*)'$")


def settings(listing: str) -> dict[str, str]:
    """`pip config list`'s settings by name (`global.timeout='60'`, `:env:.find-links='/w'`); where
    several scopes set one, the last listed (pip lists them in the order they apply) wins."""
    out: dict[str, str] = {}
    for line in listing.splitlines():
        m = _LINE.match(line.strip())
        if m:
            out[m["key"]] = m["value"]
    return out


def is_local(source: str) -> bool:
    """A file:// index or a folder: no upload times (an http(s) index may serve them)."""
    return not source.lower().startswith(("http://", "https://"))


def without_local(listing: str) -> tuple[dict[str, str | None], list[str]] | None:
    """(the environment for pip: the configuration files off and each setting given again as a PIP_
    variable, None to unset one; the local sources left out), or None when no setting names a local
    source (the install needs no change)."""
    env: dict[str, str | None] = {"PIP_CONFIG_FILE": os.devnull}
    dropped: list[str] = []
    for key, value in settings(listing).items():
        var = "PIP_" + key.upper().replace("-", "_")
        if key in SOURCES:
            kept = [s for s in value.split() if not is_local(s)]
            dropped += [s for s in value.split() if is_local(s)]
            env[var] = " ".join(kept) or None
        else:
            env[var] = value
    return (env, dropped) if dropped else None


def install(
    pip: list[str], args: list[str], d: Path, timeout: float, step: Callable[[list[str]], None] | None
) -> str:
    """The date-bounded install, with the local package sources (no upload times) left out
    where the configuration has any, else (or when that fails, given `step`) as configured; what of that
    to say before the bound's own words ("" when nothing was left out). Without `step` a failure raises:
    a local source's newest releases would undo the bound (the era tier, eratier.py)."""
    local = without_local(run_build([*pip, "config", "list"], cwd=d, timeout=timeout))
    if local is not None:
        env, dropped = local
        try:
            run_build([*pip, "install", *args], cwd=d, timeout=timeout, env=env)
            return f"from the indexes with upload times ({len(dropped)} local package source(s) left out), "
        except EnvError:
            if step is None:
                raise
    if step is None:
        run_build([*pip, "install", *args], cwd=d, timeout=timeout)
        return ""
    step(args)
    return "" if local is None else "with the local package sources too (they have no upload times), "
