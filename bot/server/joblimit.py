"""A wall-clock limit for each worker job that nothing host-side can outlive, and the one-line reason a
failed job's author is given.

At the limit the job's thread gets `JobTimeout` from a SIGALRM handler: the signal interrupts a blocking
read (a FIFO left by the PR), a wait on a subprocess (which `subprocess.run` then kills) or a sleep. If
the job still has not ended `grace` seconds later (a step that swallowed the exception, or a call that
never returns to Python), a watchdog thread runs `on_overrun`: it records the failure, answers the
author, frees the PR's lease, kills every process the worker started and ends the worker process, which
the consumer then replaces.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

from ..jobs.public import public_reason, scrub_paths
from ..proctree import descendants, kill_descendants

__all__ = [
    "JobTimeout",
    "descendants",
    "kill_descendants",
    "public_reason",
    "scrub_paths",
    "wall_clock_limit",
]

log = logging.getLogger("prereview.queue")


class JobTimeout(BaseException):
    """The job ran past `server.job_timeout_seconds`. A BaseException, so that no step's
    `except Exception` swallows it."""


@contextlib.contextmanager
def wall_clock_limit(seconds: float, grace: float, on_overrun: Callable[[], None]) -> Iterator[None]:
    if seconds <= 0:
        yield
        return
    active = threading.Event()
    active.set()
    in_main = threading.current_thread() is threading.main_thread()
    previous: object = None
    if in_main:

        def alarm(signum: int, frame: FrameType | None) -> None:
            if active.is_set():
                raise JobTimeout(f"the job ran past {seconds:g} s")

        previous = signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)

    def overrun() -> None:
        if active.is_set():
            on_overrun()

    watchdog = threading.Timer(seconds + (grace if in_main else 0.0), overrun)
    watchdog.daemon = True
    watchdog.name = "prereview-job-limit"
    watchdog.start()
    try:
        yield
    finally:
        try:
            active.clear()  # from here on the alarm raises nothing, even if it fires
        finally:
            active.clear()
            watchdog.cancel()
            if in_main:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)  # type: ignore[arg-type]
