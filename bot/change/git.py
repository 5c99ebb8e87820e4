"""Thin, safe wrappers around the git CLI (no shell; untrusted refs are never options)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ..types import PrereviewError


def git(repo: Path, *args: str, check: bool = True, binary: bool = False) -> str:
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo), "-c", "core.quotepath=off", *args],
            capture_output=True,
            check=False,
        )
    except FileNotFoundError:
        raise PrereviewError("git is not installed; install git (e.g. apt-get install git)") from None
    if check and proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(msg[-1] if msg else f"git {args[0]} failed")
    return proc.stdout.decode("utf-8", "replace")


class GitError(PrereviewError):
    pass


def toplevel(path: Path) -> Path:
    if not path.exists():
        raise PrereviewError(f"{path} does not exist; pass a git repository with --repo")
    try:
        return Path(git(path, "rev-parse", "--show-toplevel").strip())
    except GitError:
        raise PrereviewError(f"{path} is not a git repository; run inside one or pass --repo DIR") from None


def resolve(repo: Path, rev: str) -> str:
    if rev.startswith("-"):
        raise PrereviewError(f"invalid revision '{rev}'; pass a branch, tag or commit (not an option)")
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", rev + "^{commit}").strip()
    except GitError:
        if is_shallow(repo):
            raise PrereviewError(f"unknown revision '{rev}' in {repo}: {SHALLOW_FIX}") from None
        raise PrereviewError(
            f"unknown revision '{rev}' in {repo}; check the name or fetch it first"
        ) from None


SHALLOW_FIX = (
    "the clone is shallow, so the base commit is missing: fetch the history (GitHub Actions: "
    "actions/checkout with `fetch-depth: 0`; GitLab CI: `GIT_DEPTH: 0`; by hand: `git fetch --unshallow` "
    "or `git fetch --deepen=100`), or pass --base"
)


def is_shallow(repo: Path) -> bool:
    return git(repo, "rev-parse", "--is-shallow-repository", check=False).strip() == "true"


def default_base(repo: Path, head: str, notes: list[str] | None = None) -> str:
    """Merge-base of head with the upstream or default branch; the parent commit when head is on it;
    the empty tree when head is a root commit (its whole content is the change; said in `notes`).
    In a shallow clone whose history does not reach the base: PrereviewError naming the fix."""
    shallow = is_shallow(repo)
    for cand in ("@{upstream}", "origin/HEAD", "origin/main", "origin/master", "main", "master"):
        try:
            ref = git(repo, "rev-parse", "--verify", "--quiet", cand + "^{commit}").strip()
        except GitError:
            continue
        if not ref:
            continue
        mb = git(repo, "merge-base", ref, head, check=False).strip()
        if mb and mb != head:
            return mb
        if not mb and shallow:  # the branch is there but the history joining it to head was cut off
            raise PrereviewError(f"no merge-base of {head[:12]} with {cand}: {SHALLOW_FIX}")
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", head + "^").strip()
    except GitError:
        pass
    if shallow:
        raise PrereviewError(f"{head[:12]} has no parent here: {SHALLOW_FIX}")
    if notes is not None:
        notes.append(f"{head[:12]} is a root commit: its whole tree was reviewed as added")
    return git(repo, "hash-object", "-t", "tree", "/dev/null").strip()


def diff(repo: Path, base: str, head: str, context: int = 3) -> str:
    return git(
        repo,
        "diff",
        "--no-color",
        "--no-ext-diff",
        "-M",
        f"-U{context}",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        base,
        head,
        "--",
    )


def show(repo: Path, rev: str, path: str) -> str | None:
    """File content at a revision, or None when it does not exist there."""
    try:
        return git(repo, "show", f"{rev}:{path}")
    except GitError:
        return None


def sizes(repo: Path, rev: str, paths: list[str]) -> dict[str, int]:
    """Byte sizes of the blobs at `rev` for these paths (one `git cat-file` for all; absent ones left out)."""
    paths = [p for p in paths if p and "\n" not in p]
    if not paths:
        return {}
    proc = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch-check=%(objecttype) %(objectsize)"],
        input="".join(f"{rev}:{p}\n" for p in paths).encode(),
        capture_output=True,
        check=False,
    )
    out = {}
    for path, line in zip(paths, proc.stdout.decode("utf-8", "replace").splitlines(), strict=False):
        kind, _, size = line.partition(" ")
        if kind == "blob" and size.isdigit():
            out[path] = int(size)
    return out


def commit_subject(repo: Path, rev: str) -> str:
    return git(repo, "log", "-1", "--format=%s", rev, check=False).strip()
