"""What a local review says about the working tree, and the working tree as a commit to review.

`prereview review` reviews commits (base..HEAD) with the config as it is at the base revision. Two things
a new user does not expect are said in the review's notes instead of happening silently: uncommitted
changes are not reviewed, and a `.prereview.yml` edited in the working tree is not used. `--worktree`
reviews the working tree instead (as `git diff BASE` shows it): its tracked files, staged or not, are
written into a commit object whose parent is HEAD, with a temporary index, so HEAD, the index and the
files are left as they are."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .. import fsguard, wording
from ..change import git
from ..config import CONFIG_FILE, MAX_CONFIG_BYTES
from ..types import PrereviewError


def uncommitted(repo: Path) -> list[str]:
    """Tracked files whose working-tree or staged text differs from HEAD (as `git diff HEAD` lists them)."""
    return [p for p in git.git(repo, "diff", "HEAD", "--name-only", "-z", check=False).split("\0") if p]


def uncommitted_note(repo: Path) -> str | None:
    changed = uncommitted(repo)
    if not changed:
        return None
    shown = wording.first_few(changed)
    return (
        f"uncommitted changes in {len(changed)} file(s) were not reviewed ({shown}): the review is of "
        "commits; `prereview review --worktree` reviews the working tree"
    )


def config_note(repo: Path, base: str) -> str | None:
    """A note when the working tree's `.prereview.yml` differs from the base revision's (it is not used)."""
    try:
        here = fsguard.read_text(repo, CONFIG_FILE, MAX_CONFIG_BYTES + 1)
    except fsguard.UnsafePath:
        return None  # a link or not a file: not a config anyone edits by hand
    at_base = git.show(repo, base, CONFIG_FILE)
    if here is None or here == at_base:
        return None
    differs = "the base revision has none" if at_base is None else "it differs from the base revision's"
    return (
        f"{CONFIG_FILE} in the working tree is not used ({differs}; a review reads the config as it is at "
        f"the base revision {base[:12]}, so a change cannot configure its own review); "
        f"pass --config {CONFIG_FILE} to use it"
    )


def snapshot(repo: Path, head: str) -> str:
    """A commit, child of `head`, holding the tracked files as the working tree has them now."""
    index = git.git(repo, "rev-parse", "--git-path", "index").strip()
    source = Path(index) if Path(index).is_absolute() else repo / index
    with tempfile.TemporaryDirectory(prefix="prereview-worktree-") as tmp:
        scratch = Path(tmp) / "index"
        if source.is_file():
            shutil.copyfile(source, scratch)
        env = {**os.environ, "GIT_INDEX_FILE": str(scratch)}

        def run(*args: str) -> str:
            proc = subprocess.run(
                ["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=False
            )
            if proc.returncode != 0:
                why = (proc.stderr.strip().splitlines() or [f"git {args[0]} failed"])[-1]
                raise PrereviewError(f"cannot snapshot the working tree ({why}); commit the changes instead")
            return proc.stdout.strip()

        if not source.is_file():
            run("read-tree", head)
        run("add", "-u")
        tree = run("write-tree")
        return run(
            "-c",
            "user.name=prereview",
            "-c",
            "user.email=prereview@localhost",
            "commit-tree",
            tree,
            "-p",
            head,
            "-m",
            "the working tree (uncommitted changes)",
        )
