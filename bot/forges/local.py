"""The local forge: a git repository on disk, reviewed from the terminal."""

from __future__ import annotations

from pathlib import Path

from ..change import git
from ..types import ChangeRef, ChangeRequest
from .worktree import snapshot


class LocalForge:
    def fetch(self, ref: ChangeRef, *, worktree: bool = False) -> ChangeRequest:
        """base..head as commits; with `worktree`, head is the working tree (forges/worktree.py)."""
        repo = git.toplevel(Path(ref.repo))
        head = git.resolve(repo, ref.head or "HEAD")
        if worktree:
            head = snapshot(repo, head)
        notes: list[str] = []
        base = git.resolve(repo, ref.base) if ref.base else git.default_base(repo, head, notes)
        return ChangeRequest(
            ref=ref,
            base_sha=base,
            head_sha=head,
            diff_text=git.diff(repo, base, head),
            title=git.commit_subject(repo, head),
            workdir=repo,
            notes=tuple(notes),
        )
