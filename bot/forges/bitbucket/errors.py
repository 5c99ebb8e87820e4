"""How Bitbucket's failed answers are read (retry or not, how long it asked to wait) and explained in one
line that names the fix. The token never appears in a message."""

from __future__ import annotations

import httpx

from ...types import PrereviewError, Throttled
from .. import http
from ..base import PermissionDenied

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
SETUP_HINT = (
    "create an HTTP access token (repository or project, permission `Repository write`, or `Repository "
    "read` for --no-post) and set PREREVIEW_BITBUCKET_TOKEN"
)


class Refused(Exception):
    """An answer with an error status (raised inside the retry loop, never outside it)."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def read(exc: Exception) -> http.Failure | None:
    """A failed try: 429 and 5xx may pass later (a 429's `Retry-After` is the wait), as may a dropped
    connection; anything else is final."""
    if isinstance(exc, Refused):
        code = exc.response.status_code
        after = exc.response.headers.get("Retry-After", "")
        return http.Failure(code, code in RETRY_STATUS, float(after) if after.isdigit() else None)
    if isinstance(exc, httpx.TransportError):
        return http.Failure(None, transient=True)
    return None


def explain(
    what: str, where: str, repo: str, failure: http.Failure, tries: int, exc: Exception
) -> PrereviewError:
    """The one-line error for a call given up on (`where`: the server's address)."""
    code = failure.status
    if code is None:
        return Throttled(
            f"cannot reach Bitbucket at {where} to {what} ({type(exc).__name__}); check "
            "PREREVIEW_BITBUCKET_URL and the network",
            retry_after=60.0,
        )
    resp = exc.response if isinstance(exc, Refused) else None
    said = message(resp) if resp is not None else ""
    if code in RETRY_STATUS:
        return Throttled(
            f"Bitbucket answered {code} to {what} {tries} time(s); it is overloaded or down, run again later",
            retry_after=60.0,
        )
    if code == 401:
        return PermissionDenied(
            f"Bitbucket answered 401 to {what}: the token is missing or wrong; {SETUP_HINT}"
        )
    if code == 403:
        return PermissionDenied(
            f"Bitbucket answered 403 to {what}: the token may not do this ({said}); {SETUP_HINT}"
        )
    if code == 404:
        return PrereviewError(
            f"Bitbucket answered 404 to {what} in {repo} at {where}; check the repository "
            "(PROJECT/slug), the pull request id and that the token can see it"
        )
    return PrereviewError(f"Bitbucket answered {code} to {what}: {said}")


def message(resp: httpx.Response) -> str:
    """Bitbucket's own error text (`{"errors": [{"message": …}]}`), first line, short."""
    try:
        data = resp.json()
    except ValueError:
        return resp.text.splitlines()[0][:200] if resp.text else ""
    errors = data.get("errors") if isinstance(data, dict) else None
    first = errors[0] if isinstance(errors, list) and errors and isinstance(errors[0], dict) else {}
    msg = str(first.get("message") or "")
    return msg.splitlines()[0][:200] if msg else ""
