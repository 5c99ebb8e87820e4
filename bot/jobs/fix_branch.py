"""`/fix` in branch mode: the verified fix as one commit on top of the PR's head, for a branch of its own.

The commit is built with a temporary index (the checkout's working tree, which the sandboxed tests used,
is not touched) and is deterministic: same fix on the same head -> same commit id, so a retried job
pushes nothing new.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from ..types import PrereviewError

BOT_NAME, BOT_EMAIL = "prereview", "prereview@users.noreply.invalid"


def branch_name(number: int, head_sha: str) -> str:
    return f"prereview/fix-{number}-{head_sha[:7]}"


def _git(repo: Path, *args: str, env: dict[str, str] | None = None, data: str | None = None) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, input=data, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        detail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        raise PrereviewError(f"cannot commit the fix (git {args[0]}): {detail[0]}")
    return proc.stdout.strip()


def commit(repo: Path, head_sha: str, files: dict[str, str], message: str) -> str:
    """The id of a commit whose parent is `head_sha` and whose tree is head's with `files` replaced."""
    stamp = _git(repo, "log", "-1", "--format=%ct", head_sha) + " +0000"
    with tempfile.TemporaryDirectory(prefix="prereview-index-") as tmp:
        env = {
            **os.environ,
            "GIT_INDEX_FILE": str(Path(tmp) / "index"),
            "GIT_AUTHOR_NAME": BOT_NAME,
            "GIT_AUTHOR_EMAIL": BOT_EMAIL,
            "GIT_COMMITTER_NAME": BOT_NAME,
            "GIT_COMMITTER_EMAIL": BOT_EMAIL,
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_DATE": stamp,
        }
        _git(repo, "read-tree", head_sha, env=env)
        for path, text in sorted(files.items()):
            entry = _git(repo, "ls-tree", head_sha, "--", path)
            mode = entry.split()[0] if entry else "100644"
            if mode not in ("100644", "100755"):  # a symlink or submodule at head: never "fixed" in place
                raise PrereviewError(f"cannot commit the fix: {path} is not a regular file at head ({mode})")
            blob = _git(repo, "hash-object", "-w", "--stdin", "--path", path, data=text)
            _git(repo, "update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}", env=env)
        tree = _git(repo, "write-tree", env=env)
        return _git(repo, "commit-tree", tree, "-p", head_sha, "-m", message, env=env)
