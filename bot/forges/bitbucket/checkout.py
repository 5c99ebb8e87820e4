"""The CI checkout: make sure the pull request's commits are there, and find its base."""

from __future__ import annotations

from pathlib import Path

from ...change import git
from ...progress import Progress
from ...types import PrereviewError


def _has(repo: Path, sha: str) -> bool:
    try:
        git.git(repo, "cat-file", "-e", f"{sha}^{{commit}}")
    except git.GitError:
        return False
    return True


def ensure_commits(repo: Path, target: str, head: str, progress: Progress) -> str:
    """Fetch the target and head commits when the checkout lacks them (shallow clones); return the
    merge base, which is what Bitbucket's pull request diff starts from (its EFFECTIVE diff)."""
    if not target or not head:
        raise PrereviewError("the pull request has no source/target commit yet; run again shortly")
    for label, sha in (("target", target), ("head", head)):
        if _has(repo, sha):
            continue
        progress.message(f"{label} commit {sha[:12]} is not in the checkout; fetching it")
        git.git(repo, "fetch", "--no-tags", "--quiet", "origin", sha, check=False)
        if not _has(repo, sha):
            raise PrereviewError(
                f"{label} commit {sha[:12]} is not in the checkout and could not be fetched; "
                "check out with full history (Jenkins: no shallow clone, or `git fetch --unshallow`)"
            )
    try:
        return git.git(repo, "merge-base", target, head).strip() or target
    except git.GitError:
        return target
