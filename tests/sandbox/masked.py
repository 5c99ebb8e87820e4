"""A bwrap that fails like a container whose /proc is masked: `--proc` refused, everything else handed to
the real bwrap (so `bwrap --ro-bind / / true`, the old preflight, still passes)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REAL = shutil.which("bwrap")
PROC_MASKED = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted"
needs_bwrap = pytest.mark.skipif(REAL is None, reason="bubblewrap not installed (apt-get install bubblewrap)")


def masked_proc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """PATH (also set in this process) with the masked-/proc bwrap first."""
    bin_dir = tmp_path / "masked-bin"
    bin_dir.mkdir()
    (bin_dir / "bwrap").write_text(
        "#!/bin/sh\n"
        f'for a in "$@"; do [ "$a" = --proc ] && {{ echo "{PROC_MASKED}" >&2; exit 1; }}; done\n'
        f'exec {REAL} "$@"\n'
    )
    (bin_dir / "bwrap").chmod(0o755)
    path = f"{bin_dir}:{os.environ['PATH']}"
    monkeypatch.setenv("PATH", path)
    return path
