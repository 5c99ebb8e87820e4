"""A wrapped variant's call runs in a forked child (prereview_trace.py): the child cut off from what it
shares with the test run, and the parent's file offsets put back after it. Runs INSIDE the sandbox."""

from __future__ import annotations

import os
import signal
import sys


def fds() -> list[int]:
    try:
        return [int(x) for x in os.listdir("/proc/self/fd")]
    except (OSError, ValueError):
        return []


def offsets() -> dict[int, int]:
    out = {}
    for fd in fds():
        try:
            out[fd] = os.lseek(fd, 0, os.SEEK_CUR)
        except OSError:
            continue  # not seekable (a pipe, a socket, a tty) or closed since listed
    return out


def restore(offsets: dict[int, int]) -> None:
    for fd, at in offsets.items():
        try:
            os.lseek(fd, at, os.SEEK_SET)
        except OSError:
            continue


def isolate(keep: int, seconds: float) -> None:
    """In the forked child: no tracing, quiet standard streams, no shared socket or pipe but `keep`, no
    file grown, and killed by an alarm if the parent's kill does not come."""
    import resource
    import stat

    sys.settrace(None)
    sys.setprofile(None)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    for fd in fds():
        if fd in (keep, 0, 1, 2, null):
            continue
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISSOCK(mode) or stat.S_ISFIFO(mode):
                os.close(fd)
        except OSError:
            continue
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(int(seconds) + 2)
