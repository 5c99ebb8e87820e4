"""An emulated Gitea (or Forgejo) REST API v1 for tests: a real HTTP server on 127.0.0.1, one repository
and one pull request, in a thread.

Every request is checked against tests/data/gitea/gitea-api-subset.swagger.json (Gitea's own spec, kept
to the operations prereview uses): an unknown route or method, a path parameter of the wrong type or
outside its enum, an undeclared or mistyped query parameter, a body that does not match its definition
(unknown fields included: a client that sends fields Gitea does not have is a bug here, though Gitea
itself would ignore them) is refused with Gitea's 422 `{"message": …}` (404/405 for routes) and recorded
in `.violations`. Where prereview depends on Gitea's behaviour the server follows Gitea's source:

- auth: `Authorization: token …` (or `Bearer …`); a wrong token 401; a read-scoped token 403 on writes;
  no token: 401 on /user, 404 on the private repository; reads need `read`, comments and reviews
  `read` (Gitea lets readers comment), editing a comment its author or `write`+;
- reviews (`routers/api/v1/repo/pull_review.go`): `event` COMMENT needs a body or comments, an unknown
  event makes a pending review; `new_position` is a new-file line, `old_position` an old-file line. A
  comment on a line outside the PR's diff is recorded in `.off_diff` (Gitea would store it with an
  empty hunk; a reviewer could not see it on the diff);
- collaborator permission: only a repository admin (or the user asking about itself) may ask (403
  otherwise, Gitea's message); a non-collaborator is `none`;
- a closed pull request refuses new reviews with 422 (ErrSubmitReviewOnClosedPR).

    with FakeGitea(diff_text=diff, base_sha=b, head_sha=h) as fake:
        fake.url      # like GITHUB_SERVER_URL: http://127.0.0.1:PORT
        fake.reviews, fake.review_comments, fake.comments, fake.reactions, fake.requests, fake.violations
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import jsonschema

SPEC_PATH = Path(__file__).resolve().parents[1] / "data" / "gitea" / "gitea-api-subset.swagger.json"
TOKEN = "6f1c0ffee0ddba11c0de5eed0f00dfacade12345"  # Gitea tokens are 40 hex characters
BOT = "prereview-bot"
EVENTS = ("APPROVED", "REQUEST_CHANGES", "COMMENT")
PERMISSION_403 = (
    "Only admins can query all permissions, repo admins can query all repo permissions, "
    "collaborators can query only their own"
)
SCOPE_403 = "token does not have at least one of required scope(s), required=[write:issue]"
_LEVEL = {"none": 0, "read": 1, "write": 2, "admin": 3, "owner": 4}


@dataclass
class Request:
    method: str
    path: str  # below /api/v1, e.g. /repos/acme/widgets/pulls/3/reviews
    query: dict[str, str]
    body: Any
    auth: str  # "token" | "none" | "bad" (never the token itself)
    user: str | None = None
    status: int = 0


class _Reply(Exception):
    def __init__(self, status: int, body: Any, text: str | None = None) -> None:
        super().__init__(status)
        self.status, self.body, self.text = status, body, text


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _strict(schema: Any) -> Any:
    """Definitions with `additionalProperties: false` on every object (unknown fields are refused)."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items() if not k.startswith("x-")}
        if out.get("type") == "object" and "properties" in out:
            out.setdefault("additionalProperties", False)
        return out
    if isinstance(schema, list):
        return [_strict(x) for x in schema]
    return schema


def diff_lines(diff_text: str) -> dict[str, tuple[set[int], set[int]]]:
    """path -> (new-file lines, old-file removed lines) that a review comment may sit on."""
    out: dict[str, tuple[set[int], set[int]]] = {}
    path, old, new = "", 0, 0
    for line in diff_text.splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else line[4:]
            out.setdefault(path, (set(), set()))
        elif line.startswith("--- ") or line.startswith("diff --git"):
            continue
        elif m := re.match(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@", line):
            old, new = int(m[1]), int(m[2])
        elif path and line[:1] in ("+", "-", " "):
            kind = line[:1]
            if kind == "-":
                out[path][1].add(old)
                old += 1
            else:
                out[path][0].add(new)
                new += 1
                old += kind == " "
    return out


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeGitea


class FakeGitea:
    def __init__(
        self,
        *,
        repo: str = "acme/widgets",
        number: int = 3,
        diff_text: str = "",
        base_sha: str = "0" * 40,
        head_sha: str = "1" * 40,
        title: str = "A change",
        body: str = "",
        author: str = "dev",
        tokens: dict[str, str] | None = None,
        permissions: dict[str, str] | None = None,
        state: str = "open",
        read_only_tokens: tuple[str, ...] = (),
        resolve_api: bool = True,
    ) -> None:
        self.repo, self.number, self.diff_text = repo, number, diff_text
        self.base_sha, self.head_sha, self.title, self.body, self.author = (
            base_sha,
            head_sha,
            title,
            body,
            author,
        )
        self.state = state
        self.tokens = tokens if tokens is not None else {TOKEN: BOT}
        self.read_only_tokens = read_only_tokens  # scopes read:repository,read:issue only
        # Gitea 1.26+ resolves review comments over the API; Forgejo and older Gitea answer 405 there.
        self.resolve_api = resolve_api
        self.permissions = {BOT: "admin", author: "write", **(permissions or {})}
        self._ids = itertools.count(101)
        self.users: dict[str, int] = {}
        self.reviews: list[dict[str, Any]] = []
        self.review_comments: dict[int, list[dict[str, Any]]] = {}
        self.comments: list[dict[str, Any]] = []
        self.reactions: list[dict[str, Any]] = []
        self.requests: list[Request] = []
        self.violations: list[str] = []
        self.off_diff: list[dict[str, Any]] = []
        self.spec = json.loads(SPEC_PATH.read_text())
        self._defs = _strict(self.spec["definitions"])
        self._routes = self._load_routes()
        self._lock = threading.RLock()
        self._server: _Server | None = None

    # -- test-facing API ------------------------------------------------------------------------

    def __enter__(self) -> FakeGitea:
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
        assert self._server is not None, "use FakeGitea as a context manager"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def inline(self) -> list[dict[str, Any]]:
        return [c for cs in self.review_comments.values() for c in cs]

    def push(self, diff_text: str, head_sha: str) -> None:
        self.diff_text, self.head_sha = diff_text, head_sha

    def user(self, login: str) -> dict[str, Any]:
        uid = self.users.setdefault(login, len(self.users) + 1)
        return {
            "id": uid,
            "login": login,
            "username": login,
            "full_name": "",
            "email": f"{login}@example.com",
        }

    def add_comment(self, body: str, author: str = "reviewer") -> dict[str, Any]:
        c = {
            "id": next(self._ids),
            "body": body,
            "user": self.user(author),
            "created_at": _now(),
            "updated_at": _now(),
            "html_url": "",
            "pull_request_url": "",
            "issue_url": "",
        }
        self.comments.append(c)
        return c

    # -- request handling -----------------------------------------------------------------------

    def _load_routes(self) -> list[tuple[str, re.Pattern[str], str, dict[str, Any]]]:
        routes = []
        for tpl, ops in self.spec["paths"].items():
            rx = re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+?)", tpl) + "$")
            for method, op in ops.items():
                routes.append((method.upper(), rx, tpl, op))
        routes.sort(key=lambda r: (-r[2].count("/"), -len(re.sub(r"\{\w+\}", "", r[2]))))
        return routes

    def handle(self, req: Request) -> tuple[int, Any, str | None]:
        for method, rx, tpl, op in self._routes:
            m = rx.match(req.path)
            if m and method == req.method:
                params = {k: unquote(v) for k, v in m.groupdict().items()}
                self._validate(f"{method} {tpl}", op, params, req)
                return _dispatch(self, tpl, params, req)
        if any(rx.match(req.path) for _, rx, _, _ in self._routes):
            self.violations.append(f"{req.method} {req.path}: method not in the API subset")
            raise _Reply(405, {"message": "method not allowed"})
        self.violations.append(f"{req.method} {req.path}: no such endpoint in the API subset")
        raise _Reply(404, {"message": "not found"})

    def _fail(self, where: str, msg: str) -> None:
        self.violations.append(f"{where}: {msg}")
        raise _Reply(422, {"message": msg, "url": "https://gitea.example.com/api/swagger"})

    def _validate(self, where: str, op: dict[str, Any], params: dict[str, str], req: Request) -> None:
        declared = {p["name"]: p for p in op.get("parameters", [])}
        for name, p in declared.items():
            if p["in"] == "path":
                value = params[name]
                if p.get("type") == "integer" and not value.isdigit():
                    self._fail(where, f"{name} must be an integer")
                if "enum" in p and value not in p["enum"]:
                    self._fail(where, f"{name} must be one of {p['enum']}")
            elif p["in"] == "query" and name in req.query:
                value = req.query[name]
                if p.get("type") == "integer" and not value.isdigit():
                    self._fail(where, f"{name} must be an integer")
                if p.get("type") == "boolean" and value not in ("true", "false", "1", "0"):
                    self._fail(where, f"{name} must be a boolean")
        for name in req.query:
            if declared.get(name, {}).get("in") != "query":
                self._fail(where, f"query parameter {name} is not in the spec")
        body_param = next((p for p in declared.values() if p["in"] == "body"), None)
        if body_param is None:
            if req.body is not None:
                self._fail(where, "this operation takes no body")
            return
        if req.body is None:
            if body_param.get("required"):
                self._fail(where, "request body is missing")
            return
        schema = {"$ref": body_param["schema"]["$ref"], "definitions": self._defs}
        try:
            jsonschema.validate(req.body, schema)
        except jsonschema.ValidationError as exc:
            loc = "".join(f"[{p}]" for p in exc.absolute_path)
            self._fail(where, f"body{loc}: {exc.message}")

    def level(self, login: str | None) -> int:
        return _LEVEL.get(self.permissions.get(login or "", "none"), 0)


def _dispatch(fake: FakeGitea, tpl: str, p: dict[str, str], req: Request) -> tuple[int, Any, str | None]:
    if tpl == "/user":
        if req.user is None:
            raise _Reply(401, {"message": "token is required"})
        return 200, fake.user(req.user), None
    if f"{p['owner']}/{p['repo']}" != fake.repo or fake.level(req.user) < 1:
        raise _Reply(404, {"message": "The target couldn't be found."})
    if tpl.endswith("/pulls/comments/{id}/resolve"):
        return _resolve(fake, int(p["id"]), req)
    if "index" in p and int(p["index"]) != fake.number:
        raise _Reply(404, {"message": "pull request does not exist"})
    if tpl.endswith("/pulls/{index}.{diffType}"):
        return 200, None, fake.diff_text
    if tpl.endswith("/pulls/{index}"):
        if req.method == "PATCH":
            if fake.level(req.user) < 2:
                raise _Reply(403, {"message": "Forbidden"})
            fake.body = req.body.get("body", fake.body)
        return (201 if req.method == "PATCH" else 200), _pull(fake), None
    if tpl.endswith("/reviews"):
        return _reviews(fake, req)
    if tpl.endswith("/reviews/{id}/comments"):
        return 200, fake.review_comments.get(int(p["id"]), []), None
    if tpl.endswith("/issues/{index}/comments"):
        if req.method == "GET":
            return 200, fake.comments, None
        return 201, fake.add_comment(req.body["body"], req.user or ""), None
    if tpl.endswith("/issues/comments/{id}"):
        c = next((c for c in fake.comments if c["id"] == int(p["id"])), None)
        if c is None:
            raise _Reply(404, {"message": "comment does not exist"})
        if c["user"]["login"] != req.user and fake.level(req.user) < 2:
            raise _Reply(403, {"message": "Forbidden"})
        c.update(body=req.body["body"], updated_at=_now())
        return 200, c, None
    if tpl.endswith("/reactions"):
        r = {
            "content": (req.body or {}).get("content", ""),
            "user": fake.user(req.user or ""),
            "created_at": _now(),
        }
        fake.reactions.append({**r, "comment_id": int(p["id"])})
        return 201, r, None
    if tpl.endswith("/permission"):
        who = p["collaborator"]
        if fake.level(req.user) < 3 and who.lower() != (req.user or "").lower():
            raise _Reply(403, {"message": PERMISSION_403})
        perm = fake.permissions.get(who, "none")
        return 200, {"permission": perm, "role_name": perm, "user": fake.user(who)}, None
    raise _Reply(404, {"message": "not found"})


def _resolve(fake: FakeGitea, comment_id: int, req: Request) -> tuple[int, Any, str | None]:
    """`ResolvePullReviewComment` (routers/api/v1/repo/pull_review.go, Gitea 1.26+): 204, the comment's
    `resolver` set; its poster or a writer may; Forgejo's router has no such POST (405, Allow: GET)."""
    if not fake.resolve_api:
        raise _Reply(405, {"message": "method not allowed"})
    c = next((c for cs in fake.review_comments.values() for c in cs if c["id"] == comment_id), None)
    if c is None:
        raise _Reply(404, {"message": "comment does not exist"})
    if c["user"]["login"] != req.user and fake.level(req.user) < 2:
        raise _Reply(403, {"message": "Forbidden"})
    c["resolver"] = fake.user(req.user or "")
    return 204, None, ""


def _pull(fake: FakeGitea) -> dict[str, Any]:
    def branch(ref: str, sha: str) -> dict[str, Any]:
        return {"label": ref, "ref": ref, "sha": sha, "repo_id": 7, "repo": {"id": 7, "full_name": fake.repo}}

    return {
        "id": 31,
        "number": fake.number,
        "title": fake.title,
        "body": fake.body,
        "state": fake.state,
        "user": fake.user(fake.author),
        "labels": [],
        "html_url": f"{fake.url}/{fake.repo}/pulls/{fake.number}",
        "base": branch("main", fake.base_sha),
        "head": branch("feature", fake.head_sha),
        "merge_base": fake.base_sha,
        "mergeable": True,
        "merged": False,
    }


def _reviews(fake: FakeGitea, req: Request) -> tuple[int, Any, str | None]:
    if req.method == "GET":
        page, limit = int(req.query.get("page", 1)), int(req.query.get("limit", 50))
        limit = min(limit, 50)
        return 200, fake.reviews[(page - 1) * limit : page * limit], None
    body, comments = req.body, req.body.get("comments") or []
    if fake.state != "open":
        raise _Reply(422, {"message": "can not submit review on closed pull request"})
    event = body.get("event", "")
    if event == "COMMENT" and not str(body.get("body") or "").strip() and not comments:
        raise _Reply(422, {"message": f"review event {event} requires a body or a comment"})
    if event == "REQUEST_CHANGES" and not str(body.get("body") or "").strip():
        raise _Reply(422, {"message": f"review event {event} requires a body"})
    rid = next(fake._ids)
    lines = diff_lines(fake.diff_text)
    stored = []
    for c in comments:
        new, old = int(c.get("new_position") or 0), int(c.get("old_position") or 0)
        new_lines, old_lines = lines.get(c.get("path", ""), (set(), set()))
        if (old > 0 and old not in old_lines) or (old <= 0 and new not in new_lines):
            fake.off_diff.append(c)
        stored.append(
            {
                "id": next(fake._ids),
                "body": c.get("body", ""),
                "path": c.get("path", ""),
                "position": new if old <= 0 else 0,
                "original_position": old if old > 0 else 0,
                "commit_id": body.get("commit_id") or fake.head_sha,
                "user": fake.user(req.user or ""),
                "pull_request_review_id": rid,
                "resolver": None,
                "created_at": _now(),
            }
        )
    review = {
        "id": rid,
        "body": body.get("body", ""),
        "state": event if event in EVENTS else "PENDING",
        "commit_id": body.get("commit_id") or fake.head_sha,
        "user": fake.user(req.user or ""),
        "comments_count": len(stored),
        "submitted_at": _now(),
        "official": False,
        "stale": False,
        "dismissed": False,
    }
    fake.reviews.append(review)
    fake.review_comments[rid] = stored
    return 200, review, None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

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
        user = fake.tokens.get(tok) if kind.lower() in ("token", "bearer") else None
        read_only = tok in fake.read_only_tokens
        req = Request(
            method,
            split.path[len("/api/v1") :] if split.path.startswith("/api/v1/") else split.path,
            {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()},
            body,
            "none" if not auth else ("token" if user else "bad"),
            user,
        )
        with fake._lock:
            fake.requests.append(req)
            try:
                if not split.path.startswith("/api/v1/"):
                    raise _Reply(404, {"message": "not found"})
                if req.auth == "bad":
                    raise _Reply(401, {"message": "user does not exist [uid: 0, name: ]"})
                if read_only and method != "GET":
                    raise _Reply(403, {"message": SCOPE_403})
                status, payload, text = fake.handle(req)
            except _Reply as r:
                status, payload, text = r.status, r.body, r.text
            req.status = status
        data = (text if text is not None else json.dumps(payload)).encode()
        self.send_response(status)
        self.send_header(
            "Content-Type", "text/plain; charset=utf-8" if text is not None else "application/json"
        )
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
