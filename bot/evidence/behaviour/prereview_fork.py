"""A varied call runs in a forked child (prereview_trace.py, prereview_outer.py): the child cut off from
what it shares with the test run, and the parent's file offsets put back after it. Runs INSIDE the
sandbox."""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

from prereview_variants import drained


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


def call_in_child(
    fn: Any,
    pos: list[Any],
    kw: dict[str, Any],
    watched: dict[str, Any],
    seconds: float,
    record: Callable[[Any], dict[str, Any]],
    error: Callable[[BaseException], dict[str, Any]],
    show: Callable[[Any], str],
) -> tuple[dict[str, Any] | None, bool]:
    """({"result", "mutated"} of fn(*pos, **kw) run in a forked child, or None if it hung or died; whether
    it hung). `record` makes the result's record (a generator's first items, drained in the child),
    `error` an exception's, and `show` the reprs of the `watched` arguments, which are compared before and
    after the call."""
    before = {n: show(v) for n, v in watched.items()}
    saved = offsets()
    r, w = os.pipe()
    with warnings.catch_warnings():  # 3.12+ warns about forking a threaded process (a test may error)
        warnings.simplefilter("ignore")
        pid = os.fork()
    if pid == 0:  # the child: never returns
        try:
            os.close(r)
            isolate(w, seconds)
            try:
                result = record(drained(fn(*pos, **kw)))
            except BaseException as exc:  # noqa: BLE001 (the outcome being recorded)
                result = error(exc)
            after = {n: show(v) for n, v in watched.items()}
            mutated = {n: r for n, r in after.items() if r != before[n]}
            data = json.dumps({"result": result, "mutated": mutated}).encode()
            while data:
                data = data[os.write(w, data) :]
        finally:
            os._exit(0)
    os.close(w)
    chunks, deadline, hung = [], time.monotonic() + seconds, False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                hung = True
                break
            chunk = os.read(r, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(r)
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        os.waitpid(pid, 0)
        restore(saved)
    try:
        out = json.loads(b"".join(chunks))
    except ValueError:
        return None, hung  # it hung or died before writing
    return (out if isinstance(out, dict) and "result" in out else None), hung
