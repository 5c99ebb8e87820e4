"""A two-commit example repository for `prereview review --demo`, and what the demo says first: the
change it reviews, and whether the behaviour comparison (the `average()` example) can run here."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from ..change import git as gitcmd
from ..config import Config
from ..types import PrereviewError

INSTALL_BWRAP = "sudo apt-get install -y bubblewrap"  # what `make demo` runs as root (scripts/system-deps.sh)


def make_repo(dest: Path) -> Path:
    """Create DEST as a git repo: base commit with users.py, head commit introducing two defects."""
    files = resources.files(__name__)
    dest.mkdir(parents=True, exist_ok=True)

    def git(*args: str) -> None:
        subprocess.run(
            [
                "git",
                "-C",
                str(dest),
                "-c",
                "user.name=prereview demo",
                "-c",
                "user.email=demo@example.invalid",
                *args,
            ],
            check=True,
            capture_output=True,
        )

    git("init", "-q", "-b", "main")
    (dest / "users.py").write_text(
        files.joinpath("users_base.py.txt").read_text(encoding="utf-8"), encoding="utf-8"
    )
    git("add", "users.py")
    git("commit", "-q", "-m", "Add user store")
    (dest / "users.py").write_text(
        files.joinpath("users_head.py.txt").read_text(encoding="utf-8"), encoding="utf-8"
    )
    git("commit", "-q", "-am", "Build the user query inline and fix average")
    return dest


def behaviour_off(cfg: Config) -> str | None:
    """Why the demo's behaviour comparison cannot run on this machine, with the command that turns it
    on; None when it can. The sandbox is tried once with a command of our own."""
    from ..sandbox import create

    if not cfg.behaviour.enabled:
        return "behaviour comparison is off (behaviour.enabled: false in the config)"
    if cfg.sandbox.backend == "auto" and shutil.which("bwrap") is None:
        return (
            "behaviour comparison is off: no sandbox to run the changed code in (bubblewrap is not "
            f"installed); turn it on: {INSTALL_BWRAP}"
        )
    try:
        sandbox = create(cfg.sandbox)
        if sandbox.name == "none":
            if cfg.behaviour.allow_unsandboxed:
                return None
            return (
                "behaviour comparison is off: sandbox.backend is none; turn it on: "
                f"{INSTALL_BWRAP} and sandbox.backend: auto"
            )
        if sandbox.name == "bubblewrap":
            with tempfile.TemporaryDirectory(prefix="prereview-demo-probe-") as tmp:
                sandbox.run(["/bin/sh", "-c", "exit 0"], cwd=Path(tmp), timeout=60)
    except PrereviewError as exc:
        return f"behaviour comparison is off: {exc}"
    return None


def change_header(repo: Path, base: str, head: str) -> str:
    """The change the demo reviews, as `git diff` shows it (its repository is deleted afterwards)."""
    diff = gitcmd.diff(repo, base, head)
    return (
        f"The demo reviews this change (git diff {base[:7]}..{head[:7]} in a temporary repository, "
        f"deleted afterwards):\n\n{diff.rstrip()}\n\n"
    )
