"""What a failed GitHub call means: retry it (and how long to wait), or explain it in one line."""

from __future__ import annotations

import time
from typing import Any

from .. import http

MAX_WAIT_SECONDS = http.MAX_WAIT_SECONDS


def _header(exc: Any, name: str) -> str | None:
    headers = {k.lower(): v for k, v in (getattr(exc, "headers", None) or {}).items()}
    return headers.get(name.lower())


def retry_wait(exc: Any, attempt: int, now: float | None = None) -> float | None:
    """Seconds to wait before retrying a failed call, or None when retrying cannot help.

    Per GitHub's docs: honour `Retry-After`; else when `x-ratelimit-remaining` is 0 wait until
    `x-ratelimit-reset`; else back off exponentially (secondary limits ask for at least a minute, but a
    short first wait recovers most transient 5xx). https://docs.github.com/rest/using-the-rest-api/
    best-practices-for-using-the-rest-api#handle-rate-limit-errors-appropriately
    """
    failure = _failure(exc, now)
    if not failure.transient:
        return None
    return failure.wait if failure.wait is not None else float(2**attempt)


def _failure(exc: Any, now: float | None = None) -> http.Failure:
    status = getattr(exc, "status", 0)
    message = str(getattr(exc, "data", "") or "").lower()
    rate_limited = status == 429 or (
        status == 403
        and (
            "rate limit" in message
            or _header(exc, "retry-after") is not None
            or _header(exc, "x-ratelimit-remaining") == "0"
        )
    )
    if not (rate_limited or status >= 500):
        return http.Failure(status, transient=False)
    after = _header(exc, "retry-after")
    if after is not None and after.strip().isdigit():
        return http.Failure(status, transient=True, wait=float(after))
    if rate_limited and _header(exc, "x-ratelimit-remaining") == "0":
        reset = _header(exc, "x-ratelimit-reset")
        if reset and reset.isdigit():
            wait = max(1.0, float(reset) - (now if now is not None else time.time()))
            return http.Failure(status, transient=True, wait=wait)
    return http.Failure(status, transient=True)


def _message(exc: Any) -> str:
    """The message GitHub sent with an error (its JSON `message`, else the body as text)."""
    data = getattr(exc, "data", None)
    return str(data.get("message")) if isinstance(data, dict) else str(data or "")


def describe_write(exc: Any) -> str:
    msg = _message(exc)
    return (
        f"GitHub refused a write ({exc.status}: {msg}); give the token `pull-requests: write` "
        "(a fork PR's token is read-only)"
    )


def describe_limit(exc: Any, wait: float) -> str:
    msg = _message(exc)
    return (
        f"GitHub's rate limit for this token is used up ({exc.status}: {msg}); it allows calls again in "
        f"{wait:.0f} s (more than the {MAX_WAIT_SECONDS:.0f} s prereview waits in one go)"
    )


def describe_gone(exc: Any, repo: str) -> str:
    msg = _message(exc)
    return (
        f"GitHub answered 404 ({msg}) to a write in {repo}: the pull request, comment or thread it "
        "targets no longer exists (deleted, or the PR closed), or the token cannot see the repository"
    )


def describe_read(exc: Any, repo: str) -> str:
    msg = _message(exc)
    return (
        f"GitHub answered {exc.status} ({msg}) reading {repo}; check GITHUB_TOKEN, GITHUB_REPOSITORY "
        "and the pull request number"
    )


def read_failure(exc: Exception) -> http.Failure | None:
    import requests
    from github import GithubException

    if isinstance(exc, GithubException):
        return _failure(exc)
    if isinstance(exc, requests.ConnectionError):
        return http.Failure(None, transient=True)
    return None
