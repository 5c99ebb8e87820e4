"""Each worker process keeps its jobs' temporary files (the PR's checkout, scratch trees) under its own
folder, `<tmp>/prereview-jobs/<host>-<pid>`, so that what a killed worker left behind is found and removed
when a worker starts again (SIGKILL runs no cleanup)."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

from .ledger import HOST, owner_alive

log = logging.getLogger("prereview.worker")


def jobs_root() -> Path:
    return Path(tempfile.gettempdir()) / "prereview-jobs"


def sweep(root: Path) -> int:
    """Remove the folders of this host's worker processes that are gone. Returns how many."""
    removed = 0
    for d in root.iterdir() if root.is_dir() else []:
        host, _, pid = d.name.rpartition("-")
        if host == HOST and pid.isdigit() and owner_alive(f"{HOST}:{pid}") is False:
            shutil.rmtree(d, ignore_errors=True)
            removed += 1
    if removed:
        log.warning("removed %d job folder(s) left by worker processes that were killed", removed)
    return removed


def claim(root: Path) -> Path:
    """This process's own folder, made the default temporary folder (for Python and the programs it
    starts: TMPDIR), after sweeping the folders of dead workers."""
    sweep(root)
    own = root / f"{HOST}-{os.getpid()}"
    own.mkdir(parents=True, exist_ok=True, mode=0o700)
    tempfile.tempdir = str(own)
    os.environ["TMPDIR"] = str(own)
    return own
