"""GitLab's REST API as prereview uses it (python-gitlab underneath): merge requests, notes, discussions.

Constructing a GitLabAPI does no I/O. Every call goes through `_call`, which retries 429 and 5xx through
`forges/http.py` (the sleep is injectable) and turns auth failures into one-line errors.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ...types import PrereviewError, Throttled, install_extra
from .. import http
from ..base import PermissionDenied, Rejected

if TYPE_CHECKING:
    import gitlab
    from gitlab.v4.objects import Project, ProjectMergeRequest

T = TypeVar("T")
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
# python-gitlab would otherwise sleep on 429 by itself; we retry in one place instead.
_ONCE: dict[str, Any] = {"obey_rate_limit": False, "retry_transient_errors": False}


@dataclass(frozen=True)
class DiffRefs:
    """The three commits a GitLab position is relative to (MR `diff_refs` or a diff version)."""

    base_sha: str
    start_sha: str
    head_sha: str


def api_root(url: str) -> str:
    """python-gitlab wants the server URL (…/gitlab), CI gives the API URL (…/gitlab/api/v4)."""
    url = url.rstrip("/")
    return url[: -len("/api/v4")] if url.endswith("/api/v4") else url


class GitLabAPI:
    def __init__(
        self,
        url: str,
        token: str | None,
        project: str | int,
        *,
        ssl_verify: bool | str = True,
        timeout: float = 30.0,
        retries: int = 4,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = api_root(url)
        self.project = str(project)
        self._token = token
        self._ssl_verify = ssl_verify
        self._timeout = timeout
        self._retries = retries
        self._sleep = sleep
        self._gl: gitlab.Gitlab | None = None
        self._own: str | None = None
        self._retry_after: float | None = None  # the last refusal's Retry-After, in seconds

    def __repr__(self) -> str:  # never show the token
        return f"{type(self).__name__}({self.url!r}, project={self.project!r})"

    # -- plumbing ---------------------------------------------------------------------------

    def _client(self) -> gitlab.Gitlab:
        if self._gl is None:
            try:
                import gitlab
            except ImportError:
                raise PrereviewError(f"python-gitlab is not installed; {install_extra('gitlab')}") from None
            self._gl = gitlab.Gitlab(
                self.url,
                private_token=self._token,
                ssl_verify=self._ssl_verify,
                timeout=self._timeout,
                keep_base_url=True,
            )
            self._gl.session.hooks["response"].append(self._note_retry_after)
        return self._gl

    def _note_retry_after(self, response: Any, *args: Any, **kwargs: Any) -> None:
        after = str(response.headers.get("Retry-After") or "").strip()
        if response.status_code in RETRY_STATUS:
            self._retry_after = float(after) if after.isdigit() else None

    def _project(self) -> Project:
        return self._client().projects.get(self.project, lazy=True)

    def _mr(self, iid: int) -> ProjectMergeRequest:
        return self._project().mergerequests.get(iid, lazy=True)

    def _call(
        self,
        what: str,
        fn: Callable[..., T],
        *args: Any,
        expect: tuple[int, ...] = (),
        landed: Callable[[], T | None] | None = None,
        **kwargs: Any,
    ) -> T:
        """Run one API call: retry 429/5xx/connection errors with backoff (`forges/http.py`); every other
        failure is one line, except the status codes in `expect`, which the caller handles
        (python-gitlab's exception). A write that is not idempotent passes `landed`: before it is sent
        again, what GitLab holds is read back, and when the first try landed (its response was lost) that
        is returned instead."""

        def send() -> T:
            self._retry_after = None
            return fn(*args, **kwargs, **_ONCE)

        return http.call(
            send,
            read=lambda exc: self._read(exc, expect),
            explain=lambda exc, failure, tries, wait: self._explain(what, failure, tries, exc, wait),
            tries=self._retries + 1,
            sleep=self._sleep,
            landed=landed,
        )

    def _read(self, exc: Exception, expect: tuple[int, ...]) -> http.Failure | None:
        import gitlab.exceptions as glexc
        import requests

        if isinstance(exc, glexc.GitlabError):
            code = exc.response_code
            if code in expect:
                return None
            return http.Failure(code, code in RETRY_STATUS, self._retry_after)
        if isinstance(exc, requests.exceptions.SSLError):
            return http.Failure(None, transient=False)
        if isinstance(exc, requests.exceptions.ConnectionError):
            return http.Failure(None, transient=True)
        return None

    def _explain(
        self, what: str, failure: http.Failure, tries: int, exc: Exception, wait: float = 60.0
    ) -> PrereviewError:
        import requests

        code = failure.status
        if code is None and isinstance(exc, requests.exceptions.SSLError):
            return PrereviewError(
                f"TLS verification failed for {self.url}; point CI_SERVER_TLS_CA_FILE or "
                "REQUESTS_CA_BUNDLE at the CA bundle of your GitLab instance"
            )
        if code is None:
            return Throttled(
                f"cannot reach GitLab at {self.url}; check CI_API_V4_URL and the network", retry_after=60.0
            )
        message = str(getattr(exc, "error_message", "") or "")
        if code == 429:
            return Throttled(
                f"GitLab's rate limit refused {what} {tries} time(s) (429); it asks to wait {wait:.0f} s",
                retry_after=max(wait, 1.0),
            )
        if code in RETRY_STATUS:
            return Throttled(
                f"GitLab answered {code} to {what} {tries} time(s); it is overloaded or down, "
                "run the job again later",
                retry_after=max(wait, 60.0),
            )
        if code in (401, 403):
            return PermissionDenied(
                f"GitLab answered {code} to {what}; the token needs the api scope and the Developer "
                "role on the project (a project or group access token)"
            )
        if code == 404:
            return PrereviewError(
                f"GitLab answered 404 to {what} in project {self.project} at {self.url}; check "
                "CI_PROJECT_ID / CI_MERGE_REQUEST_IID and that the token's user is a member of the project"
            )
        return PrereviewError(
            f"GitLab answered {code} to {what}: {message.splitlines()[0] if message else ''}"
        )

    # -- reading ----------------------------------------------------------------------------

    def merge_request(self, iid: int) -> dict[str, Any]:
        mr = self._call(f"get merge request !{iid}", self._project().mergerequests.get, iid)
        return dict(mr.attributes)

    def versions(self, iid: int) -> list[dict[str, Any]]:
        """MR diff versions, newest first."""
        return [
            dict(v.attributes) for v in self._call("list MR versions", self._mr(iid).diffs.list, get_all=True)
        ]

    def diff_refs(self, iid: int, head_sha: str | None = None) -> DiffRefs:
        """Refs for positions: the version whose head is `head_sha` (the reviewed commit), else the newest."""
        for v in self.versions(iid):
            if head_sha is None or v.get("head_commit_sha") == head_sha:
                return DiffRefs(v["base_commit_sha"], v["start_commit_sha"], v["head_commit_sha"])
        refs = self.merge_request(iid).get("diff_refs") or {}
        if not refs.get("head_sha"):
            raise PrereviewError(
                f"merge request !{iid} has no diff yet (diff_refs is empty); run again in a moment"
            )
        return DiffRefs(refs["base_sha"], refs["start_sha"], refs["head_sha"])

    def access_level(self, user_id: int) -> int:
        """The user's access level on the project, inherited memberships included (10 guest, 20 reporter,
        30 developer, 40 maintainer, 50 owner); 0 when not a member (GET /projects/:id/members/all/:id)."""
        import gitlab.exceptions as glexc

        members = self._project().members_all
        try:
            member = self._call("get a project member", members.get, user_id, expect=(404,))
        except glexc.GitlabError:  # 404: not a member (only 404 reaches here)
            return 0
        return int(member.access_level)

    def own_username(self) -> str:
        """The token's user (GET /user), whose notes alone carry the bot's state."""
        if self._own is None:
            user = self._call("get the token's user", self._client().http_get, "/user")
            self._own = str(user.get("username") or "") if isinstance(user, dict) else ""
        return self._own

    def discussions(self, iid: int) -> list[dict[str, Any]]:
        items = self._call("list MR discussions", self._mr(iid).discussions.list, get_all=True, per_page=100)
        return [dict(d.attributes) for d in items]

    def notes(self, iid: int) -> list[dict[str, Any]]:
        items = self._call("list MR notes", self._mr(iid).notes.list, get_all=True, per_page=100)
        return [dict(n.attributes) for n in items]

    # -- writing ----------------------------------------------------------------------------

    def create_discussion(
        self, iid: int, body: str, position: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        data: dict[str, Any] = {"body": body}
        if position is not None:
            data["position"] = position
        import gitlab.exceptions as glexc

        def landed() -> Any:
            for d in reversed(self._mr(iid).discussions.list(get_all=True, **_ONCE)):
                notes = d.attributes.get("notes") or [{}]
                if (notes[0].get("body") or "").strip() == body.strip():
                    return d
            return None

        try:
            created = self._call(
                "create a discussion", self._mr(iid).discussions.create, data, expect=(400,), landed=landed
            )
        except glexc.GitlabError as exc:  # 400, e.g. Note {:line_code=>["can't be blank", ...]}
            raise Rejected(str(exc.error_message)) from None
        return dict(created.attributes)

    def resolve_discussion(self, iid: int, discussion_id: str) -> None:
        self._call(
            "resolve a discussion", self._mr(iid).discussions.update, discussion_id, {"resolved": True}
        )

    def create_note(self, iid: int, body: str) -> dict[str, Any]:
        def landed() -> Any:
            found = [n for n in self._mr(iid).notes.list(get_all=True, **_ONCE) if _same(n, body)]
            return found[-1] if found else None

        return dict(
            self._call("create a note", self._mr(iid).notes.create, {"body": body}, landed=landed).attributes
        )

    def update_note(self, iid: int, note_id: int, body: str) -> None:
        self._call("update a note", self._mr(iid).notes.update, note_id, {"body": body})

    def create_merge_request(self, data: dict[str, Any]) -> dict[str, Any]:
        """POST /projects/:id/merge_requests (source_branch, target_branch, title, description, …)."""
        created = self._call("create a merge request", self._project().mergerequests.create, data)
        return dict(created.attributes)

    def reply_to_discussion(self, iid: int, discussion_id: str, body: str) -> None:
        """POST …/discussions/:discussion_id/notes: an answer inside a thread."""
        discussion = self._mr(iid).discussions.get(discussion_id, lazy=True)

        def landed() -> Any:
            for thread in self._mr(iid).discussions.list(get_all=True, **_ONCE):
                if str(thread.get_id()) == str(discussion_id):
                    notes = thread.attributes.get("notes") or []
                    mine = [n for n in notes if (n.get("body") or "").strip() == body.strip()]
                    return mine[-1] if mine else None
            return None

        self._call("reply in a discussion", discussion.notes.create, {"body": body}, landed=landed)

    def update_merge_request(self, iid: int, data: dict[str, Any]) -> None:
        """PUT /projects/:id/merge_requests/:iid (e.g. the description, for `/describe --update`)."""
        self._call("update the merge request", self._project().mergerequests.update, iid, data)

    def award_emoji(self, iid: int, note_id: int, name: str) -> None:
        """React to a note (e.g. 👀 on a `/review` command)."""
        note = self._mr(iid).notes.get(note_id, lazy=True)
        self._call("award an emoji", note.awardemojis.create, {"name": name})


def _same(note: Any, body: str) -> bool:
    return str(note.attributes.get("body") or "").strip() == body.strip()


def quoted_project(project: str) -> str:
    from urllib.parse import quote

    return quote(project, safe="")
