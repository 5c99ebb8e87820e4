"""Gitea's / Forgejo's REST API v1 as prereview uses it (httpx): a pull request, its diff, reviews, comments.

Forgejo is a fork of Gitea with the same `/api/v1` paths, so one client serves both. Constructing a
GiteaAPI does no I/O. Every call goes through `_call`, which retries 429, 5xx and connection errors
through `forges/http.py` (the sleep is injectable) and turns auth failures into one-line errors. The
token travels in the `Authorization: token …` header only, and never appears in a repr or an error.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx

from ...types import PrereviewError, Throttled
from .. import http
from ..base import PermissionDenied, Rejected

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
PAGE = 50  # Gitea's default MAX_RESPONSE_ITEMS is 50: a larger `limit` is cut to it
SETUP_HINT = (
    "create an access token (scopes write:repository and write:issue, or read: for --no-post) for a user "
    "with write access to the repository and set PREREVIEW_GITEA_TOKEN"
)


def api_root(url: str) -> str:
    """`https://host[/sub]` or `…/api/v1` -> the API root `…/api/v1`."""
    url = url.rstrip("/")
    return url if url.endswith("/api/v1") else url + "/api/v1"


def server_root(url: str) -> str:
    url = url.rstrip("/")
    return url[: -len("/api/v1")] if url.endswith("/api/v1") else url


class GiteaAPI:
    def __init__(
        self,
        url: str,
        token: str | None,
        repo: str,
        *,
        timeout: float = 30.0,
        retries: int = 4,
        sleep: Callable[[float], None] = time.sleep,
        verify: bool | str = True,
    ) -> None:
        if not url:
            raise PrereviewError(
                "no Gitea URL; set GITHUB_SERVER_URL (Gitea/Forgejo Actions set it) or PREREVIEW_GITEA_URL, "
                "or server.gitea_url for the webhook server"
            )
        self.url = api_root(url)
        self.repo = repo
        self._token = token
        self._timeout, self._retries, self._sleep, self._verify = timeout, retries, sleep, verify
        self._http: httpx.Client | None = None
        self._own: str | None = None

    def __repr__(self) -> str:  # never show the token
        return f"{type(self).__name__}({self.url!r}, repo={self.repo!r})"

    # -- plumbing ---------------------------------------------------------------------------

    def _client(self) -> httpx.Client:
        if self._http is None:
            headers = {"Accept": "application/json"}
            if self._token:
                headers["Authorization"] = f"token {self._token}"
            self._http = httpx.Client(headers=headers, timeout=self._timeout, verify=self._verify)
        return self._http

    def _path(self, tail: str) -> str:
        owner, _, name = self.repo.partition("/")
        return f"{self.url}/repos/{quote(owner, safe='')}/{quote(name, safe='')}{tail}"

    def _call(
        self,
        what: str,
        method: str,
        url: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        expect: tuple[int, ...] = (),
        landed: Callable[[], dict[str, Any] | None] | None = None,
    ) -> httpx.Response:
        """One API call: retry 429/5xx/connection errors with backoff (`forges/http.py`); every other
        failure is one line, except the status codes in `expect`, which the caller handles. A write that
        is not idempotent passes `landed`: before it is sent again, what Gitea holds is read back, and a
        first try that landed (its response lost) is returned instead of posted twice."""

        def send() -> httpx.Response:
            resp = self._client().request(method, url, params=params, json=json)
            if resp.status_code >= 400 and resp.status_code not in expect:
                raise _Refused(resp)
            return resp

        def found() -> httpx.Response | None:
            data = landed() if landed is not None else None
            return None if data is None else httpx.Response(200, json=data)

        return http.call(
            send,
            read=_read,
            explain=lambda exc, failure, tries, wait: self._explain(what, failure, tries, exc),
            tries=self._retries + 1,
            sleep=self._sleep,
            landed=found if landed is not None else None,
        )

    def _explain(self, what: str, failure: http.Failure, tries: int, exc: Exception) -> PrereviewError:
        code = failure.status
        if code is None and isinstance(exc, httpx.ConnectError):
            return Throttled(
                f"cannot reach Gitea at {self.url}; check GITHUB_SERVER_URL / PREREVIEW_GITEA_URL "
                "(server: server.gitea_url) and the network",
                retry_after=60.0,
            )
        if code is None:
            return Throttled(f"Gitea at {self.url} did not answer {what}: {exc}", retry_after=60.0)
        resp = exc.response if isinstance(exc, _Refused) else None
        if code in RETRY_STATUS:
            return Throttled(
                f"Gitea answered {code} to {what} {tries} time(s); it is overloaded or down, run again later",
                retry_after=60.0,
            )
        if code == 401:
            return PermissionDenied(
                f"Gitea answered 401 to {what}: the token is missing or wrong; {SETUP_HINT}"
            )
        if code == 403:
            return PermissionDenied(
                f"Gitea answered 403 to {what}: the token's user or scopes may not do this; {SETUP_HINT}"
            )
        if code == 404:
            return PrereviewError(
                f"Gitea answered 404 to {what} in {self.repo} at {self.url}; check the repository "
                "(GITHUB_REPOSITORY), the pull request number and that the token's user can see it"
            )
        return PrereviewError(
            f"Gitea answered {code} to {what}: {_message(resp) if resp is not None else ''}"
        )

    def _get_all(self, what: str, url: str) -> list[dict[str, Any]]:
        """Every page of a list endpoint that takes `page` and `limit`."""
        out: list[dict[str, Any]] = []
        for page in range(1, 1000):
            items = self._call(what, "GET", url, params={"page": page, "limit": PAGE}).json()
            if not isinstance(items, list):
                break
            out += [x for x in items if isinstance(x, dict)]
            if len(items) < PAGE:
                break
        return out

    # -- reading ----------------------------------------------------------------------------

    def pull(self, number: int) -> dict[str, Any]:
        data = self._call(f"get pull request #{number}", "GET", self._path(f"/pulls/{number}")).json()
        return data if isinstance(data, dict) else {}

    def diff_text(self, number: int) -> str:
        """The PR's unified diff as Gitea computes it (GET /pulls/{index}.diff, `git diff` format)."""
        return self._call(f"get the diff of #{number}", "GET", self._path(f"/pulls/{number}.diff")).text

    def own_login(self) -> str:
        """The token's user (GET /user): only its comments and reviews carry the bot's state."""
        if self._own is None:
            user = self._call("get the token's user", "GET", f"{self.url}/user").json()
            self._own = str(user.get("login") or "") if isinstance(user, dict) else ""
        return self._own

    def reviews(self, number: int) -> list[dict[str, Any]]:
        return self._get_all("list pull request reviews", self._path(f"/pulls/{number}/reviews"))

    def review_comments(self, number: int, review_id: int) -> list[dict[str, Any]]:
        url = self._path(f"/pulls/{number}/reviews/{int(review_id)}/comments")
        data = self._call("list a review's comments", "GET", url).json()
        return [x for x in data if isinstance(x, dict)] if isinstance(data, list) else []

    def issue_comments(self, number: int) -> list[dict[str, Any]]:
        """The PR's conversation comments (this endpoint has no pagination: all of them at once)."""
        data = self._call(
            "list pull request comments", "GET", self._path(f"/issues/{number}/comments")
        ).json()
        return [x for x in data if isinstance(x, dict)] if isinstance(data, list) else []

    def permission(self, username: str) -> str:
        """`admin`, `write`, `read` or `none` for a user on the repository (404: not a collaborator)."""
        url = self._path(f"/collaborators/{quote(username, safe='')}/permission")
        resp = self._call("get a user's permission", "GET", url, expect=(404,))
        if resp.status_code == 404:
            return "none"
        data = resp.json()
        return str(data.get("permission") or "none") if isinstance(data, dict) else "none"

    # -- writing ----------------------------------------------------------------------------

    def create_review(self, number: int, data: dict[str, Any]) -> dict[str, Any]:
        """POST /pulls/{index}/reviews; Gitea's 422 (e.g. a review on a closed PR) becomes Rejected."""
        url = self._path(f"/pulls/{number}/reviews")

        def landed() -> dict[str, Any] | None:
            want = str(data.get("body") or "").strip()
            for r in reversed(self.reviews(number)):
                if str(r.get("body") or "").strip() == want and r.get("commit_id") == data.get("commit_id"):
                    return r
            return None

        resp = self._call("create a review", "POST", url, json=data, expect=(422,), landed=landed)
        if resp.status_code == 422:
            raise Rejected(_message(resp))
        out = resp.json()
        return out if isinstance(out, dict) else {}

    def create_comment(self, number: int, body: str) -> dict[str, Any]:
        url = self._path(f"/issues/{number}/comments")

        def landed() -> dict[str, Any] | None:
            same = [
                c for c in self.issue_comments(number) if str(c.get("body") or "").strip() == body.strip()
            ]
            return same[-1] if same else None

        out = self._call("create a comment", "POST", url, json={"body": body}, landed=landed).json()
        return out if isinstance(out, dict) else {}

    def edit_comment(self, comment_id: int, body: str) -> None:
        url = self._path(f"/issues/comments/{int(comment_id)}")
        self._call("edit a comment", "PATCH", url, json={"body": body})

    def resolve_comment(self, comment_id: int) -> bool:
        """Resolve a review comment (POST /pulls/comments/{id}/resolve, Gitea 1.26+); False where the
        server has no such route (Forgejo answers 405, an older Gitea 404)."""
        url = self._path(f"/pulls/comments/{int(comment_id)}/resolve")
        return self._call("resolve a review comment", "POST", url, expect=(404, 405)).status_code < 400

    def react(self, comment_id: int, content: str) -> None:
        """React to a comment (e.g. 👀 `eyes` on a `/review`)."""
        url = self._path(f"/issues/comments/{int(comment_id)}/reactions")
        self._call("react to a comment", "POST", url, json={"content": content})

    def edit_pull(self, number: int, data: dict[str, Any]) -> None:
        """PATCH /pulls/{index} (e.g. the description, for `/describe --update`)."""
        self._call("edit the pull request", "PATCH", self._path(f"/pulls/{number}"), json=data)


def _message(resp: httpx.Response) -> str:
    try:
        data = resp.json()
    except ValueError:
        return resp.text.splitlines()[0][:200] if resp.text else ""
    msg = data.get("message") if isinstance(data, dict) else None
    return str(msg or "").splitlines()[0][:200] if msg else ""


class _Refused(Exception):
    """A response with an error status (raised inside the retry loop, never outside it)."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def _read(exc: Exception) -> http.Failure | None:
    if isinstance(exc, _Refused):
        code = exc.response.status_code
        return http.Failure(code, code in RETRY_STATUS)
    if isinstance(exc, httpx.TransportError):  # ConnectError among them
        return http.Failure(None, transient=True)
    return None
