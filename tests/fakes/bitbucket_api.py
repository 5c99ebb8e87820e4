"""An emulated Bitbucket Data Center REST API for tests: a real HTTP server on 127.0.0.1, one repository
and one pull request, in a thread.

Every request is checked against shared/platform/openapi/bitbucket-dc-subset.openapi.json (Atlassian's
published OpenAPI for Bitbucket Data Center 9.2, kept to the operations prereview uses; provenance and
terms in shared/platform/README.md): an unknown route or method, an undeclared query parameter or one
of the wrong type, a body that does not match its schema (unknown fields included) is refused with
Bitbucket's 400 `{"errors": [{"message": …}]}` (404/405 for routes) and recorded in `.violations`.
Every JSON answer is checked against the operation's response schema too (types and enums; the
answers carry fields the spec leaves out, e.g. an activity's `comment`), so the emulator cannot drift
from what Bitbucket sends. The spec's paths say `latest`; clients use `1.0`: the same resources.

Where the generated spec and Bitbucket's documented behaviour differ, the emulator follows the
documentation, and says so here:
- a comment anchor's `path` / `srcPath` is sent as a string (Atlassian's REST examples; the generated
  schema shows the object form of `RestPath`): both are accepted;
- a report datum's `value` is any JSON value by its `type` (NUMBER: a number, TEXT: a string, LINK:
  `{linktext, href}`; Atlassian's Code Insights guide); the generated schema says `object`;
- `pattern` (e.g. a report's `result` `FAIL|PASS`) matches the whole value, as Java's `@Pattern` does;
- `RestComment.anchor` is marked read-only in the generated schema, yet it is how an inline comment is
  created (POST …/comments with an `anchor`): not enforced;
- GET /users: the spec declares the query parameter `permission.N` literally and describes the
  resource parameters of a permission filter (`permission.N.projectKey`, `….repositorySlug`,
  `….projectId`) in the operation's text only: those names are accepted as described. Its 200 answer
  is a page of users (`values`), as every paged resource; the generated schema shows one user.
What the spec does not say and the server follows from Atlassian's documentation: HTTP access tokens
(`Authorization: Bearer …`; a wrong one 401, a read-only one 403 on writes); the `X-AUSERNAME` answer
header naming the authenticated user; a comment edit needs the current `version` (409 otherwise) and
only its author may edit it; annotations need their report (404 otherwise), at most 1,000 per report.
An anchor on a line that is not in the pull request's diff, or with a `lineType`/`fileType` that does
not match the line, is recorded in `.off_diff` (Bitbucket would store an orphaned comment that no
reader sees on the diff).

    with FakeBitbucket(diff_text=diff, base_sha=b, head_sha=h) as fake:
        fake.url  # like PREREVIEW_BITBUCKET_URL: http://127.0.0.1:PORT
        fake.comments, fake.reports, fake.annotations, fake.requests, fake.violations, fake.off_diff
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import jsonschema

from tests.conftest import PLATFORM, VENDORED

_NAME = "openapi/bitbucket-dc-subset.openapi.json"
SPEC_PATH = PLATFORM / _NAME if (PLATFORM / _NAME).exists() else VENDORED / "platform" / _NAME
TOKEN = "BBDC-MzE0NzQ2NjI0NjM4OjvPcB3Lw8M1n6nXH0T0bpnbVz2Y"  # the shape of an HTTP access token
BOT = "prereview-bot"
MAX_ANNOTATIONS = 1000


@dataclass
class Request:
    method: str
    path: str  # below /rest, with `latest`, e.g. /api/latest/projects/PRJ/repos/widgets/pull-requests/3
    query: dict[str, str]
    body: Any
    auth: str  # "token" | "none" | "bad" (never the token itself)
    user: str | None = None
    status: int = 0


class _Reply(Exception):
    def __init__(self, status: int, body: Any, text: str | None = None) -> None:
        super().__init__(status)
        self.status, self.body, self.text = status, body, text


def _err(message: str, exception: str = "") -> dict[str, Any]:
    return {"errors": [{"context": None, "message": message, "exceptionName": exception or None}]}


def _strict(schema: Any, *, closed: bool) -> Any:
    """OpenAPI schema -> JSON schema: `pattern` anchored; with `closed`, objects refuse unknown fields."""
    if isinstance(schema, dict):
        out = {k: _strict(v, closed=closed) for k, v in schema.items() if not k.startswith("x-")}
        if isinstance(out.get("pattern"), str):
            out["pattern"] = f"^(?:{out['pattern']})$"
        if closed and "properties" in out:
            out.setdefault("additionalProperties", False)
        return out
    if isinstance(schema, list):
        return [_strict(x, closed=closed) for x in schema]
    return schema


def _as_documented(schemas: dict[str, Any]) -> None:
    """Where the generated schemas say less than the documentation (see the module's header)."""
    anchor = schemas["RestComment"]["properties"]["anchor"]["properties"]
    for key in ("path", "srcPath"):
        anchor[key] = {"anyOf": [{"type": "string"}, anchor[key]]}
    value = schemas["RestInsightReportData"]["properties"]["value"]
    value.pop("type")  # `Object` in Java: a number, a string, a boolean or a {linktext, href} object


def diff_lines(diff_text: str) -> dict[str, dict[tuple[str, int], str]]:
    """path -> {(fileType, line): lineType} for every line of the diff a comment may be anchored to."""
    out: dict[str, dict[tuple[str, int], str]] = {}
    path, old, new = "", 0, 0
    for line in diff_text.splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else line[4:]
            out.setdefault(path, {})
        elif line.startswith(("--- ", "diff --git", "index ")):
            continue
        elif m := re.match(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@", line):
            old, new = int(m[1]), int(m[2])
        elif path and line[:1] in ("+", "-", " "):
            if line[0] == "-":
                out[path][("FROM", old)] = "REMOVED"
                old += 1
            elif line[0] == "+":
                out[path][("TO", new)] = "ADDED"
                new += 1
            else:
                out[path][("TO", new)] = "CONTEXT"
                out[path][("FROM", old)] = "CONTEXT"
                old, new = old + 1, new + 1
    return out


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeBitbucket


class FakeBitbucket:
    def __init__(
        self,
        *,
        project: str = "PRJ",
        slug: str = "widgets",
        number: int = 3,
        diff_text: str = "",
        base_sha: str = "0" * 40,
        head_sha: str = "1" * 40,
        title: str = "A change",
        description: str = "",
        author: str = "dev",
        tokens: dict[str, str] | None = None,
        read_only_tokens: tuple[str, ...] = (),
        writers: tuple[str, ...] = ("maintainer", BOT),
    ) -> None:
        self.project, self.slug, self.number = project, slug, number
        self.diff_text, self.base_sha, self.head_sha = diff_text, base_sha, head_sha
        self.title, self.description, self.author = title, description, author
        self.version = 0
        self.tokens = tokens if tokens is not None else {TOKEN: BOT}
        self.read_only_tokens = read_only_tokens
        self.writers = writers  # users with REPO_WRITE (or more) on the repository
        self._ids = itertools.count(101)
        self.users: dict[str, int] = {}
        self.comments: list[dict[str, Any]] = []  # root comments, replies nested in `comments`
        self.anchors: dict[int, dict[str, Any]] = {}
        self.reports: dict[tuple[str, str], dict[str, Any]] = {}
        self.annotations: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.requests: list[Request] = []
        self.violations: list[str] = []
        self.off_diff: list[dict[str, Any]] = []
        self.username_header = True  # X-AUSERNAME on authenticated answers (a proxy may strip it)
        self.fail_next: list[int] = []  # statuses to answer before handling anything (503: overloaded)
        self.spec = json.loads(SPEC_PATH.read_text())
        schemas = json.loads(json.dumps(self.spec["components"]["schemas"]))
        _as_documented(schemas)
        self._closed = {"components": {"schemas": _strict(schemas, closed=True)}}
        self._open = {"components": {"schemas": _strict(schemas, closed=False)}}
        self._routes = self._load_routes()
        self._lock = threading.RLock()
        self._server: _Server | None = None

    # -- test-facing API ------------------------------------------------------------------------

    def __enter__(self) -> FakeBitbucket:
        srv = _Server(("127.0.0.1", 0), _Handler)
        srv.fake = self
        self._server = srv
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None, "use FakeBitbucket as a context manager"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def repo(self) -> str:
        return f"{self.project}/{self.slug}"

    @property
    def inline(self) -> list[dict[str, Any]]:
        return [c for c in self.comments if c["id"] in self.anchors]

    @property
    def general(self) -> list[dict[str, Any]]:
        return [c for c in self.comments if c["id"] not in self.anchors]

    def push(self, diff_text: str, head_sha: str) -> None:
        self.diff_text, self.head_sha = diff_text, head_sha

    def user(self, slug: str) -> dict[str, Any]:
        uid = self.users.setdefault(slug, len(self.users) + 1)
        return {
            "name": slug,
            "slug": slug,
            "id": uid,
            "displayName": slug,
            "emailAddress": f"{slug}@example.com",
            "active": True,
            "type": "SERVICE" if slug == BOT else "NORMAL",
        }

    def add_comment(
        self, text: str, author: str = "reviewer", anchor: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        now = int(time.time() * 1000)
        c = {
            "id": next(self._ids),
            "version": 0,
            "text": text,
            "author": self.user(author),
            "createdDate": now,
            "updatedDate": now,
            "comments": [],
        }
        self.comments.append(c)
        if anchor:
            self.anchors[c["id"]] = {**anchor, "diffType": anchor.get("diffType", "EFFECTIVE")}
        return c

    # -- request handling -----------------------------------------------------------------------

    def _load_routes(self) -> list[tuple[str, re.Pattern[str], str, dict[str, Any]]]:
        routes = []
        for tpl, ops in self.spec["paths"].items():
            rx = re.compile(
                "^"
                + re.sub(
                    r"\{(\w+)\}", r"(?P<\1>[^/]+?)", re.escape(tpl).replace(r"\{", "{").replace(r"\}", "}")
                )
                + "$"
            )
            for method, op in ops.items():
                routes.append((method.upper(), rx, tpl, op))
        routes.sort(key=lambda r: -len(r[2]))
        return routes

    def handle(self, req: Request) -> tuple[int, Any, str | None]:
        for method, rx, tpl, op in self._routes:
            m = rx.match(req.path)
            if m and method == req.method:
                params = {k: unquote(v) for k, v in m.groupdict().items()}
                self._validate(f"{method} {tpl}", op, req)
                status, body, text = _dispatch(self, tpl, params, req)
                if text is None and body is not None:
                    self._check_response(f"{method} {tpl}", op, status, body)
                return status, body, text
        if any(rx.match(req.path) for _, rx, _, _ in self._routes):
            self.violations.append(f"{req.method} {req.path}: method not in the API subset")
            raise _Reply(405, _err("method not allowed"))
        self.violations.append(f"{req.method} {req.path}: no such endpoint in the API subset")
        raise _Reply(404, _err("not found"))

    def _fail(self, where: str, msg: str) -> None:
        self.violations.append(f"{where}: {msg}")
        raise _Reply(400, _err(msg))

    def _validate(self, where: str, op: dict[str, Any], req: Request) -> None:
        declared = {p["name"]: p for p in op.get("parameters", []) if p["in"] == "query"}
        for name, value in req.query.items():
            name = re.sub(r"^(permission)\.\d+$", r"\1.N", name)
            if "permission.N" in declared and re.fullmatch(
                r"permission(?:\.\d+)?\.(?:projectKey|repositorySlug|projectId)", name
            ):
                continue  # described in the operation's text (see the module's header)
            p = declared.get(name)
            if p is None:
                self._fail(where, f"query parameter {name} is not in the spec")
            elif p["schema"].get("type") in ("number", "integer") and not value.isdigit():
                self._fail(where, f"{name} must be a number")
        content = (op.get("requestBody") or {}).get("content", {}).get("application/json")
        if content is None:
            if req.body is not None:
                self._fail(where, "this operation takes no body")
            return
        if req.body is None:
            self._fail(where, "request body is missing")
        try:
            jsonschema.validate(req.body, {**content["schema"], **self._closed})
        except jsonschema.ValidationError as exc:
            self._fail(where, f"body{''.join(f'[{p}]' for p in exc.absolute_path)}: {exc.message}")

    def _check_response(self, where: str, op: dict[str, Any], status: int, body: Any) -> None:
        resp = op.get("responses", {}).get(str(status))
        schema = ((resp or {}).get("content") or {}).get("application/json", {}).get("schema")
        if resp is None:
            self.violations.append(f"{where}: the emulator answered {status}, not in the spec")
        elif schema is not None:
            try:
                jsonschema.validate(body, {**schema, **self._open})
            except jsonschema.ValidationError as exc:
                self.violations.append(
                    f"{where}: the emulator's answer does not match the spec: {exc.message}"
                )


def _users(fake: FakeBitbucket, req: Request) -> tuple[int, Any, str | None]:
    """GET /users?filter=…&permission.1=REPO_WRITE&permission.1.projectKey=…&permission.1.repositorySlug=…:
    the users whose name contains `filter` and who have the permission on that repository."""
    if req.user is None:
        raise _Reply(401, _err("Authentication failed. Please check your credentials and try again."))
    q = req.query
    roots = sorted(k for k in q if re.fullmatch(r"permission(?:\.\d+)?", k))
    users = sorted({*fake.users, *fake.writers, fake.author})
    for root in roots:
        if q[root] not in ("REPO_READ", "REPO_WRITE", "REPO_ADMIN"):
            raise _Reply(400, _err(f"{q[root]} is not a repository permission this emulator knows"))
        key, slug = q.get(f"{root}.projectKey"), q.get(f"{root}.repositorySlug")
        if key is None or slug is None:
            raise _Reply(400, _err(f"{root}: a repository permission needs projectKey and repositorySlug"))
        if (key, slug) != (fake.project, fake.slug):
            raise _Reply(400, _err(f"Repository {key}/{slug} does not exist."))
        if q[root] != "REPO_READ":
            users = [u for u in users if u in fake.writers]
    needle = q.get("filter", "").lower()
    return 200, _page([fake.user(u) for u in users if needle in u.lower()], req), None


def _dispatch(fake: FakeBitbucket, tpl: str, p: dict[str, str], req: Request) -> tuple[int, Any, str | None]:
    if tpl == "/api/latest/users":
        return _users(fake, req)
    if p["projectKey"] != fake.project or p["repositorySlug"] != fake.slug or req.user is None:
        raise _Reply(404, _err(f"Repository {p['projectKey']}/{p['repositorySlug']} does not exist."))
    if tpl.startswith("/insights/"):
        return _insights(fake, tpl, p, req)
    if p["pullRequestId"] != str(fake.number):
        raise _Reply(404, _err(f"Pull request {p['pullRequestId']} does not exist in {fake.repo}."))
    if tpl.endswith(".diff"):
        return 200, None, fake.diff_text
    if tpl.endswith("/activities"):
        return 200, _page([_activity(fake, c) for c in reversed(fake.comments)], req), None
    if tpl.endswith("/comments"):
        return 201, _create_comment(fake, req), None
    if tpl.endswith("/comments/{commentId}"):
        c = next((c for c in _all_comments(fake) if str(c["id"]) == p["commentId"]), None)
        if c is None:
            raise _Reply(404, _err(f"Comment {p['commentId']} does not exist."))
        if req.method == "PUT":
            _edit(c, req)
        return 200, _shown(fake, c), None
    if req.method == "PUT":
        if req.body.get("version") != fake.version:
            raise _Reply(
                409,
                _err(
                    "The pull request has been updated since you last read it.",
                    "com.atlassian.bitbucket.pull.PullRequestOutOfDateException",
                ),
            )
        fake.description = req.body.get("description", fake.description)
        fake.title = req.body.get("title", fake.title)
        fake.version += 1
    return 200, _pull(fake), None


def _all_comments(fake: FakeBitbucket) -> list[dict[str, Any]]:
    out, todo = [], list(fake.comments)
    while todo:
        c = todo.pop()
        out.append(c)
        todo += c["comments"]
    return out


def _shown(fake: FakeBitbucket, c: dict[str, Any]) -> dict[str, Any]:
    anchor = fake.anchors.get(c["id"])
    return {**c, **({"anchor": anchor, "anchored": True} if anchor else {})}


def _edit(c: dict[str, Any], req: Request) -> None:
    if c["author"]["slug"] != req.user:
        raise _Reply(403, _err("You are not permitted to edit this comment."))
    if req.body.get("version") != c["version"]:
        raise _Reply(
            409,
            _err(
                "You are attempting to modify a comment based on out-of-date information.",
                "com.atlassian.bitbucket.comment.CommentOutOfDateException",
            ),
        )
    c.update(
        text=req.body.get("text", c["text"]), version=c["version"] + 1, updatedDate=int(time.time() * 1000)
    )
    if "threadResolved" in req.body:
        c["threadResolved"] = bool(req.body["threadResolved"])


def _create_comment(fake: FakeBitbucket, req: Request) -> dict[str, Any]:
    body = req.body
    if not str(body.get("text") or "").strip():
        raise _Reply(400, _err("Please enter a non-empty value for text"))
    anchor = body.get("anchor")
    parent = body.get("parent")
    if parent:
        root = next((c for c in _all_comments(fake) if c["id"] == parent.get("id")), None)
        if root is None:
            raise _Reply(404, _err("The parent comment does not exist."))
        reply = {**fake.add_comment(body["text"], req.user or ""), "comments": []}
        fake.comments.remove(next(c for c in fake.comments if c["id"] == reply["id"]))
        root["comments"].append(reply)
        return reply
    if anchor:
        path = anchor.get("path")
        path = path if isinstance(path, str) else "/".join((path or {}).get("components") or [])
        kinds = diff_lines(fake.diff_text).get(path)
        line = anchor.get("line")
        if kinds is None or (
            line is not None and kinds.get((anchor.get("fileType", "TO"), line)) != anchor.get("lineType")
        ):
            fake.off_diff.append(
                anchor
            )  # not a changed file, or not that line of it (a file comment: no line)
        anchor = {**anchor, "path": path, "fromHash": fake.base_sha, "toHash": fake.head_sha}
    return _shown(fake, fake.add_comment(body["text"], req.user or "", anchor))


def _activity(fake: FakeBitbucket, c: dict[str, Any]) -> dict[str, Any]:
    act = {
        "id": c["id"] * 10,
        "createdDate": c["createdDate"],
        "user": c["author"],
        "action": "COMMENTED",
        "commentAction": "ADDED",
        "comment": c,
    }
    if c["id"] in fake.anchors:
        act["commentAnchor"] = fake.anchors[c["id"]]
    return act


def _page(values: list[Any], req: Request) -> dict[str, Any]:
    start, limit = int(req.query.get("start", 0)), int(req.query.get("limit", 25))
    chunk = values[start : start + limit]
    last = start + limit >= len(values)
    return {
        "size": len(chunk),
        "limit": limit,
        "start": start,
        "isLastPage": last,
        "values": chunk,
        **({} if last else {"nextPageStart": start + limit}),
    }


def _pull(fake: FakeBitbucket) -> dict[str, Any]:
    repo = {
        "slug": fake.slug,
        "name": fake.slug,
        "id": 7,
        "project": {"key": fake.project, "id": 1, "name": fake.project},
    }

    def ref(branch: str, sha: str) -> dict[str, Any]:
        return {"id": f"refs/heads/{branch}", "displayId": branch, "latestCommit": sha, "repository": repo}

    return {
        "id": fake.number,
        "version": fake.version,
        "title": fake.title,
        "description": fake.description,
        "state": "OPEN",
        "open": True,
        "closed": False,
        "draft": False,
        "locked": False,
        "createdDate": 1700000000000,
        "updatedDate": 1700000000000,
        "fromRef": ref("feature", fake.head_sha),
        "toRef": ref("main", fake.base_sha),
        "author": {
            "user": fake.user(fake.author),
            "role": "AUTHOR",
            "approved": False,
            "status": "UNAPPROVED",
        },
        "reviewers": [],
        "participants": [],
        "links": {
            "self": [
                {"href": f"{fake.url}/projects/{fake.project}/repos/{fake.slug}/pull-requests/{fake.number}"}
            ]
        },
    }


def _insights(fake: FakeBitbucket, tpl: str, p: dict[str, str], req: Request) -> tuple[int, Any, str | None]:
    key = (p["commitId"], p["key"])
    if tpl.endswith("/reports/{key}"):
        if req.method == "PUT":
            fake.reports[key] = {**req.body, "key": p["key"], "createdDate": int(time.time() * 1000)}
            fake.annotations.setdefault(key, [])
        if key not in fake.reports:
            raise _Reply(404, _err(f"No report with key {p['key']} exists on commit {p['commitId']}."))
        return 200, fake.reports[key], None
    if key not in fake.reports:
        raise _Reply(404, _err(f"No report with key {p['key']} exists on commit {p['commitId']}."))
    if req.method == "DELETE":
        ext = req.query.get("externalId")
        fake.annotations[key] = [
            a for a in fake.annotations[key] if ext is not None and a.get("externalId") != ext
        ]
        return 204, None, ""
    new = req.body["annotations"]
    if len(fake.annotations[key]) + len(new) > MAX_ANNOTATIONS:
        raise _Reply(400, _err(f"A report cannot have more than {MAX_ANNOTATIONS} annotations."))
    fake.annotations[key] += new
    return 204, None, ""


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def _handle(self, method: str) -> None:
        fake = self.server.fake
        split = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
        auth = self.headers.get("Authorization", "")
        kind, _, tok = auth.partition(" ")
        user = fake.tokens.get(tok) if kind == "Bearer" else None
        path = re.sub(r"^/rest/(api|insights)/(?:1\.0|latest)/", r"/\1/latest/", split.path)
        req = Request(
            method,
            path,
            {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()},
            body,
            "none" if not auth else ("token" if user else "bad"),
            user,
        )
        with fake._lock:
            fake.requests.append(req)
            try:
                if path == split.path:
                    raise _Reply(404, _err("not found"))
                if fake.fail_next:
                    raise _Reply(fake.fail_next.pop(0), _err("Service Unavailable"))
                if req.auth == "bad":
                    raise _Reply(
                        401, _err("Authentication failed. Please check your credentials and try again.")
                    )
                if tok in fake.read_only_tokens and method != "GET":
                    raise _Reply(403, _err("You are not permitted to access this resource"))
                status, payload, text = fake.handle(req)
            except _Reply as r:
                status, payload, text = r.status, r.body, r.text
            req.status = status
        data = (text if text is not None else json.dumps(payload)).encode()
        self.send_response(status)
        if user and fake.username_header:
            self.send_header("X-AUSERNAME", user)
        if status != 204:
            self.send_header(
                "Content-Type", "text/plain; charset=utf-8" if text is not None else "application/json"
            )
        self.send_header("Content-Length", str(len(data) if status != 204 else 0))
        self.end_headers()
        if status != 204:
            self.wfile.write(data)
