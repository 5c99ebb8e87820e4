"""An emulated GitHub REST API for tests: a real HTTP server on 127.0.0.1, one pull request, in a thread.

Every request body is validated against shared/platform/openapi/github-rest-subset.openapi.json (a body
that does not match gets GitHub's 422 and is recorded in `.schema_errors`), and the server answers like
GitHub where prereview depends on it:

- 422 "… line must be part of the diff" when a review comment sits on a line outside the PR diff
  (the whole review is rejected, as GitHub does);
- 403 "Resource not accessible by integration" for writes with a read-only token (`read_only=True`,
  e.g. a fork PR's GITHUB_TOKEN);
- injected failures (`fail(...)`): 429/403 with Retry-After, 5xx;
- pagination via `Link` headers (`per_page`, `page`);
- the diff media type on GET /pulls/{n};
- POST /pulls (create a pull request; `/fix` in branch mode), which the shared subset lacks: its request
  body schema is in EXTRA_OPS, transcribed from GitHub's own OpenAPI description; with `remote=` (a bare
  git repository) the head and base branches must exist there, as on GitHub.

    with FakeGitHub(repo="o/r", pr_number=1, diff_text=diff, head_sha=h, base_sha=b) as gh:
        ...  # point the client at gh.url (GITHUB_API_URL)
        gh.reviews, gh.comments, gh.issue_comments, gh.reactions, gh.check_runs, gh.sarifs, gh.requests,
        gh.pulls_created
"""

from __future__ import annotations

import base64
import gzip
import itertools
import json
import re
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jsonschema
from unidiff import PatchSet

from tests.conftest import PLATFORM

SPEC_PATH = PLATFORM / "openapi" / "github-rest-subset.openapi.json"
BOT_LOGIN = "github-actions[bot]"
DOCS = "https://docs.github.com/rest"
BAD_PATH = (
    "Pull request review thread path is invalid and Pull request review thread diff hunk can't be blank"
)
LINE_NOT_IN_DIFF = (
    "Pull request review thread line must be part of the diff, Pull request review thread start line must be "
    "part of the same hunk as the line., and Pull request review thread diff hunk can't be blank"
)


# Operations prereview uses that the shared subset lacks. "Create a pull request" (operationId pulls/create):
# the request body schema verbatim from github/rest-api-description
# descriptions/api.github.com/api.github.com.2022-11-28.json (commit 0000036e42b5e7121c2b1ac244cb7bba1d2f3914,
# MIT), the same file and commit the subset was transcribed from; descriptions shortened.
PULLS_CREATE: dict[str, Any] = {
    "operationId": "pulls/create",
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "title": {"type": "string", "description": "Required unless `issue` is specified."},
                        "head": {"type": "string", "description": "Branch with the changes (user:branch)."},
                        "head_repo": {"type": "string", "format": "repo.nwo"},
                        "base": {"type": "string", "description": "Branch to pull the changes into."},
                        "body": {"type": "string"},
                        "maintainer_can_modify": {"type": "boolean"},
                        "draft": {"type": "boolean"},
                        "issue": {"type": "integer", "format": "int64"},
                    },
                    "required": ["head", "base"],
                }
            }
        },
    },
}
# "Update a pull request" (operationId pulls/update; `/describe --update`): the request body schema from the
# same description file (github/rest-api-description, descriptions/api.github.com/api.github.com.json,
# MIT); descriptions shortened.
PULLS_UPDATE: dict[str, Any] = {
    "operationId": "pulls/update",
    "requestBody": {
        "required": False,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "title": {"type": "string", "description": "The title of the pull request."},
                        "body": {"type": "string", "description": "The contents of the pull request."},
                        "state": {"type": "string", "enum": ["open", "closed"]},
                        "base": {"type": "string", "description": "The branch to pull the changes into."},
                        "maintainer_can_modify": {"type": "boolean"},
                    },
                }
            }
        },
    },
}
EXTRA_OPS: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/repos/{owner}/{repo}/pulls", PULLS_CREATE),
    ("PATCH", "/repos/{owner}/{repo}/pulls/{pull_number}", PULLS_UPDATE),
]


@dataclass
class Request:
    method: str
    path: str  # without the API prefix and query, e.g. /repos/o/r/pulls/1/reviews
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    status: int = 0


@dataclass
class _Failure:
    method: str
    path: re.Pattern[str]
    status: int
    headers: dict[str, str]
    body: dict[str, Any]
    times: int


@dataclass
class _FileInfo:
    filename: str
    previous_filename: str | None
    status: str
    patch: str | None
    additions: int
    deletions: int
    right: dict[int, int] = field(default_factory=dict)  # new line -> hunk index
    left: dict[int, int] = field(default_factory=dict)  # old line -> hunk index


def _load_spec(path: Path) -> tuple[dict[str, Any], list[tuple[str, re.Pattern[str], dict[str, Any]]]]:
    spec = json.loads(path.read_text())
    ops = []
    items = [(m.upper(), t, op) for t, item in spec["paths"].items() for m, op in item.items()]
    for method, template, op in [*items, *EXTRA_OPS]:
        if method != "PARAMETERS":
            ops.append((method, re.compile("^" + re.sub(r"\{[^}]+\}", r"[^/]+", template) + "$"), op))
    return spec, ops


def _split_diff(diff_text: str) -> list[_FileInfo]:
    files = []
    for pf in PatchSet(diff_text.splitlines(keepends=True)):
        name = pf.path
        for pre in ("a/", "b/"):
            name = name.removeprefix(pre)
        prev = pf.source_file.removeprefix("a/") if pf.is_rename else None
        status = (
            "added"
            if pf.is_added_file
            else "removed"
            if pf.is_removed_file
            else "renamed"
            if pf.is_rename
            else ("modified")
        )
        info = _FileInfo(name, prev, status, None, pf.added, pf.removed)
        patch_lines: list[str] = []
        for i, hunk in enumerate(pf):
            patch_lines.append(str(hunk).rstrip("\n"))
            for ln in hunk:
                if ln.target_line_no is not None and ln.line_type in "+ ":
                    info.right[ln.target_line_no] = i
                if ln.source_line_no is not None and ln.line_type in "- ":
                    info.left[ln.source_line_no] = i
        info.patch = "\n".join(patch_lines) if patch_lines else None
        files.append(info)
    return files


class FakeGitHub:
    """One repository with one pull request; state is plain lists the tests read."""

    def __init__(
        self,
        repo: str = "o/r",
        pr_number: int = 1,
        diff_text: str = "",
        head_sha: str = "1" * 40,
        base_sha: str = "0" * 40,
        *,
        title: str = "A change",
        body: str = "",
        author: str = "contributor",
        labels: tuple[str, ...] = (),
        read_only: bool = False,
        fork: bool = False,
        head_ref: str = "feature",
        remote: Path | None = None,
        spec_path: Path = SPEC_PATH,
        bot_login: str = BOT_LOGIN,
    ) -> None:
        """`bot_login`: whom the token's comments are written as (a personal access token's user, e.g.)."""
        self.bot_login = bot_login
        self.repo, self.pr_number = repo, pr_number
        self.title, self.body, self.author = title, body, author
        self.labels = list(labels)
        self.pull_edits = 0  # PATCH /pulls/{n} (the description)
        self.resolved_threads: set[int] = set()  # root comment ids of threads resolved over GraphQL
        self.read_only_graphql = False  # the token may comment but not resolve threads
        self.read_only, self.fork = read_only, fork
        self.head_ref, self.remote = head_ref, remote
        self.pulls_created: list[dict[str, Any]] = []
        self.reviews: list[dict[str, Any]] = []
        self.comments: list[dict[str, Any]] = []  # pull request review comments
        self.issue_comments: list[dict[str, Any]] = []
        self.reactions: list[dict[str, Any]] = []
        self.check_runs: list[dict[str, Any]] = []
        self.sarifs: list[dict[str, Any]] = []  # decoded SARIF documents
        self.statuses: list[dict[str, Any]] = []
        self.requests: list[Request] = []
        self.schema_errors: list[str] = []
        self._failures: list[_Failure] = []
        self._ids = itertools.count(1000)
        self._lock = threading.Lock()
        self._spec, self._ops = _load_spec(spec_path)
        self.set_head(head_sha, diff_text, base_sha=base_sha)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def _bot_type(self) -> str:
        return "Bot" if self.bot_login.endswith("[bot]") else "User"

    # -- control ----------------------------------------------------------------------------------
    def set_head(self, head_sha: str, diff_text: str, *, base_sha: str | None = None) -> None:
        """A push to the PR: new head and the PR's new (base...head) diff."""
        self.head_sha, self.diff_text = head_sha, diff_text
        if base_sha is not None:
            self.base_sha = base_sha
        self.files = _split_diff(diff_text) if diff_text.strip() else []

    def fail(
        self,
        method: str,
        path_regex: str,
        status: int,
        *,
        times: int = 1,
        headers: dict[str, str] | None = None,
        message: str | None = None,
    ) -> None:
        """The next `times` matching requests get `status` (e.g. 429 with {"Retry-After": "1"}, 502)."""
        body = {
            "message": message
            or {
                429: "API rate limit exceeded",
                403: "You have exceeded a secondary rate "
                "limit. Please wait a few minutes before you try again.",
            }.get(status, "Server Error"),
            "documentation_url": f"{DOCS}/overview/rate-limits-for-the-rest-api",
        }
        self._failures.append(
            _Failure(method.upper(), re.compile(path_regex), status, headers or {}, body, times)
        )

    def calls(self, method: str, path_suffix: str) -> int:
        """How many requests (answered with any status) matched METHOD and ended with path_suffix."""
        return sum(1 for r in self.requests if r.method == method.upper() and r.path.endswith(path_suffix))

    @property
    def url(self) -> str:
        assert self._server is not None, "use FakeGitHub as a context manager (or call start())"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeGitHub:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
                pass

            def _any(self) -> None:
                fake._handle(self)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any  # noqa: N815

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- HTTP -------------------------------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(h.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        req = Request(h.command, parts.path, query, {k.lower(): v for k, v in h.headers.items()}, body)
        with self._lock:
            self.requests.append(req)
            status, headers, payload = self._dispatch(req)
        req.status = status
        data = (
            payload
            if isinstance(payload, bytes)
            else (b"" if payload is None else json.dumps(payload).encode())
        )
        h.send_response(status)
        base = {
            "Content-Type": "application/json; charset=utf-8",
            "X-RateLimit-Limit": "5000",
            "X-RateLimit-Remaining": "4999",
            "X-RateLimit-Reset": "4102444800",
            "X-GitHub-Media-Type": "github.v3",
        }
        for k, v in {**base, **headers, "Content-Length": str(len(data))}.items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)

    def _dispatch(self, req: Request) -> tuple[int, dict[str, str], Any]:
        auth = req.headers.get("authorization", "")
        if not auth.lower().startswith(("token ", "bearer ")):
            return 401, {}, {"message": "Requires authentication", "documentation_url": DOCS}
        for f in self._failures:
            if f.times > 0 and f.method == req.method and f.path.search(req.path):
                f.times -= 1
                return f.status, f.headers, f.body
        if req.path in ("/graphql", "/api/graphql") and req.method == "POST":
            from tests.fakes import github_graphql

            return github_graphql.handle(self, req.body)
        op = next((o for m, rx, o in self._ops if m == req.method and rx.match(req.path)), None)
        if op is None:
            self.schema_errors.append(f"{req.method} {req.path}: not in the OpenAPI subset")
            return 404, {}, {"message": "Not Found", "documentation_url": DOCS}
        error = self._validate(op, req.body)
        if error is not None:
            self.schema_errors.append(f"{req.method} {req.path}: {error}")
            return 422, {}, {"message": "Invalid request.\n\n" + error, "documentation_url": DOCS}
        if req.method != "GET" and self.read_only:
            return (
                403,
                {},
                {
                    "message": "Resource not accessible by integration",
                    "documentation_url": f"{DOCS}/pulls/reviews#create-a-review-for-a-pull-request",
                },
            )
        prefix = f"/repos/{self.repo}"
        if not req.path.startswith(prefix + "/"):
            return 404, {}, {"message": "Not Found", "documentation_url": DOCS}
        return self._route(req, req.path[len(prefix) :])

    def _validate(self, op: dict[str, Any], body: Any) -> str | None:
        schema = (op.get("requestBody") or {}).get("content", {}).get("application/json", {}).get("schema")
        if schema is None:
            return None
        if body is None and not op["requestBody"].get("required"):
            return None
        resolver_schema = {**schema, "components": self._spec["components"]}
        try:
            jsonschema.validate(body, resolver_schema)
        except jsonschema.ValidationError as exc:
            return f"{'/'.join(str(p) for p in exc.absolute_path) or 'body'}: {exc.message}"
        return None

    def _route(self, req: Request, path: str) -> tuple[int, dict[str, str], Any]:
        n = self.pr_number
        routes: list[tuple[str, str, Any]] = [
            ("GET", rf"/pulls/{n}", self._get_pull),
            ("PATCH", rf"/pulls/{n}", self._update_pull),
            (
                "GET",
                rf"/pulls/{n}/files",
                lambda r, m: self._page(r, [self._file_json(f) for f in self.files]),
            ),
            ("GET", rf"/pulls/{n}/commits", lambda r, m: self._page(r, [{"sha": self.head_sha}])),
            ("GET", rf"/pulls/{n}/reviews", lambda r, m: self._page(r, self.reviews)),
            ("POST", rf"/pulls/{n}/reviews", self._create_review),
            ("GET", rf"/pulls/{n}/comments", lambda r, m: self._page(r, self.comments)),
            ("POST", rf"/pulls/{n}/comments", self._create_review_comment),
            ("POST", rf"/pulls/{n}/comments/(\d+)/replies", lambda r, m: self._reply(r, int(m[1]))),
            ("DELETE", r"/pulls/comments/(\d+)", lambda r, m: self._delete(self.comments, int(m[1]))),
            ("DELETE", r"/issues/comments/(\d+)", lambda r, m: self._delete(self.issue_comments, int(m[1]))),
            ("PATCH", r"/pulls/comments/(\d+)", lambda r, m: self._edit(self.comments, int(m[1]), r.body)),
            ("GET", rf"/issues/{n}/comments", lambda r, m: self._page(r, self.issue_comments)),
            ("POST", rf"/issues/{n}/comments", self._create_issue_comment),
            (
                "PATCH",
                r"/issues/comments/(\d+)",
                lambda r, m: self._edit(self.issue_comments, int(m[1]), r.body),
            ),
            ("POST", r"/(issues|pulls)/comments/(\d+)/reactions", self._react),
            ("POST", r"/check-runs", self._create_check_run),
            ("PATCH", r"/check-runs/(\d+)", self._update_check_run),
            ("POST", r"/code-scanning/sarifs", self._upload_sarif),
            ("POST", r"/statuses/([0-9a-f]+)", lambda r, m: self._append(self.statuses, dict(r.body))),
            ("POST", r"/pulls", self._create_pull),
        ]
        for method, rx, fn in routes:
            m = re.fullmatch(rx, path)
            if method == req.method and m:
                return fn(req, m)  # type: ignore[no-any-return]
        return 404, {}, {"message": "Not Found", "documentation_url": DOCS}

    # -- endpoints --------------------------------------------------------------------------------
    def _api(self, path: str) -> str:
        return f"{self.url}/repos/{self.repo}{path}"

    def pull_json(self) -> dict[str, Any]:
        head_repo = f"forker/{self.repo.split('/')[1]}" if self.fork else self.repo
        n = self.pr_number
        return {
            "url": self._api(f"/pulls/{n}"),
            "id": 100 + n,
            "number": n,
            "state": "open",
            "draft": False,
            "title": self.title,
            "body": self.body,
            "user": {"login": self.author, "type": "User"},
            "labels": [{"id": 7000 + i, "name": name} for i, name in enumerate(self.labels)],
            "html_url": f"https://github.example/{self.repo}/pull/{n}",
            "issue_url": self._api(f"/issues/{n}"),
            "comments_url": self._api(f"/issues/{n}/comments"),
            "review_comments_url": self._api(f"/pulls/{n}/comments"),
            "head": {
                "sha": self.head_sha,
                "ref": self.head_ref,
                "label": self.head_ref,
                "repo": {"full_name": head_repo, "fork": self.fork},
            },
            "base": {"sha": self.base_sha, "ref": "main", "label": "main", "repo": {"full_name": self.repo}},
            "changed_files": len(self.files),
        }

    def _get_pull(self, req: Request, m: re.Match[str]) -> tuple[int, dict[str, str], Any]:
        if "diff" in req.headers.get("accept", ""):
            return 200, {"Content-Type": "text/plain; charset=utf-8"}, self.diff_text.encode()
        return 200, {}, self.pull_json()

    def _update_pull(self, req: Request, m: re.Match[str]) -> tuple[int, dict[str, str], Any]:
        body = req.body or {}
        self.title = body.get("title", self.title)
        self.body = body.get("body", self.body)
        self.pull_edits += 1
        return 200, {}, self.pull_json()

    def _file_json(self, f: _FileInfo) -> dict[str, Any]:
        out: dict[str, Any] = {
            "sha": "f" * 40,
            "filename": f.filename,
            "status": f.status,
            "additions": f.additions,
            "deletions": f.deletions,
            "changes": f.additions + f.deletions,
        }
        if f.patch is not None:
            out["patch"] = f.patch
        if f.previous_filename:
            out["previous_filename"] = f.previous_filename
        return out

    def _page(self, req: Request, items: list[Any]) -> tuple[int, dict[str, str], Any]:
        per_page = min(int(req.query.get("per_page", 30)), 100)
        page = int(req.query.get("page", 1))
        last = max(1, -(-len(items) // per_page))
        links = []
        base = f"{self.url}{req.path}?per_page={per_page}&page="
        if page < last:
            links += [f'<{base}{page + 1}>; rel="next"', f'<{base}{last}>; rel="last"']
        if page > 1:
            links += [f'<{base}1>; rel="first"', f'<{base}{page - 1}>; rel="prev"']
        headers = {"Link": ", ".join(links)} if links else {}
        return 200, headers, items[(page - 1) * per_page : page * per_page]

    def _check_comment(self, c: dict[str, Any]) -> str | None:
        f = next((x for x in self.files if x.filename == c["path"]), None)
        if f is None:
            return BAD_PATH
        if c.get("subject_type") == "file":  # a comment on the whole file: any file of the PR
            return None
        if "line" not in c:
            return None if "position" in c else LINE_NOT_IN_DIFF
        side = f.right if c.get("side", "RIGHT") == "RIGHT" else f.left
        if c["line"] not in side:
            return LINE_NOT_IN_DIFF
        if "start_line" in c:
            start_side = f.right if c.get("start_side", c.get("side", "RIGHT")) == "RIGHT" else f.left
            if (
                c["start_line"] not in start_side
                or start_side[c["start_line"]] != side[c["line"]]
                or (c["start_line"] >= c["line"])
            ):
                return LINE_NOT_IN_DIFF
        return None

    def _create_review(self, req: Request, m: re.Match[str]) -> tuple[int, dict[str, str], Any]:
        body = req.body or {}
        if body.get("event") == "APPROVE":
            return (
                422,
                {},
                {
                    "message": "Unprocessable Entity",
                    "errors": ["GitHub Actions is not permitted to approve pull requests."],
                },
            )
        for c in body.get("comments", []):
            problem = self._check_comment(c)
            if problem:
                return (
                    422,
                    {},
                    {
                        "message": "Unprocessable Entity",
                        "errors": [problem],
                        "status": "422",
                        "documentation_url": f"{DOCS}/pulls/reviews#create-a-review-for-a-pull-request",
                    },
                )
        commit = body.get("commit_id", self.head_sha)
        review = {
            "id": next(self._ids),
            "user": {"login": self.bot_login, "type": self._bot_type},
            "body": body.get("body", ""),
            "state": "COMMENTED" if body.get("event") == "COMMENT" else "PENDING",
            "commit_id": commit,
            "html_url": f"https://github.example/{self.repo}/pull/{self.pr_number}#review",
            "pull_request_url": self._api(f"/pulls/{self.pr_number}"),
        }
        self.reviews.append(review)
        for c in body.get("comments", []):
            self._store_comment(c, review["id"], commit)
        return 200, {}, review

    def _store_comment(
        self, c: dict[str, Any], review_id: int | None, commit: str, in_reply_to: int | None = None
    ) -> dict[str, Any]:
        cid = next(self._ids)
        comment = {
            "id": cid,
            "pull_request_review_id": review_id,
            "path": c["path"],
            "line": c.get("line"),
            "side": c.get("side", "RIGHT"),
            "start_line": c.get("start_line"),
            "start_side": c.get("start_side"),
            "original_line": c.get("line"),
            "subject_type": c.get("subject_type", "line"),
            "body": c["body"],
            "commit_id": commit,
            "original_commit_id": commit,
            "user": {"login": self.bot_login, "type": self._bot_type},
            "url": self._api(f"/pulls/comments/{cid}"),
            "diff_hunk": "@@",
            "html_url": f"https://github.example/{self.repo}/pull/{self.pr_number}#discussion_r{cid}",
        }
        if in_reply_to is not None:
            comment["in_reply_to_id"] = in_reply_to
        self.comments.append(comment)
        return comment

    def _create_review_comment(self, req: Request, m: re.Match[str]) -> tuple[int, dict[str, str], Any]:
        body = req.body
        if body.get("in_reply_to"):
            return self._reply(req, int(body["in_reply_to"]))
        problem = self._check_comment(body)
        if problem:
            return (
                422,
                {},
                {"message": "Unprocessable Entity", "errors": [problem], "documentation_url": DOCS},
            )
        return 201, {}, self._store_comment(body, None, body.get("commit_id", self.head_sha))

    def _reply(self, req: Request, parent_id: int) -> tuple[int, dict[str, str], Any]:
        parent = next((c for c in self.comments if c["id"] == parent_id), None)
        if parent is None:
            return 404, {}, {"message": "Not Found", "documentation_url": DOCS}
        reply = {
            "path": parent["path"],
            "line": parent["line"],
            "side": parent["side"],
            "body": req.body["body"],
        }
        return 201, {}, self._store_comment(reply, None, parent["commit_id"], in_reply_to=parent_id)

    def _delete(self, items: list[dict[str, Any]], cid: int) -> tuple[int, dict[str, str], Any]:
        before = len(items)
        items[:] = [c for c in items if c["id"] != cid]
        if len(items) == before:
            return 404, {}, {"message": "Not Found", "documentation_url": DOCS}
        return 204, {}, None

    def _create_issue_comment(self, req: Request, m: re.Match[str]) -> tuple[int, dict[str, str], Any]:
        if len(req.body["body"]) > 65536:
            return (
                422,
                {},
                {
                    "message": "Validation Failed",
                    "errors": [
                        {
                            "resource": "IssueComment",
                            "code": "unprocessable",
                            "field": "data",
                            "message": "Body is too long (maximum is 65536 characters)",
                        }
                    ],
                    "documentation_url": DOCS,
                },
            )
        cid = next(self._ids)
        comment = {
            "id": cid,
            "body": req.body["body"],
            "user": {"login": self.bot_login, "type": self._bot_type},
            "url": self._api(f"/issues/comments/{cid}"),
            "html_url": f"https://github.example/{self.repo}/pull/{self.pr_number}#issuecomment-{cid}",
            "issue_url": self._api(f"/issues/{self.pr_number}"),
            "author_association": "NONE",
        }
        self.issue_comments.append(comment)
        return 201, {}, comment

    def add_issue_comment(
        self, body: str, *, login: str = "octocat", association: str = "OWNER"
    ) -> dict[str, Any]:
        """A comment written by a person (e.g. a `/review` command)."""
        cid = next(self._ids)
        comment = {
            "id": cid,
            "body": body,
            "user": {"login": login, "type": "User"},
            "author_association": association,
            "url": self._api(f"/issues/comments/{cid}"),
        }
        self.issue_comments.append(comment)
        return comment

    def _edit(
        self, items: list[dict[str, Any]], cid: int, body: dict[str, Any]
    ) -> tuple[int, dict[str, str], Any]:
        item = next((c for c in items if c["id"] == cid), None)
        if item is None:
            return 404, {}, {"message": "Not Found", "documentation_url": DOCS}
        item["body"] = body["body"]
        item["edits"] = item.get("edits", 0) + 1
        return 200, {}, item

    def _react(self, req: Request, m: re.Match[str]) -> tuple[int, dict[str, str], Any]:
        reaction = {
            "id": next(self._ids),
            "content": req.body["content"],
            "subject_id": int(m[2]),
            "kind": m[1],
            "user": {"login": self.bot_login},
        }
        self.reactions.append(reaction)
        return 201, {}, reaction

    def _append(self, items: list[dict[str, Any]], item: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        item["id"] = next(self._ids)
        items.append(item)
        return 201, {}, item

    def _create_check_run(self, req: Request, m: re.Match[str]) -> tuple[int, dict[str, str], Any]:
        run = dict(req.body)
        run["annotations"] = list((run.get("output") or {}).get("annotations", []))
        run["url"] = self._api(f"/check-runs/{len(self.check_runs)}")
        status, headers, out = self._append(self.check_runs, run)
        out["url"] = self._api(f"/check-runs/{out['id']}")
        return status, headers, out

    def _update_check_run(self, req: Request, m: re.Match[str]) -> tuple[int, dict[str, str], Any]:
        run = next((r for r in self.check_runs if r["id"] == int(m[1])), None)
        if run is None:
            return 404, {}, {"message": "Not Found", "documentation_url": DOCS}
        run["annotations"] += (req.body.get("output") or {}).get("annotations", [])
        run.update({k: v for k, v in req.body.items() if k != "output"})
        return 200, {}, run

    def _upload_sarif(self, req: Request, m: re.Match[str]) -> tuple[int, dict[str, str], Any]:
        doc = json.loads(gzip.decompress(base64.b64decode(req.body["sarif"])))
        sid = f"sarif-{next(self._ids)}"
        self.sarifs.append(
            {"id": sid, "commit_sha": req.body["commit_sha"], "ref": req.body["ref"], "sarif": doc}
        )
        return 202, {}, {"id": sid, "url": self._api(f"/code-scanning/sarifs/{sid}")}

    def _branch_exists(self, name: str) -> bool:
        if self.remote is None:
            return True
        proc = subprocess.run(
            ["git", "-C", str(self.remote), "rev-parse", "--verify", "--quiet", f"refs/heads/{name}"],
            capture_output=True,
        )
        return proc.returncode == 0

    def _create_pull(self, req: Request, m: re.Match[str]) -> tuple[int, dict[str, str], Any]:
        body = req.body
        invalid = [f for f in ("head", "base") if not self._branch_exists(body[f])]
        if invalid:
            errors = [{"resource": "PullRequest", "field": f, "code": "invalid"} for f in invalid]
            return 422, {}, {"message": "Validation Failed", "errors": errors, "documentation_url": DOCS}
        owner = self.repo.split("/")[0]
        pair = (body["head"], body["base"])
        if any((p["head"]["ref"], p["base"]["ref"]) == pair for p in self.pulls_created):
            message = f"A pull request already exists for {owner}:{body['head']}."
            errors = [{"resource": "PullRequest", "code": "custom", "message": message}]
            return 422, {}, {"message": "Validation Failed", "errors": errors, "documentation_url": DOCS}
        number = self.pr_number + 1 + len(self.pulls_created)
        pull = {
            "number": number,
            "state": "open",
            "draft": bool(body.get("draft", False)),
            "title": body.get("title", ""),
            "body": body.get("body"),
            "user": {"login": self.bot_login, "type": self._bot_type},
            "html_url": f"https://github.example/{self.repo}/pull/{number}",
            "url": self._api(f"/pulls/{number}"),
            "head": {"ref": body["head"], "label": f"{owner}:{body['head']}"},
            "base": {"ref": body["base"], "label": f"{owner}:{body['base']}"},
        }
        self.pulls_created.append(pull)
        return 201, {}, pull
