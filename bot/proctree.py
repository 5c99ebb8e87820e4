"""The processes below this one (from /proc), and killing them: what a job or a command started must not
outlive it (a semgrep, an environment build, a checkout's git)."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (from /proc), children first-level first."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()
        if len(fields) > 1 and fields[1].isdigit():
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_descendants(pid: int | None = None) -> int:
    """SIGKILL every process below `pid` (this process by default). Returns how many were signalled."""
    killed = 0
    for child in descendants(os.getpid() if pid is None else pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(child, signal.SIGKILL)
            killed += 1
    return killed
