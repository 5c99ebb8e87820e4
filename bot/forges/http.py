"""One retry loop for every forge's API client: retry what may pass later, wait as the forge asks, explain
the rest in one line.

Each client says how to read one failed try (`Failure`: the status, whether a later try may succeed, how
long the forge asked to wait) and how to explain a failure it gives up on; the loop does the rest the same
way for all of them: exponential backoff (1, 2, 4 … 30 s) unless the forge named a wait, at most
`MAX_WAIT_SECONDS` in one go (longer: the explanation, usually `Throttled`, lets the server re-queue the
job), and for a write that is not idempotent a check that the first try did not land before it is sent
again (`landed`: a lost response must not post the comment twice).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")
Sleep = Callable[[float], None]

# The longest wait accepted in one go (a primary rate limit may reset in an hour): beyond it the job ends
# with Throttled and the server tries again later.
MAX_WAIT_SECONDS = 120.0
MAX_BACKOFF = 30.0


@dataclass(frozen=True)
class Failure:
    """One failed try, as the client read it."""

    status: int | None  # the HTTP status; None when no answer came (a connection error)
    transient: bool  # may a later try succeed (429, 5xx, a rate-limited 403, a dropped connection)?
    wait: float | None = None  # what the forge asked to wait (Retry-After, a rate-limit reset)


def backoff(attempt: int) -> float:
    """Seconds before try `attempt + 1` when the forge named no wait: 1, 2, 4, … at most 30."""
    return min(float(2**attempt), MAX_BACKOFF)


def call(
    send: Callable[[], T],
    *,
    read: Callable[[Exception], Failure | None],
    explain: Callable[[Exception, Failure, int, float], BaseException],
    tries: int,
    sleep: Sleep,
    landed: Callable[[], T | None] | None = None,
    max_wait: float = MAX_WAIT_SECONDS,
) -> T:
    """`send()`, tried up to `tries` times.

    `read(exc)` turns an exception of `send` into a Failure (None: not a failure of the call, raised as it
    is). A failure that is not transient, the last try's, or one whose wait exceeds `max_wait` is raised as
    `explain(exc, failure, tries_made, wait)` (which may return `exc` itself for the caller to handle).
    `landed()`, before each retry: what the forge holds when the first try did land, else None."""
    for attempt in range(max(tries, 1)):
        try:
            if attempt and landed is not None and (found := landed()) is not None:
                return found
            return send()
        except Exception as exc:
            failure = read(exc)
            if failure is None:
                raise
            wait = failure.wait if failure.wait is not None else backoff(attempt)
            if not failure.transient or attempt >= tries - 1 or wait > max_wait:
                raise explain(exc, failure, attempt + 1, wait) from None
        sleep(wait)
    raise AssertionError("unreachable")
