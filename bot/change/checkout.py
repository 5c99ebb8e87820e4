"""Git over HTTPS for the server: a throwaway checkout of a PR (reviews, `/fix`), one file at a commit (the
repository's `.prereview.yml`), and pushing a branch (`/fix` in branch mode).

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

# History fetched behind base and head: enough for their merge base on most PRs, far less than a clone.
DEPTH = 100


def auth_env(url: str, user: str | None, token: str | None) -> dict[str, str]:
    """`user` None: the token as a bearer token (Bitbucket Data Center's HTTP access tokens)."""
    env = {"GIT_TERMINAL_PROMPT": "0"}
    if token and url.startswith(("https://", "http://")):
        basic = base64.b64encode(f"{user}:{token}".encode()).decode()
        env.update(
            GIT_CONFIG_COUNT="1",
            GIT_CONFIG_KEY_0="http.extraHeader",
            GIT_CONFIG_VALUE_0=f"Authorization: Bearer {token}"
            if user is None
            else f"Authorization: Basic {basic}",
        )
    return env


def _run(argv: list[str], env: dict[str, str], what: str, timeout: float) -> str:
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith(("fatal:", "error:", "!"))]
        raise PrereviewError(f"{what}: {(errors or lines or ['no output'])[-1]}")
    return proc.stdout


def checkout(
    url: str, shas: list[str], dest: Path, *, user: str | None, token: str | None, timeout: float = 600
) -> Path:
    """`dest` with the last of `shas` checked out and all of them reachable: one shallow fetch of just
    those commits (`DEPTH` commits of history behind each, full trees), no branches, no tags."""
    env = {**os.environ, **auth_env(url, user, token)}
    dest.mkdir(parents=True, exist_ok=True)
    steps = [
        ["git", "init", "-q", str(dest)],
        ["git", "-C", str(dest), "fetch", "--quiet", "--no-tags", f"--depth={DEPTH}", url, *shas],
        ["git", "-C", str(dest), "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", shas[-1]],
    ]
    for argv in steps:
        _run(argv, env, f"cannot check out the PR ({argv[3] if len(argv) > 3 else argv[1]})", timeout)
    return dest


def read_file(
    url: str, sha: str, path: str, dest: Path, *, user: str | None, token: str | None, timeout: float = 120
) -> str | None:
    """`path` as it is at commit `sha`, or None when it does not exist there.

    A shallow, blobless fetch of that one commit (trees only; the one blob is fetched on demand), so
    reading a config file does not download the repository. Servers without partial clone send all.
    """
    env = {**os.environ, **auth_env(url, user, token)}
    dest.mkdir(parents=True, exist_ok=True)
    g = ["git", "-C", str(dest)]
    what = f"cannot read {path} at {sha[:12]}"
    _run(["git", "init", "-q", str(dest)], env, what, timeout)
    for key, value in (
        ("remote.origin.url", url),
        ("remote.origin.promisor", "true"),
        ("remote.origin.partialclonefilter", "blob:none"),
        ("extensions.partialclone", "origin"),
    ):
        _run([*g, "config", key, value], env, what, timeout)
    fetch = [*g, "fetch", "--quiet", "--no-tags", "--depth=1", "--filter=blob:none", "origin", sha]
    _run(fetch, env, what, timeout)
    entry = _run([*g, "ls-tree", "-z", sha, "--", path], env, what, timeout).rstrip("\0")
    if not entry:
        return None
    kind, blob = entry.split("\t", 1)[0].split()[1:3]
    if kind != "blob":
        return None
    return _run([*g, "cat-file", "blob", blob], env, what, timeout)


def push(
    repo: Path, url: str, sha: str, branch: str, *, user: str | None, token: str | None, timeout: float = 300
) -> None:
    """Push commit `sha` of `repo` to a new branch `branch` at `url` (never forced: an existing branch
    with other commits is left alone and the push fails)."""
    env = {**os.environ, **auth_env(url, user, token)}
    argv = ["git", "-C", str(repo), "push", "--quiet", url, f"{sha}:refs/heads/{branch}"]
    _run(argv, env, f"cannot push branch {branch}", timeout)
