"""Queue-store calls that outlive a store outage (Redis down, SQLite full or read-only).

A worker that loses the store mid-job must still finish the job's bookkeeping once the store is back (or
the PR's lease would stay held for the worker's lifetime), and the recovery loops (reaper, lease
heartbeat) must keep running through an outage, as Celery's and RQ's do. Errors are counted in the
process (`StoreErrors`) and added to the store's shared counter when it answers again.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

log = logging.getLogger("prereview.queue")

T = TypeVar("T")


def _store_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [sqlite3.Error, OSError]
    try:
        from redis.exceptions import RedisError
    except ImportError:  # pragma: no cover - redis is installed with huey's Redis support only
        pass
    else:
        errors.append(RedisError)
    return tuple(errors)


STORE_ERRORS = _store_errors()

BACKOFF_FIRST = 0.1
BACKOFF_MAX = 5.0


def backoff(failures: int, first: float = BACKOFF_FIRST, cap: float = BACKOFF_MAX) -> float:
    """Seconds to wait after `failures` consecutive failures (1, 2, …): doubling, capped."""
    return float(min(cap, first * 2 ** max(0, failures - 1)))


class StoreErrors:
    """Store errors seen by this process; `flush` adds the ones not yet reported to the shared counter."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.total = 0
        self._unreported = 0

    def add(self, exc: BaseException, what: str) -> None:
        with self._lock:
            self.total += 1
            self._unreported += 1
        log.warning("queue store error while %s: %s: %s", what, type(exc).__name__, str(exc)[:300])

    def flush(self, count: Callable[[str, int], int]) -> None:
        with self._lock:
            n, self._unreported = self._unreported, 0
        if not n:
            return
        try:
            count("m:store_errors", n)
        except Exception:  # still down: report them next time
            with self._lock:
                self._unreported += n


def retry_store(
    fn: Callable[[], T],
    *,
    what: str,
    errors: StoreErrors,
    within: float,
    sleep: Callable[[float], Any] = time.sleep,
) -> T:
    """`fn()`, tried again with backoff while the store fails, for up to `within` seconds; then the last
    store error is raised. Other errors are raised at once."""
    deadline = time.monotonic() + within
    failures = 0
    while True:
        try:
            return fn()
        except STORE_ERRORS as exc:
            failures += 1
            errors.add(exc, what)
            wait = backoff(failures)
            if time.monotonic() + wait > deadline:
                raise
            sleep(wait)


def survive(
    body: Callable[[], Any],
    *,
    name: str,
    interval: float,
    stop: threading.Event,
    errors: StoreErrors,
) -> None:
    """Run `body` every `interval` seconds until `stop` is set, whatever it raises: a failure is logged
    and counted, and the next try comes after a backoff (from a second, doubling, up to `interval`)."""
    failures = 0
    while not stop.is_set():
        try:
            body()
        except Exception as exc:
            failures += 1
            errors.add(exc, name)
            wait = backoff(failures, first=min(interval, 1.0), cap=interval)
        else:
            if failures:
                log.warning("%s: the queue store answers again after %d failed tries", name, failures)
            failures = 0
            wait = interval
        if stop.wait(wait):
            return
