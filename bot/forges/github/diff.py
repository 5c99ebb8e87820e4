"""The PR diff from GitHub's `/pulls/{n}/files` patches."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def patch_to_diff(files: Iterable[Any]) -> tuple[str, list[str]]:
    """Unified diff text from `/pulls/{n}/files` entries; also the paths GitHub sent without a patch."""
    out: list[str] = []
    no_patch: list[str] = []
    for f in files:
        old = getattr(f, "previous_filename", None) or f.filename
        patch = getattr(f, "patch", None)
        if not patch:
            no_patch.append(f.filename)
            continue
        src = "/dev/null" if f.status == "added" else f"a/{old}"
        dst = "/dev/null" if f.status == "removed" else f"b/{f.filename}"
        out += [f"diff --git a/{old} b/{f.filename}", f"--- {src}", f"+++ {dst}", patch.rstrip("\n")]
    return ("\n".join(out) + "\n") if out else "", no_patch
