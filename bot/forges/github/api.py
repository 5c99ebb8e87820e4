"""GitHub's REST and GraphQL API as prereview uses it (PyGithub underneath): the one place that talks HTTP.

Every call goes through `forges/http.py`'s retry loop: 5xx and rate limits (429, or 403 with
`Retry-After` / `x-ratelimit-remaining: 0`) are retried with backoff, writes are paced, and `sleep` is
injectable. Constructing a GitHubAPI does no I/O.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ...types import PrereviewError, Throttled
from .. import http
from ..base import PermissionDenied
from .errors import describe_gone, describe_limit, describe_read, describe_write, read_failure
from .graphql import RESOLVE_MUTATION, THREADS_QUERY, GraphQLFailure, ReviewThread

T = TypeVar("T")
Sleep = Callable[[float], None]


@dataclass(frozen=True)
class PostedComment:
    """A review comment already on the PR (ours when it carries a fingerprint marker)."""

    id: int
    body: str
    path: str
    line: int | None  # None when GitHub considers it outdated (the line changed)
    login: str = ""  # its author


@dataclass(frozen=True)
class IssueNote:
    id: int
    body: str
    login: str


class GitHubAPI:
    """The REST calls prereview makes, with retries and write pacing. Constructing it does no I/O."""

    def __init__(
        self,
        api_url: str,
        token: str,
        repo: str,
        *,
        sleep: Sleep = time.sleep,
        write_interval: float = 1.0,
        tries: int = 5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        from github import Auth, Github

        if "/" not in repo:
            raise PrereviewError(f"repository '{repo}' must be OWNER/NAME; set GITHUB_REPOSITORY")
        # PyGithub's own retry and throttling sleep with time.sleep; ours is injectable and testable.
        self._gh = Github(
            auth=Auth.Token(token),
            base_url=api_url.rstrip("/"),
            retry=None,
            per_page=100,
            seconds_between_requests=None,
            seconds_between_writes=None,
            timeout=60,
        )
        self.repo_name = repo
        self.api_url = api_url.rstrip("/")
        self._sleep, self.write_interval, self._tries, self._clock = sleep, write_interval, tries, clock
        self._last_write: float | None = None
        self._pulls: dict[int, Any] = {}

    # -- plumbing ---------------------------------------------------------------------------------
    def call(
        self, fn: Callable[[], T], *, write: bool = False, landed: Callable[[], T | None] | None = None
    ) -> T:
        """`fn()`, retried on 5xx, rate limits and connection errors (`forges/http.py`). A write that is not
        idempotent passes `landed`: before it is sent again, what the forge holds is read back, and when the
        first try did land (its response was lost), that is returned instead of posting it twice."""
        if write:
            self._pace()
        return http.call(
            fn,
            read=read_failure,
            explain=lambda exc, failure, tries, wait: self._explain(exc, failure, wait, write),
            tries=self._tries,
            sleep=self._sleep,
            landed=landed,
        )

    def _explain(self, exc: Exception, failure: http.Failure, wait: float, write: bool) -> BaseException:
        status = failure.status
        if status is None:
            why = f"cannot reach the GitHub API at {self.api_url} ({type(exc).__name__})"
            return Throttled(f"{why}; check GITHUB_API_URL", retry_after=60.0)
        if failure.transient and status in (403, 429):  # a rate limit, not a permission
            return Throttled(describe_limit(exc, wait), retry_after=wait)
        if status == 404 and write:
            return PrereviewError(describe_gone(exc, self.repo_name))
        if status in (401, 403) and write:
            return PermissionDenied(describe_write(exc))
        if status in (401, 403, 404):
            return PrereviewError(describe_read(exc, self.repo_name))
        return exc  # e.g. a 422 the caller handles, or a 5xx that outlasted the retries

    def _pace(self) -> None:
        # Writes trigger notifications; GitHub asks for about a second between them (secondary limits).
        if self._last_write is not None and self.write_interval > 0:
            gap = self._clock() - self._last_write
            if gap < self.write_interval:
                self._sleep(self.write_interval - gap)
        self._last_write = self._clock()

    def _repo(self) -> Any:
        return self._gh.withLazy(True).get_repo(self.repo_name)  # no GET /repos/{o}/{r}

    def pull(self, number: int) -> Any:
        """The PR object, fetched once (touching `.head` makes PyGithub load it inside the retry)."""
        if number not in self._pulls:

            def load() -> Any:
                pr = self._repo().get_pull(number)
                _ = pr.head.sha
                return pr

            self._pulls[number] = self.call(load)
        return self._pulls[number]

    def request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        landed: Callable[[], dict[str, Any] | None] | None = None,
    ) -> dict[str, Any]:
        """A raw JSON call (endpoints PyGithub lacks or wraps too tightly); path under /repos/OWNER/NAME."""
        url = f"{self.api_url}/repos/{self.repo_name}{path}"

        def go() -> dict[str, Any]:
            _, data = self._gh.requester.requestJsonAndCheck(method, url, input=body)
            return data  # type: ignore[no-any-return]

        return self.call(go, write=method != "GET", landed=landed)

    def _listed(self, path: str) -> list[dict[str, Any]]:
        """Every item of a list endpoint under /repos/OWNER/NAME (all pages), read without retries (the
        caller's retry loop retries)."""
        from github.PaginatedList import PaginatedList

        url = f"{self.api_url}/repos/{self.repo_name}{path}"
        pages = PaginatedList(_Raw, self._gh.requester, url, {"per_page": 100})  # type: ignore[type-var]
        return [x._rawData for x in pages]

    def _has_body(self, where: str, body: str, **match: Any) -> dict[str, Any] | None:
        """The item at `where` whose body is `body` (and whose fields equal `match`): a write that landed."""
        want = body.strip()
        for item in reversed(self._listed(where)):
            if (item.get("body") or "").strip() == want and all(item.get(k) == v for k, v in match.items()):
                return item
        return None

    def graphql(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        """One GraphQL request (`…/graphql`; GHES `…/api/graphql`); GraphQL errors raise GraphQLFailure."""
        base = self.api_url.rstrip("/")
        url = base[: -len("/v3")] + "/graphql" if base.endswith("/api/v3") else base + "/graphql"

        def go() -> dict[str, Any]:
            _, data = self._gh.requester.requestJsonAndCheck(
                "POST", url, input={"query": query, "variables": variables}
            )
            return data  # type: ignore[no-any-return]

        data = self.call(go, write=query.lstrip().startswith("mutation"))
        if data.get("errors"):
            raise GraphQLFailure("; ".join(str(e.get("message", "")) for e in data["errors"]))
        return data.get("data") or {}

    def review_threads(self, number: int) -> list[ReviewThread]:
        """The PR's review threads (id, resolved, the first comment's REST id), all pages."""
        owner, name = self.repo_name.split("/", 1)
        out: list[ReviewThread] = []
        after: str | None = None
        while True:
            data = self.graphql(
                THREADS_QUERY, {"owner": owner, "name": name, "number": number, "after": after}
            )
            page = ((data.get("repository") or {}).get("pullRequest") or {}).get("reviewThreads") or {}
            for t in page.get("nodes") or []:
                first = ((t.get("comments") or {}).get("nodes") or [{}])[0] or {}
                out.append(ReviewThread(t["id"], bool(t["isResolved"]), first.get("databaseId")))
            info = page.get("pageInfo") or {}
            if not info.get("hasNextPage"):
                return out
            after = info.get("endCursor")

    def resolve_review_thread(self, thread_id: str) -> None:
        self.graphql(RESOLVE_MUTATION, {"threadId": thread_id})

    # -- reads ------------------------------------------------------------------------------------
    def files(self, number: int) -> list[Any]:
        pr = self.pull(number)
        return self.call(lambda: list(pr.get_files()))

    def review_comments(self, number: int) -> list[PostedComment]:
        pr = self.pull(number)
        raw = self.call(lambda: list(pr.get_review_comments()))
        return [
            PostedComment(c.id, c.body or "", c.path, c.line, c.user.login if c.user else "") for c in raw
        ]

    def issue_comments(self, number: int) -> list[IssueNote]:
        pr = self.pull(number)
        raw = self.call(lambda: list(pr.get_issue_comments()))
        return [IssueNote(c.id, c.body or "", c.user.login if c.user else "") for c in raw]

    # -- writes -----------------------------------------------------------------------------------
    def create_review(self, number: int, body: dict[str, Any]) -> dict[str, Any]:
        return self.request(
            "POST", f"/pulls/{number}/reviews", body, lambda: self._review_landed(number, body)
        )

    def _review_landed(self, number: int, body: dict[str, Any]) -> dict[str, Any] | None:
        """The review `body` describes, when it is on the PR already: its text at its commit, with its
        inline comments (each carries its finding's fingerprint) among the PR's."""
        review = self._has_body(
            f"/pulls/{number}/reviews", body.get("body") or "", commit_id=body.get("commit_id")
        )
        if review is None:
            return None
        wanted = {(c.get("path"), (c.get("body") or "").strip()) for c in body.get("comments") or []}
        if wanted:
            posted = {
                (c.get("path"), (c.get("body") or "").strip())
                for c in self._listed(f"/pulls/{number}/comments")
            }
            if not wanted <= posted:
                return None
        return review

    def create_review_comment(self, number: int, body: dict[str, Any]) -> dict[str, Any]:
        """One review comment outside a review (`subject_type: file` comments on a whole file)."""
        path = f"/pulls/{number}/comments"
        return self.request(
            "POST", path, body, lambda: self._has_body(path, body["body"], path=body.get("path"))
        )

    def reply_to_review_comment(self, number: int, comment_id: int, text: str) -> dict[str, Any]:
        """An answer inside the review thread whose first comment is `comment_id`."""
        return self.request(
            "POST",
            f"/pulls/{number}/comments/{comment_id}/replies",
            {"body": text},
            lambda: self._has_body(f"/pulls/{number}/comments", text, in_reply_to_id=comment_id),
        )

    def edit_review_comment(self, comment_id: int, body: str) -> None:
        self.request("PATCH", f"/pulls/comments/{comment_id}", {"body": body})

    def create_issue_comment(self, number: int, body: str) -> dict[str, Any]:
        path = f"/issues/{number}/comments"
        return self.request("POST", path, {"body": body}, lambda: self._has_body(path, body))

    def edit_issue_comment(self, comment_id: int, body: str) -> None:
        self.request("PATCH", f"/issues/comments/{comment_id}", {"body": body})

    def delete_issue_comment(self, comment_id: int) -> None:
        self.request("DELETE", f"/issues/comments/{comment_id}")

    def react(self, comment_id: int, content: str) -> None:
        self.request("POST", f"/issues/comments/{comment_id}/reactions", {"content": content})

    def update_pull(self, number: int, body: dict[str, Any]) -> dict[str, Any]:
        """PATCH /repos/{o}/{r}/pulls/{n} (title, body, state, base): `/describe --update`."""
        self._pulls.pop(number, None)  # the cached PR object is stale now
        return self.request("PATCH", f"/pulls/{number}", body)

    def create_pull(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST /repos/{o}/{r}/pulls (title, head, base, body, draft, …)."""
        return self.request("POST", "/pulls", body)


class _Raw:
    """A list item kept as the JSON GitHub sent (for `PaginatedList`)."""

    def __init__(self, requester: Any, headers: Any, attributes: dict[str, Any], *args: Any) -> None:
        self._rawData = attributes
