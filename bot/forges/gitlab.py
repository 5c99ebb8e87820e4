"""The GitLab forge (python-gitlab): fetch a merge request, list and post its notes and discussions.

Constructing a GitLabForge does no I/O. Every call goes through `_call`, which retries 429 and 5xx
with exponential backoff (the sleep is injectable) and turns auth failures into one-line errors.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..change import git
from ..types import ChangeRef, ChangeRequest, PrereviewError, Throttled
from .protocols import DiffRefs, PermissionDenied, Rejected

if TYPE_CHECKING:
    import gitlab
    from gitlab.v4.objects import Project, ProjectMergeRequest

    from ..progress import Progress

T = TypeVar("T")
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
MAX_WAIT_SECONDS = 120.0  # the longest `Retry-After` waited in one go; beyond, the job is re-queued
# python-gitlab would otherwise sleep on 429 by itself; we retry in one place instead.
_ONCE: dict[str, Any] = {"obey_rate_limit": False, "retry_transient_errors": False}


def api_root(url: str) -> str:
    """python-gitlab wants the server URL (…/gitlab), CI gives the API URL (…/gitlab/api/v4)."""
    url = url.rstrip("/")
    return url[: -len("/api/v4")] if url.endswith("/api/v4") else url


class GitLabForge:
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
        return f"GitLabForge({self.url!r}, project={self.project!r})"

    # -- plumbing ---------------------------------------------------------------------------

    def _client(self) -> gitlab.Gitlab:
        if self._gl is None:
            try:
                import gitlab
            except ImportError:
                raise PrereviewError(
                    "python-gitlab is not installed; pip install 'prereview[gitlab]'"
                ) from None
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
        """Run one API call: retry 429/5xx/connection errors with backoff; every other failure is one line,
        except the status codes in `expect`, which the caller handles (python-gitlab's exception).

        A write that is not idempotent passes `landed`: before it is sent again, what GitLab holds is read
        back, and when the first try landed (its response was lost) that is returned instead."""
        import gitlab.exceptions as glexc
        import requests

        delay = 1.0
        for attempt in range(self._retries + 1):
            wait = delay
            try:
                if attempt and landed is not None and (found := landed()) is not None:
                    return found
                self._retry_after = None
                return fn(*args, **kwargs, **_ONCE)
            except glexc.GitlabError as exc:
                code = exc.response_code
                if code in expect:
                    raise
                wait = self._retry_after if self._retry_after is not None else delay
                if code not in RETRY_STATUS or attempt == self._retries or wait > MAX_WAIT_SECONDS:
                    raise self._explain(what, code, attempt + 1, str(exc.error_message), wait) from None
            except requests.exceptions.SSLError:
                raise PrereviewError(
                    f"TLS verification failed for {self.url}; point CI_SERVER_TLS_CA_FILE or "
                    "REQUESTS_CA_BUNDLE at the CA bundle of your GitLab instance"
                ) from None
            except requests.exceptions.ConnectionError:
                if attempt == self._retries:
                    raise Throttled(
                        f"cannot reach GitLab at {self.url}; check CI_API_V4_URL and the network",
                        retry_after=60.0,
                    ) from None
            self._sleep(wait)
            delay = min(delay * 2, 30.0)
        raise AssertionError("unreachable")

    def _explain(
        self, what: str, code: int | None, tries: int, message: str, wait: float = 60.0
    ) -> PrereviewError:
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

    def diff_text(self, iid: int) -> str:
        """The MR's unified diff from the API alone (/diffs, or /changes before GitLab 15.7)."""
        import gitlab.exceptions as glexc

        path = f"/projects/{_enc(self.project)}/merge_requests/{iid}/diffs"
        try:
            entries = self._call(
                "list MR diffs", self._client().http_list, path, get_all=True, per_page=100, expect=(404,)
            )
        except glexc.GitlabError as exc:
            if exc.response_code != 404:
                raise
            changes = self._call("get MR changes", self._mr(iid).changes, access_raw_diffs=True)
            entries = changes["changes"] if isinstance(changes, dict) else []
        return "".join(_git_diff_entry(e) for e in entries if isinstance(e, dict))

    def fetch(self, ref: ChangeRef) -> ChangeRequest:
        """A ChangeRequest from the API alone (no checkout): what a webhook server reviews."""
        if ref.number is None:
            raise PrereviewError("a GitLab change needs the merge request iid")
        mr = self.merge_request(ref.number)
        refs = mr.get("diff_refs") or {}
        if not refs.get("head_sha"):
            raise PrereviewError(
                f"merge request !{ref.number} has no diff yet (diff_refs is empty); retry shortly"
            )
        return ChangeRequest(
            ref=ref,
            base_sha=refs["base_sha"],
            head_sha=refs["head_sha"],
            diff_text=self.diff_text(ref.number),
            title=mr.get("title") or "",
            body=mr.get("description") or "",
            author=(mr.get("author") or {}).get("username", ""),
            url=mr.get("web_url") or "",
            labels=tuple(str(x) for x in (mr.get("labels") or []) if x),
        )

    @staticmethod
    def checkout(change: ChangeRequest, dest: Path, progress: Progress | None = None) -> Path:
        """`dest` is the CI checkout: make sure base and head are reachable there (shallow clones)."""
        for label, sha in (("base", change.base_sha), ("head", change.head_sha)):
            if _has(dest, sha):
                continue
            if progress is not None:
                progress.message(
                    f"{label} commit {sha[:12]} is not in the checkout (shallow clone); fetching it"
                )
            git.git(dest, "fetch", "--no-tags", "--quiet", "--depth=1", "origin", sha, check=False)
            if not _has(dest, sha):
                raise PrereviewError(
                    f"{label} commit {sha[:12]} is not in the checkout and could not be fetched; "
                    "set GIT_DEPTH: 0 (or a larger GIT_DEPTH) for the prereview job"
                )
        return dest

    def posted(self, change: ChangeRequest) -> set[str]:
        from ..publish.gitlab import posted_fingerprints

        assert change.ref.number is not None
        return posted_fingerprints(self.discussions(change.ref.number))

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


def _has(repo: Path, sha: str) -> bool:
    try:
        git.git(repo, "cat-file", "-e", f"{sha}^{{commit}}")
    except git.GitError:
        return False
    return True


def _enc(project: str) -> str:
    from urllib.parse import quote

    return quote(project, safe="")


def _git_diff_entry(e: dict[str, Any]) -> str:
    """One /diffs entry as `git diff` prints it, so bot.diff.parse reads API and local diffs alike."""
    old, new = e.get("old_path") or e.get("new_path"), e.get("new_path") or e.get("old_path")
    body = e.get("diff") or ""
    head = [f"diff --git a/{old} b/{new}"]
    if e.get("new_file"):
        head.append(f"new file mode {e.get('b_mode') or '100644'}")
    elif e.get("deleted_file"):
        head.append(f"deleted file mode {e.get('a_mode') or '100644'}")
    elif e.get("renamed_file"):
        head += [f"rename from {old}", f"rename to {new}"]
    if not body.strip():
        return "\n".join(head) + "\n"
    if body.startswith("@@"):  # /diffs without unidiff=true omits the file headers
        src = "/dev/null" if e.get("new_file") else f"a/{old}"
        dst = "/dev/null" if e.get("deleted_file") else f"b/{new}"
        head += [f"--- {src}", f"+++ {dst}"]
    return "\n".join(head) + "\n" + (body if body.endswith("\n") else body + "\n")
