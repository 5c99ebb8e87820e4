"""Bitbucket Data Center / Server REST API (`/rest/api/1.0`, `/rest/insights/1.0`) over httpx.

One repository (`PROJECT/slug`) per client; constructing one does no I/O. Every call goes through
`_call`, over `forges/http.py`: 429 (its `Retry-After`), 5xx and connection errors are retried with
backoff (the sleep is injectable); other failures become one-line errors that name the fix
(`errors.py`); a new comment whose answer was lost is looked for before it is sent again. The token (an
HTTP access token, sent as `Authorization: Bearer …`) lives in the client's headers only: never in a
repr, an error or a log.

Endpoints (Atlassian's published OpenAPI for Bitbucket Data Center, `/api/latest/…` = `/api/1.0/…`):
pull request GET/PUT, its raw diff (`…/pull-requests/{id}.diff`), its activities (the comments with
their anchors and replies), comment POST, GET and PUT (PUT carries the current `version`; 409 if
stale; `threadResolved` resolves a thread), Code Insights report PUT and annotations DELETE/POST, and
the users with write permission on the repository (`may_write`, who may run comment commands).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx

from ...types import ChangeRef, ChangeRequest, PrereviewError
from .. import http
from ..base import PermissionDenied, Rejected
from . import errors

PAGE = 100  # activities per page (Bitbucket's default page is 25; its maximum is larger)


def server_root(url: str) -> str:
    """`https://host[/context]` or `…/rest/api/1.0` -> `https://host[/context]`."""
    url = url.rstrip("/")
    for tail in ("/rest/api/1.0", "/rest/api/latest", "/rest"):
        if url.endswith(tail):
            return url[: -len(tail)]
    return url


def split_repo(repo: str) -> tuple[str, str]:
    """`PROJECT/slug` -> ("PROJECT", "slug"); a personal repository's project is `~user`."""
    key, _, slug = repo.partition("/")
    if not key or not slug or "/" in slug or key in (".", "..") or slug in (".", ".."):
        raise PrereviewError(
            f"Bitbucket repository {repo!r} is not PROJECT/slug; set PREREVIEW_BITBUCKET_REPO"
        )
    return key, slug


class BitbucketApi:
    def __init__(
        self,
        url: str,
        token: str | None,
        repo: str,
        *,
        user: str | None = None,
        timeout: float = 30.0,
        retries: int = 4,
        sleep: Callable[[float], None] = time.sleep,
        verify: bool | str = True,
    ) -> None:
        if not url:
            raise PrereviewError(
                "no Bitbucket URL; set PREREVIEW_BITBUCKET_URL (https://bitbucket.example.com)"
            )
        self.url = server_root(url)
        self.repo = repo
        self.project, self.slug = split_repo(repo)
        self._token = token
        self._user = user or None
        self._timeout, self._retries, self._sleep, self._verify = timeout, retries, sleep, verify
        self._http: httpx.Client | None = None

    def __repr__(self) -> str:  # never show the token
        return f"BitbucketApi({self.url!r}, repo={self.repo!r})"

    # -- plumbing ---------------------------------------------------------------------------

    def _client(self) -> httpx.Client:
        if self._http is None:
            headers = {"Accept": "application/json"}
            if self._token:
                headers["Authorization"] = f"Bearer {self._token}"
            self._http = httpx.Client(headers=headers, timeout=self._timeout, verify=self._verify)
        return self._http

    def _repo_path(self, api: str) -> str:
        project, slug = quote(self.project, safe="~"), quote(self.slug, safe="")
        return f"{self.url}/rest/{api}/1.0/projects/{project}/repos/{slug}"

    def _pr(self, number: int, tail: str = "") -> str:
        return f"{self._repo_path('api')}/pull-requests/{int(number)}{tail}"

    def _report(self, sha: str, key: str, tail: str = "") -> str:
        return (
            f"{self._repo_path('insights')}/commits/{quote(sha, safe='')}/reports/{quote(key, safe='')}{tail}"
        )

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
        """One API call through `forges/http.py`: 429/5xx/connection errors retried with backoff; any
        other failure is one line (`errors.py`), except the codes in `expect`, which the caller handles.
        A write that is not idempotent passes `landed`: before it is sent again, what Bitbucket holds
        is read back, and a first try that landed (its answer lost) is not posted twice."""

        def send() -> httpx.Response:
            resp = self._client().request(method, url, params=params, json=json)
            if not self._user and resp.headers.get("X-AUSERNAME"):
                self._user = resp.headers["X-AUSERNAME"]
            if resp.status_code >= 400 and resp.status_code not in expect:
                raise errors.Refused(resp)
            return resp

        def found() -> httpx.Response | None:
            data = landed() if landed is not None else None
            return None if data is None else httpx.Response(200, json=data)

        return http.call(
            send,
            read=errors.read,
            explain=lambda exc, failure, tries, wait: errors.explain(
                what, self.url, self.repo, failure, tries, exc
            ),
            tries=self._retries + 1,
            sleep=self._sleep,
            landed=found if landed is not None else None,
        )

    # -- reading ----------------------------------------------------------------------------

    def own_user(self, number: int) -> str:
        """The token's user (its `slug`): Bitbucket names it in the `X-AUSERNAME` header of every
        authenticated answer; only its comments carry the bot's state."""
        if not self._user:
            self.pull(number)
        if not self._user:
            raise PrereviewError(
                "Bitbucket did not say which user the token belongs to (no X-AUSERNAME header); set "
                "PREREVIEW_BITBUCKET_USER to the token's user slug"
            )
        return self._user

    def pull(self, number: int) -> dict[str, Any]:
        data = self._call(f"get pull request #{number}", "GET", self._pr(number)).json()
        return data if isinstance(data, dict) else {}

    def diff_text(self, number: int) -> str:
        """The pull request's unified diff as Bitbucket computes it (GET …/pull-requests/{id}.diff)."""
        return self._call(f"get the diff of #{number}", "GET", self._pr(number, ".diff")).text

    def comments(self, number: int) -> list[dict[str, Any]]:
        """Every comment on the pull request, replies included, each with `anchor` when it is inline
        (read from the activities: Bitbucket has no endpoint listing all of a PR's comments)."""
        found: dict[Any, dict[str, Any]] = {}  # by id: a reply may also be its own activity
        start: int | None = 0
        while start is not None:
            page = self._call(
                "list pull request activities",
                "GET",
                self._pr(number, "/activities"),
                params={"start": start, "limit": PAGE},
            ).json()
            for act in page.get("values") or [] if isinstance(page, dict) else []:
                c = act.get("comment") if isinstance(act, dict) and act.get("action") == "COMMENTED" else None
                if isinstance(c, dict) and act.get("commentAction", "ADDED") == "ADDED":
                    anchor = act.get("commentAnchor")
                    for x in _thread(c, anchor if isinstance(anchor, dict) else None):
                        if x.get("id") not in found or "parent_id" in x:  # the copy inside its thread
                            found[x.get("id")] = x
            last = not isinstance(page, dict) or page.get("isLastPage", True)
            nxt = page.get("nextPageStart") if isinstance(page, dict) else None
            start = None if last or not isinstance(nxt, int) else nxt
        return list(found.values())

    def may_write(self, user: str) -> bool:
        """Whether `user` (a slug) may write to the repository, directly or through a group, the project
        or a global permission: GET /rest/api/1.0/users filtered by REPO_WRITE on this repository
        (any authenticated token may ask). `filter` matches slugs, names and e-mails by substring, so
        only an exact slug counts; the first page is read (a miss refuses, never the other way)."""
        params = {
            "filter": user,
            "permission.1": "REPO_WRITE",
            "permission.1.projectKey": self.project,
            "permission.1.repositorySlug": self.slug,
        }
        page = self._call("check a user's permission", "GET", f"{self.url}/rest/api/1.0/users", params=params)
        data = page.json()
        values = data.get("values") if isinstance(data, dict) else None
        return any(isinstance(u, dict) and u.get("slug") == user for u in values or [])

    def fetch(self, ref: ChangeRef) -> ChangeRequest:
        """A ChangeRequest from the API alone (no checkout): what a webhook worker reviews."""
        if ref.number is None:
            raise PrereviewError("a Bitbucket change needs the pull request id")
        pr = self.pull(ref.number)
        head = str((pr.get("fromRef") or {}).get("latestCommit") or "")
        base = str((pr.get("toRef") or {}).get("latestCommit") or "")
        if not head or not base:
            raise PrereviewError(f"pull request #{ref.number} has no source/target commit yet; retry shortly")
        return ChangeRequest(
            ref=ref,
            base_sha=base,
            head_sha=head,
            diff_text=self.diff_text(ref.number),
            title=str(pr.get("title") or ""),
            body=str(pr.get("description") or ""),
            author=str(((pr.get("author") or {}).get("user") or {}).get("slug") or ""),
            url=str(((pr.get("links") or {}).get("self") or [{}])[0].get("href") or ""),
        )

    # -- writing ----------------------------------------------------------------------------

    def create_comment(
        self, number: int, text: str, anchor: dict[str, Any] | None = None, *, parent: int | None = None
    ) -> dict[str, Any]:
        """POST …/comments (inline with an `anchor`, a reply with a `parent`); an anchor Bitbucket
        refuses (400/409: a line not in the diff, a stale hash) becomes Rejected, so the caller can move
        the finding to the summary."""
        data: dict[str, Any] = {"text": text}
        if anchor:
            data["anchor"] = anchor
        if parent is not None:
            data["parent"] = {"id": int(parent)}
        url = self._pr(number, "/comments")

        def landed() -> dict[str, Any] | None:  # the same text, by the token's user, at the same place
            mine = [c for c in self.comments(number) if (c.get("author") or {}).get("slug") == self._user]
            line = (anchor or {}).get("line")
            same = [c for c in mine if c.get("text") == text and (c.get("anchor") or {}).get("line") == line]
            return same[-1] if same else None

        resp = self._call("create a comment", "POST", url, json=data, expect=(400, 409), landed=landed)
        if resp.status_code in (400, 409):
            raise Rejected(errors.message(resp))
        out = resp.json()
        return out if isinstance(out, dict) else {}

    def comment(self, number: int, comment_id: int) -> dict[str, Any]:
        """GET …/comments/{id}: the comment as it is now (its `version` for an edit)."""
        data = self._call("get a comment", "GET", self._pr(number, f"/comments/{int(comment_id)}")).json()
        return data if isinstance(data, dict) else {}

    def resolve_thread(self, number: int, comment_id: int, text: str, version: int) -> None:
        """PUT …/comments/{id} with `threadResolved` (Bitbucket 8.9+), text unchanged."""
        url = self._pr(number, f"/comments/{int(comment_id)}")
        data = {"text": text, "version": int(version), "threadResolved": True}
        resp = self._call("resolve a comment thread", "PUT", url, json=data, expect=(400,))
        if resp.status_code == 400:  # before Bitbucket 8.9 a thread cannot be resolved
            raise PermissionDenied(f"Bitbucket did not resolve a thread ({errors.message(resp)}); 8.9+ can")

    def update_comment(self, number: int, comment_id: int, text: str, version: int) -> dict[str, Any]:
        """PUT …/comments/{id} with the version last read (Bitbucket's optimistic lock)."""
        url = self._pr(number, f"/comments/{int(comment_id)}")
        out = self._call("edit a comment", "PUT", url, json={"text": text, "version": int(version)}).json()
        return out if isinstance(out, dict) else {}

    def update_pull(self, number: int, description: str, version: int) -> None:
        """PUT …/pull-requests/{id}: the description (for `/describe --update`), with its version."""
        data = {"description": description, "version": int(version)}
        self._call("edit the pull request", "PUT", self._pr(number), json=data)

    def put_report(self, sha: str, key: str, report: dict[str, Any]) -> None:
        """PUT a Code Insights report on a commit (creates or replaces the report with this key)."""
        self._call("set the Code Insights report", "PUT", self._report(sha, key), json=report)

    def replace_annotations(self, sha: str, key: str, annotations: list[dict[str, Any]]) -> None:
        """The report's annotations become exactly `annotations` (DELETE all, then POST in batches)."""
        self._call("delete Code Insights annotations", "DELETE", self._report(sha, key, "/annotations"))
        for i in range(0, len(annotations), 100):
            batch = {"annotations": annotations[i : i + 100]}
            self._call(
                "add Code Insights annotations", "POST", self._report(sha, key, "/annotations"), json=batch
            )


def _thread(c: dict[str, Any], anchor: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A comment and its replies, flattened; the anchor stays on the root."""
    out = [{**c, "anchor": anchor} if anchor else dict(c)]
    for reply in c.get("comments") or []:
        if isinstance(reply, dict):
            out += _thread({**reply, "parent_id": c.get("id")}, None)
    return out
