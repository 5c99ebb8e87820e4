"""The GitHub forge: a pull request fetched through the REST API (PyGithub), optionally with a local checkout.

`GitHubForge.fetch` works from the API alone (PR metadata + the per-file patches of
`GET /pulls/{n}/files`), so a webhook server can review without a checkout. When a workspace holds a
checkout where both the base and the head are reachable (and the head is checked out), the local git
diff drives the review and the workspace becomes `workdir`.

`GitHubAPI` is the one place that talks HTTP: it retries 5xx and rate limits (429, or 403 with
`Retry-After` / `x-ratelimit-remaining: 0`) with backoff and paces writes, with an injectable `sleep`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from ..change import git
from ..change.diff import Hunk, parse, to_text
from ..types import ChangeRef, ChangeRequest, PrereviewError, Throttled
from .base import PermissionDenied

T = TypeVar("T")
Sleep = Callable[[float], None]

# Longest wait we accept for one rate-limit reset before giving up (a primary limit may reset in an hour).
MAX_WAIT_SECONDS = 120.0


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
        return None
    after = _header(exc, "retry-after")
    if after is not None and after.strip().isdigit():
        return float(after)
    if rate_limited and _header(exc, "x-ratelimit-remaining") == "0":
        reset = _header(exc, "x-ratelimit-reset")
        if reset and reset.isdigit():
            return max(1.0, float(reset) - (now if now is not None else time.time()))
    return float(2**attempt)


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
        """`fn()`, retried on 5xx, rate limits and connection errors. A write that is not idempotent
        passes `landed`: before it is sent again, what the forge holds is read back, and when the first
        try did land (its response was lost), that is returned instead of posting it twice."""
        import requests
        from github import GithubException

        if write:
            self._pace()
        for attempt in range(self._tries):
            last = attempt == self._tries - 1
            try:
                if attempt and landed is not None and (found := landed()) is not None:
                    return found
                return fn()
            except GithubException as exc:
                wait = retry_wait(exc, attempt)
                if wait is None or last or wait > MAX_WAIT_SECONDS:
                    if wait is not None and exc.status in (403, 429):  # a rate limit, not a permission
                        raise Throttled(_describe_limit(exc, wait), retry_after=wait) from None
                    if exc.status == 404 and write:
                        raise PrereviewError(_describe_gone(exc, self.repo_name)) from None
                    if exc.status in (401, 403) and write:
                        raise PermissionDenied(_describe(exc)) from None
                    if exc.status in (401, 403, 404):
                        raise PrereviewError(_describe_read(exc, self.repo_name)) from None
                    raise
                self._sleep(wait)
            except requests.ConnectionError as exc:
                if last:
                    why = f"cannot reach the GitHub API at {self.api_url} ({type(exc).__name__})"
                    raise Throttled(f"{why}; check GITHUB_API_URL", retry_after=60.0) from None
                self._sleep(float(2**attempt))
        raise AssertionError("unreachable")

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


def _message(exc: Any) -> str:
    """The message GitHub sent with an error (its JSON `message`, else the body as text)."""
    data = getattr(exc, "data", None)
    return str(data.get("message")) if isinstance(data, dict) else str(data or "")


def _describe(exc: Any) -> str:
    msg = _message(exc)
    return (
        f"GitHub refused a write ({exc.status}: {msg}); give the token `pull-requests: write` "
        "(a fork PR's token is read-only)"
    )


def _describe_limit(exc: Any, wait: float) -> str:
    msg = _message(exc)
    return (
        f"GitHub's rate limit for this token is used up ({exc.status}: {msg}); it allows calls again in "
        f"{wait:.0f} s (more than the {MAX_WAIT_SECONDS:.0f} s prereview waits in one go)"
    )


def _describe_gone(exc: Any, repo: str) -> str:
    msg = _message(exc)
    return (
        f"GitHub answered 404 ({msg}) to a write in {repo}: the pull request, comment or thread it "
        "targets no longer exists (deleted, or the PR closed), or the token cannot see the repository"
    )


def _describe_read(exc: Any, repo: str) -> str:
    msg = _message(exc)
    return (
        f"GitHub answered {exc.status} ({msg}) reading {repo}; check GITHUB_TOKEN, GITHUB_REPOSITORY "
        "and the pull request number"
    )


def patch_to_diff(files: Iterable[Any]) -> tuple[str, list[str]]:
    """Unified diff text from `/pulls/{n}/files` entries; also the paths GitHub sent without a patch."""
    out: list[str] = []
    no_patch: list[str] = []
    for f in files:
        old = getattr(f, "previous_filename", None) or f.filename
        patch = getattr(f, "patch", None)
        if not patch:
            no_patch.append(f.filename)
            continue
        src = "/dev/null" if f.status == "added" else f"a/{old}"
        dst = "/dev/null" if f.status == "removed" else f"b/{f.filename}"
        out += [f"diff --git a/{old} b/{f.filename}", f"--- {src}", f"+++ {dst}", patch.rstrip("\n")]
    return ("\n".join(out) + "\n") if out else "", no_patch


class GraphQLFailure(Exception):
    """GitHub answered a GraphQL request with errors (e.g. a token that may not resolve threads)."""


@dataclass(frozen=True)
class ReviewThread:
    id: str  # GraphQL node id
    resolved: bool
    first_comment: int | None  # REST id (databaseId) of the comment that opened the thread


THREADS_QUERY = """query($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        nodes { id isResolved comments(first: 1) { nodes { databaseId } } }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
}"""
RESOLVE_MUTATION = """mutation($threadId: ID!) {
  resolveReviewThread(input: {threadId: $threadId}) { thread { id isResolved } }
}"""


class GitHubForge:
    """Fetch a PR (API, or API + local checkout) and expose the API to the publisher."""

    def __init__(self, api: GitHubAPI, *, workspace: Path | None = None) -> None:
        self.api = api
        self.workspace = workspace
        self.missing_patches: list[str] = []

    def fetch(self, ref: ChangeRef) -> ChangeRequest:
        if ref.number is None:
            raise PrereviewError("no pull request number; pass --pr N or run on a pull_request event")
        pr = self.api.pull(ref.number)
        head, base = pr.head.sha, pr.base.sha
        meta = ChangeRequest(
            ref=ref,
            base_sha=base,
            head_sha=head,
            diff_text="",
            title=pr.title or "",
            body=pr.body or "",
            author=pr.user.login if pr.user else "",
            url=pr.html_url or "",
            labels=tuple(label.name for label in (pr.labels or []) if label.name),
        )
        if not self._head_checked_out(head):
            diff_text, self.missing_patches = patch_to_diff(self.api.files(ref.number))
            return replace(meta, diff_text=diff_text)
        try:
            merge_base = git.git(self.workspace, "merge-base", base, head).strip()  # type: ignore[arg-type]
        except git.GitError:  # a shallow clone: the API's diff, the checkout still gives file context
            diff_text, self.missing_patches = patch_to_diff(self.api.files(ref.number))
            return replace(meta, diff_text=diff_text, workdir=self.workspace)
        # GitHub shows base...head (three dots): the diff from the merge base, so lines match its diff.
        diff_text = git.diff(self.workspace, merge_base, head)  # type: ignore[arg-type]
        return replace(meta, base_sha=merge_base, diff_text=diff_text, workdir=self.workspace)

    def _head_checked_out(self, head: str) -> bool:
        ws = self.workspace
        if ws is None or not (ws / ".git").exists():
            return False
        try:
            return git.git(ws, "rev-parse", "HEAD").strip() == head
        except git.GitError:
            return False

    def local_diff(self, old: str, new: str) -> str | None:
        """`old..new` from the workspace (incremental review); None when either is not reachable there."""
        if self.workspace is None or not (self.workspace / ".git").exists():
            return None
        try:
            return git.diff(
                self.workspace, git.resolve(self.workspace, old), git.resolve(self.workspace, new)
            )
        except PrereviewError:
            return None


def _number(change: ChangeRequest) -> int:
    if change.ref.number is None:
        raise PrereviewError("the change has no pull request number")
    return change.ref.number


def restrict_diff(pr_diff: str, new_commits_diff: str) -> str:
    """The PR diff's hunks that hold a line added by the new commits (incremental review on a push).

    Both diffs end at the same head, so new-side line numbers compare directly; hunks stay whole so the
    model sees their context and comments stay on lines GitHub accepts.
    """
    added: dict[str, set[int]] = {}
    for f in parse(new_commits_diff).files:
        added[f.path] = {ln.new_no for h in f.hunks for ln in h.lines if ln.kind == "+" and ln.new_no}

    def touched(path: str, h: Hunk) -> bool:
        return any(ln.kind == "+" and ln.new_no in added.get(path, ()) for ln in h.lines)

    return to_text([(f, [h for h in f.hunks if touched(f.path, h)]) for f in parse(pr_diff).files])
