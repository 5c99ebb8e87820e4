"""The one retry loop every forge's API client uses (bot/forges/http.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.forges import http


class Refused(Exception):
    def __init__(self, status: int, wait: float | None = None) -> None:
        super().__init__(status)
        self.status, self.wait = status, wait


def _read(exc: Exception) -> http.Failure | None:
    if isinstance(exc, Refused):
        return http.Failure(exc.status, exc.status == 429 or exc.status >= 500, exc.wait)
    return None


def _explain(exc: Exception, failure: http.Failure, tries: int, wait: float) -> BaseException:
    return RuntimeError(f"{failure.status} after {tries} tries (would wait {wait:.0f} s)")


def _failing(*errors: Exception, result: str = "ok") -> tuple[list[int], Callable[[], str]]:
    calls: list[int] = []

    def send() -> str:
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return result

    return calls, send


def test_transient_failures_back_off_then_the_last_is_explained() -> None:
    sleeps: list[float] = []
    calls, send = _failing(*(Refused(503) for _ in range(9)))
    with pytest.raises(RuntimeError, match="503 after 4 tries"):
        http.call(send, read=_read, explain=_explain, tries=4, sleep=sleeps.append)
    assert sleeps == [1.0, 2.0, 4.0] and len(calls) == 4


def test_the_wait_a_forge_asks_for_is_kept_and_a_too_long_one_is_not_waited() -> None:
    sleeps: list[float] = []
    _, send = _failing(Refused(429, wait=7.0))
    assert http.call(send, read=_read, explain=_explain, tries=3, sleep=sleeps.append) == "ok"
    assert sleeps == [7.0]
    _, send = _failing(Refused(429, wait=3600.0))
    with pytest.raises(RuntimeError, match="429 after 1 tries .would wait 3600 s"):
        http.call(send, read=_read, explain=_explain, tries=3, sleep=sleeps.append)
    assert sleeps == [7.0]


def test_a_refusal_that_retrying_cannot_help_is_explained_at_once_and_other_errors_pass() -> None:
    sleeps: list[float] = []
    calls, send = _failing(Refused(403))
    with pytest.raises(RuntimeError, match="403 after 1 tries"):
        http.call(send, read=_read, explain=_explain, tries=5, sleep=sleeps.append)
    _, send = _failing(KeyError("a bug of ours"))
    with pytest.raises(KeyError):
        http.call(send, read=_read, explain=_explain, tries=5, sleep=sleeps.append)
    assert sleeps == [] and len(calls) == 1


def test_a_write_whose_response_was_lost_is_not_sent_twice() -> None:
    calls, send = _failing(Refused(502), result="posted again")
    got = http.call(send, read=_read, explain=_explain, tries=3, sleep=lambda s: None, landed=lambda: "found")
    assert got == "found" and len(calls) == 1
