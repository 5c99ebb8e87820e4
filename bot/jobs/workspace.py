"""A review job's checkout: the PR's base and head fetched into the job's temporary directory, so the
server runs the CLI's whole pipeline on it (file context, scanners over the changed files, the project's
tests in the sandbox) instead of reviewing the diff alone.

One shallow fetch of the two commits (`checkout.checkout`, token in a header only); the repository's
`.prereview.yml` is then read from it at the base, merged over the server's config as before
(`repo_config`). What could not be done is said in the review's notes, never left out silently. A CI
job's session has its checkout and config already (`Prepared`): they are taken as they are.
"""

from __future__ import annotations

import logging
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol, runtime_checkable

from ..change import git
from ..change.checkout import DEPTH
from ..config import CONFIG_FILE, Config
from ..types import ChangeRequest, PrereviewError
from . import repo_config
from .session import ForgeSession

log = logging.getLogger("prereview.worker")

NO_CHECKOUT = (
    "Reviewed the diff alone, without the changed files' context, the scanners (secrets, bandit, semgrep) "
    "or the tests: {why}."
)
FAR_BASE = (
    "The merge base of `{base}` and `{head}` is more than {depth} commits back: the files and tests of the "
    "base were taken at the target branch's tip `{base}`."
)
TESTS_OFF = "Tests not run: `tests: off` in the config."
LAST_GONE = (
    "The last reviewed head `{last}` is no longer in this {kind}'s history (force-pushed?): the tests and "
    "scanners compared the head with the base."
)


@dataclass(frozen=True)
class Workspace:
    """The change to review (with `workdir` when checked out), its config and what to tell the reader."""

    change: ChangeRequest
    cfg: Config
    notes: tuple[str, ...]
    seconds: float  # spent fetching


@runtime_checkable
class Prepared(Protocol):
    """A session whose change is checked out already and whose config is resolved (a CI job: its own
    checkout, the CI command's config with `--config` and the command line's overrides): no clone, and
    the repository's `.prereview.yml` is not merged a second time."""

    def prepared(self, change: ChangeRequest, cfg: Config) -> Workspace: ...


def prepare(forge: ForgeSession, change: ChangeRequest, server_cfg: Config, tmp: Path) -> Workspace:
    """Check out base and head under `tmp` (the caller removes it) and resolve the job's config."""
    if isinstance(forge, Prepared):
        return forge.prepared(change, server_cfg)
    t0 = time.monotonic()
    try:
        repo = forge.clone([change.base_sha, change.head_sha], tmp / "repo")
    except PrereviewError as exc:
        seconds = time.monotonic() - t0
        log.warning("%s: %s; reviewing the diff alone", forge, exc)
        cfg, notes = repo_config.load(
            server_cfg, lambda: forge.base_file(change.base_sha, CONFIG_FILE, tmp / "config"), change.base_sha
        )
        return Workspace(change, cfg, (*notes, NO_CHECKOUT.format(why=str(exc).rstrip("."))), seconds)
    seconds = time.monotonic() - t0
    log.info("%s: fetched base and head in %.2f s", forge, seconds)
    cfg, notes = repo_config.load(
        server_cfg, lambda: git.show(repo, change.base_sha, CONFIG_FILE), change.base_sha
    )
    local, more = on_checkout(change, repo)
    if not cfg.tests.enabled:
        more = (*more, TESTS_OFF)
    return Workspace(local, cfg, notes + more, seconds)


def on_checkout(change: ChangeRequest, repo: Path) -> tuple[ChangeRequest, tuple[str, ...]]:
    """`change` reviewed from `repo`, as `prereview review` would: from the merge base (what GitHub's and
    GitLab's diffs show; GitHub's API names the target branch's tip instead) to the head, local diff."""
    try:
        base = git.git(repo, "merge-base", change.base_sha, change.head_sha).strip()
    except git.GitError:
        base = ""
    if not base:  # not within the fetched depth: the API's diff, the tip's files
        note = FAR_BASE.format(base=change.base_sha[:12], head=change.head_sha[:12], depth=DEPTH)
        return replace(change, workdir=repo), (note,)
    diff_text = git.diff(repo, base, change.head_sha)
    return replace(change, base_sha=base, diff_text=diff_text, workdir=repo), ()


def since(reviewed: ChangeRequest, last_head: str, kind: str) -> tuple[ChangeRequest, tuple[str, ...]]:
    """An incremental review's change: its tests and scanners compare the head with the last reviewed
    head (what the new commits broke or added), not with the base, whose findings the last review posted.
    That head is the PR author's commit: only the sandbox runs it; the test environment (built on the host,
    with network) still comes from the PR's real base (`ChangeRequest.env_source`).
    Without a checkout nothing changes; when that head is gone from the history, the base, with a note."""
    repo = reviewed.workdir
    if repo is None:
        return reviewed, ()
    try:
        git.git(repo, "cat-file", "-e", f"{last_head}^{{commit}}")
    except git.GitError:
        return reviewed, (LAST_GONE.format(last=last_head[:12], kind=kind),)
    return reviewed.compared_with(last_head), ()


def config_for(
    forge: ForgeSession, change: ChangeRequest, server_cfg: Config
) -> tuple[Config, tuple[str, ...]]:
    """The caller's config with the repository's `.prereview.yml` (at the base) merged over it."""

    def read() -> str | None:
        with tempfile.TemporaryDirectory(prefix="prereview-config-") as tmp:
            return forge.base_file(change.base_sha, CONFIG_FILE, Path(tmp) / "repo")

    return repo_config.load(server_cfg, read, change.base_sha)
