"""The worker pool `prereview serve` starts beside itself: supervised, and dying together with it.

The pool is one `prereview worker` process (huey's consumer, which restarts its own worker processes).
When it exits (killed, crashed) it is started again after a backoff (1 s, doubling to a minute; back to
1 s once it has run a minute). It gets SIGTERM when `serve` dies, even by SIGKILL (Linux
PR_SET_PDEATHSIG), and each of its worker processes gets SIGKILL when the consumer dies (an idle huey
worker ignores SIGTERM; a job it held is retried by the reaper), so a restarted
`serve` never finds a second pool (and a second model) still running.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable

log = logging.getLogger("prereview.server")

PR_SET_PDEATHSIG = 1
DOWN_TOO_LONG = 60.0  # seconds without a running pool before /healthz says so


def die_with_parent(parent: int, sig: int = signal.SIGTERM) -> Callable[[], None]:
    """For the child of `parent`: `sig` when the parent dies (also used by huey's worker processes)."""

    def setup() -> None:  # runs in the child (between fork and exec, or at a worker's start)
        try:
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, sig)
        except OSError:
            pass  # not Linux/glibc: the pool is still stopped on a normal exit
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(0)

    return setup


class WorkerPool:
    def __init__(self, argv: list[str], *, first: float = 1.0, cap: float = 60.0) -> None:
        self.argv, self.first, self.cap = argv, first, cap
        self.restarts = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._down_since: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="prereview-pool", daemon=True)

    def start(self) -> WorkerPool:
        self.proc = self._spawn()
        self._thread.start()
        return self

    def _spawn(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(self.argv, preexec_fn=die_with_parent(os.getpid()))  # noqa: PLW1509

    def _watch(self) -> None:
        wait = self.first
        while not self._stop.is_set():
            assert self.proc is not None
            started = time.monotonic()
            code = self.proc.wait()
            if self._stop.is_set():
                return
            self._down_since = time.monotonic()
            if time.monotonic() - started > self.cap:
                wait = self.first  # it ran a while: a fresh failure, not a crash loop
            log.error("the worker pool exited (code %s); starting it again in %.0f s", code, wait)
            if self._stop.wait(wait):
                return
            wait = min(wait * 2, self.cap)
            self.restarts += 1
            self.proc = self._spawn()
            self._down_since = None

    def problem(self) -> str | None:
        """Why the service is not alive (for /healthz): the pool down for over a minute."""
        down = self._down_since
        if down is not None and time.monotonic() - down > DOWN_TOO_LONG:
            return f"the worker pool has been down {time.monotonic() - down:.0f} s ({self.restarts} restarts)"
        return None

    def stop(self) -> None:
        self._stop.set()
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGINT)  # huey finishes running jobs; interrupted ones are retried anyway
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
