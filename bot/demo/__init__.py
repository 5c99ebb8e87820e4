"""A two-commit example repository for `prereview review --demo`."""

from __future__ import annotations

import subprocess
from importlib import resources
from pathlib import Path


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
