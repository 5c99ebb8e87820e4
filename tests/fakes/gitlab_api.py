"""An emulated GitLab REST API v4 for tests: a real HTTP server on 127.0.0.1, one project and MR, in a thread.

Every request is checked against shared/platform/openapi/gitlab-rest-subset.openapi.json (unknown
route, bad path/query parameter, body not matching the schema -> Grape's 400 `{"error": ...}` and an
entry in `.violations`), and the server answers like GitLab where prereview depends on it:

- diff positions are checked against the MR diff the way GitLab does (Gitlab::Diff::Parser numbering,
  File#line_for_position: added line = new_line only, removed = old_line only, context = both;
  line_range line codes `sha1(path)_old_new`): a miss is GitLab's real
  `400 Bad request - Note {:line_code=>["can't be blank", "must be a valid line code"]}`;
- `position_type: file` (GitLab >= 16.4) unless `file_positions=False` (older GitLab);
- auth: PRIVATE-TOKEN / Bearer tokens from `tokens`; a JOB-TOKEN may only read (401 on writes);
- injected failures (`fail(...)`) for 429/5xx; pagination with Link and X-* headers;
- `/diffs` (paginated, `unidiff`), `/changes`, `/versions`, discussions, notes, award emoji, plus
  `members/all/:user_id`, `/user` and POST `/projects/:id/merge_requests` (not in the subset; shapes from
  GitLab's docs, the create body from python-gitlab's attributes) for the webhook server.

    with FakeGitLab(project_id=42, mr_iid=7, diff_text=diff, base_sha=b, head_sha=h) as gl:
        gl.url          # like CI_API_V4_URL: http://127.0.0.1:PORT/api/v4 (or with a `prefix`)
        gl.discussions, gl.notes, gl.award_emoji, gl.requests, gl.violations, gl.rejected, gl.created_mrs
        gl.push(new_diff, new_head)      # a new MR version
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import ssl
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import jsonschema

from tests.conftest import PLATFORM

SPEC_PATH = PLATFORM / "openapi" / "gitlab-rest-subset.openapi.json"
TOKEN = "glpat-prereview-test-token"
BOT_USER = "prereview-bot"
LINE_CODE_ERROR = '400 Bad request - Note {:line_code=>["can\'t be blank", "must be a valid line code"]}'
INCOMPLETE_ERROR = (
    '400 Bad request - Note {:line_code=>["can\'t be blank", "must be a valid line code"], '
    ':position=>["is incomplete"]}'
)
TOO_LONG_ERROR = '400 Bad request - Note {:note=>["is too long (maximum is 1000000 characters)"]}'
MAX_NOTE = 1_000_000

# "Create MR" (POST /projects/:id/merge_requests, doc/api/merge_requests.md): required source_branch,
# target_branch, title; the optional attributes are python-gitlab 8.6.0's ProjectMergeRequestManager
# _create_attrs. Unknown attributes are refused here so a client cannot rely on invented ones.
CREATE_MR_BODY: dict[str, Any] = {
    "type": "object",
    "required": ["source_branch", "target_branch", "title"],
    "properties": {
        "source_branch": {"type": "string", "minLength": 1},
        "target_branch": {"type": "string", "minLength": 1},
        "title": {"type": "string", "minLength": 1},
        "description": {"type": "string", "maxLength": 1048576},
        "assignee_id": {"type": "integer"},
        "assignee_ids": {"type": "array", "items": {"type": "integer"}},
        "reviewer_ids": {"type": "array", "items": {"type": "integer"}},
        "labels": {"type": ["string", "array"]},
        "milestone_id": {"type": "integer"},
        "remove_source_branch": {"type": "boolean"},
        "allow_collaboration": {"type": "boolean"},
        "allow_maintainer_to_push": {"type": "boolean"},
        "approvals_before_merge": {"type": "integer"},
        "squash": {"type": "boolean"},
        "target_project_id": {"type": "integer"},
    },
    "additionalProperties": False,
}

# "Update MR" (PUT /projects/:id/merge_requests/:merge_request_iid, doc/api/merge_requests.md): at least one
# attribute; these are python-gitlab 8.6.0's ProjectMergeRequestManager _update_attrs that matter here.
UPDATE_MR_BODY: dict[str, Any] = {
    "type": "object",
    "minProperties": 1,
    "properties": {
        "title": {"type": "string", "minLength": 1},
        "description": {"type": "string", "maxLength": 1048576},
        "target_branch": {"type": "string", "minLength": 1},
        "state_event": {"type": "string", "enum": ["close", "reopen"]},
        "labels": {"type": ["string", "array"]},
        "remove_source_branch": {"type": "boolean"},
        "squash": {"type": "boolean"},
        "discussion_locked": {"type": "boolean"},
    },
    "additionalProperties": False,
}

# Not in the shared subset: used by the webhook server (authorisation, `/fix` in branch mode) and clients
# that ask who they are.
EXTRA_ROUTES: list[tuple[str, str, dict[str, Any]]] = [
    ("get", "/projects/{id}/members/all/{user_id}", {}),
    ("get", "/user", {}),
    (
        "post",
        "/projects/{id}/merge_requests",
        {"requestBody": {"content": {"application/json": {"schema": CREATE_MR_BODY}}}},
    ),
    (
        "put",
        "/projects/{id}/merge_requests/{merge_request_iid}",
        {"requestBody": {"content": {"application/json": {"schema": UPDATE_MR_BODY}}}},
    ),
]


@dataclass
class Request:
    method: str
    path: str  # below the API root, undecoded, e.g. /projects/42/merge_requests/7/discussions
    query: dict[str, str]
    body: Any
    auth: str  # "private" | "job" | "none" | "bad" (never the token itself)
    status: int = 0
    user: str | None = None  # the token's user


@dataclass
class _Failure:
    method: str
    path: re.Pattern[str]
    status: int
    headers: dict[str, str]
    times: int


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "+", "-", " "
    old_pos: int
    new_pos: int

    @property
    def old_line(self) -> int | None:
        return None if self.kind == "+" else self.old_pos

    @property
    def new_line(self) -> int | None:
        return None if self.kind == "-" else self.new_pos


@dataclass
class DiffFile:
    old_path: str
    new_path: str
    new_file: bool = False
    deleted_file: bool = False
    renamed_file: bool = False
    a_mode: str = "100644"
    b_mode: str = "100644"
    body: str = ""  # from the first @@ on, as GitLab's `diff` field
    lines: list[DiffLine] = field(default_factory=list)

    def line_code(self, ln: DiffLine) -> str:
        return f"{hashlib.sha1(self.new_path.encode()).hexdigest()}_{ln.old_pos}_{ln.new_pos}"


@dataclass
class Version:
    id: int
    base_sha: str
    start_sha: str
    head_sha: str
    files: list[DiffFile]
    created_at: str


_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def split_diff(diff_text: str) -> list[DiffFile]:
    """`git diff` text -> GitLab diff files, numbered like Gitlab::Diff::Parser (independent of bot.diff)."""
    files: list[DiffFile] = []
    cur: DiffFile | None = None
    body: list[str] = []
    in_body = False
    old = new = 0

    def close() -> None:
        if cur is not None:
            cur.body = "".join(body)
            files.append(cur)

    for raw in diff_text.splitlines(keepends=True):
        line = raw.rstrip("\n")
        if line.startswith("diff --git "):
            close()
            m = re.match(r"diff --git a/(.*) b/(.*)$", line)
            a, b = (m.group(1), m.group(2)) if m else ("", "")
            cur, body, in_body = DiffFile(old_path=a, new_path=b), [], False
            continue
        if cur is None:
            continue
        if not in_body:
            if line.startswith("new file mode"):
                cur.new_file, cur.b_mode = True, line.split()[-1]
            elif line.startswith("deleted file mode"):
                cur.deleted_file, cur.a_mode = True, line.split()[-1]
            elif line.startswith("rename from "):
                cur.renamed_file, cur.old_path = True, line[len("rename from ") :]
            elif line.startswith("rename to "):
                cur.new_path = line[len("rename to ") :]
            elif line.startswith("index ") and len(line.split()) == 3:
                cur.a_mode = cur.b_mode = line.split()[2]
            elif line.startswith("@@"):
                in_body = True
        if not in_body:
            continue
        body.append(raw if raw.endswith("\n") else raw + "\n")
        m = _HUNK.match(line)
        if m:
            old, new = int(m.group(1)), int(m.group(2))
            continue
        kind = line[:1]
        if kind == "\\":
            continue
        if kind not in "+- ":
            kind = " "
        cur.lines.append(DiffLine(kind, old, new))
        if kind != "+":
            old += 1
        if kind != "-":
            new += 1
    close()
    return files


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _load_routes() -> list[tuple[str, re.Pattern[str], str, dict[str, Any]]]:
    spec = json.loads(SPEC_PATH.read_text())
    routes = []
    paths = dict(spec["paths"])
    for method, tpl, extra in EXTRA_ROUTES:
        paths.setdefault(tpl, {})[method] = {"parameters": [], "x-extra": True, **extra}
    for tpl, ops in paths.items():
        rx = re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", tpl) + "$")
        for method, op in ops.items():
            routes.append((method, rx, tpl, op))
    # literal segments first: /notes/{note_id}/award_emoji must not match a shorter template
    routes.sort(key=lambda r: -r[2].count("/"))
    return routes


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeGitLab


class FakeGitLab:
    def __init__(
        self,
        *,
        project_id: int = 42,
        project_path: str = "group/project",
        mr_iid: int = 7,
        diff_text: str = "",
        base_sha: str = "0" * 40,
        start_sha: str | None = None,
        head_sha: str = "1" * 40,
        title: str = "A change",
        description: str = "",
        author: str = "dev",
        labels: tuple[str, ...] = (),
        members: dict[str, int] | None = None,
        tokens: dict[str, str] | None = None,
        job_tokens: tuple[str, ...] = ("job-token",),
        prefix: str = "/api/v4",
        file_positions: bool = True,
        tls: tuple[Path, Path] | None = None,
        source_branch: str = "feature",
        target_branch: str = "main",
        fork: bool = False,
    ) -> None:
        self.project_id, self.project_path, self.mr_iid = project_id, project_path, mr_iid
        self.title, self.description = title, description
        self.labels = list(labels)
        self.mr_edits = 0  # PUT of the merge request (the description)
        self.source_branch, self.target_branch = source_branch, target_branch
        self.fork = fork  # the MR's source branch is in another project
        self.created_mrs: list[dict[str, Any]] = []
        self.prefix = "/" + prefix.strip("/")
        self.file_positions = file_positions
        self.tokens = tokens if tokens is not None else {TOKEN: BOT_USER}
        self.job_tokens = job_tokens
        self._tls = tls
        self._ids = itertools.count(1001)
        self.users: dict[str, int] = {}
        self.members = {BOT_USER: 40, author: 30, **(members or {})}
        self.author = author
        for name in [*self.members, *self.tokens.values(), author]:
            self.user_id(name)
        self.versions: list[Version] = []  # oldest first
        self.push(diff_text, head_sha, base_sha=base_sha, start_sha=start_sha)
        self.discussions: list[dict[str, Any]] = []
        self.award_emoji: list[dict[str, Any]] = []
        self.requests: list[Request] = []
        self.violations: list[str] = []  # requests a real GitLab would refuse as malformed (a client bug)
        self.rejected: list[tuple[dict[str, Any], str]] = []  # (position, GitLab's message)
        self._failures: list[_Failure] = []
        self._routes = _load_routes()
        self._lock = threading.RLock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- test-facing API ------------------------------------------------------------------------

    def __enter__(self) -> FakeGitLab:
        srv = _Server(("127.0.0.1", 0), _Handler)
        srv.fake = self
        if self._tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(self._tls[0]), str(self._tls[1]))
            srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        self._server = srv
        self._thread = threading.Thread(target=srv.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    @property
    def server_url(self) -> str:
        assert self._server is not None, "use FakeGitLab as a context manager"
        scheme = "https" if self._tls else "http"
        root = self.prefix[: -len("/api/v4")] if self.prefix.endswith("/api/v4") else self.prefix
        return f"{scheme}://127.0.0.1:{self._server.server_address[1]}{root}"

    @property
    def url(self) -> str:
        """The API root, like CI_API_V4_URL."""
        return self.server_url.rstrip("/") + "/api/v4" if self.prefix.endswith("/api/v4") else self.server_url

    @property
    def notes(self) -> list[dict[str, Any]]:
        """Every MR note (thread notes included), oldest first, like GET .../notes?sort=asc."""
        return [n for d in self.discussions for n in d["notes"]]

    @property
    def diff_notes(self) -> list[dict[str, Any]]:
        return [n for n in self.notes if n["type"] == "DiffNote"]

    def user_id(self, username: str) -> int:
        return self.users.setdefault(username, 100 + len(self.users))

    def push(
        self, diff_text: str, head_sha: str, *, base_sha: str | None = None, start_sha: str | None = None
    ) -> None:
        """A new MR version (a push to the source branch)."""
        base = base_sha or self.versions[-1].base_sha
        self.versions.append(
            Version(len(self.versions) + 1, base, start_sha or base, head_sha, split_diff(diff_text), _now())
        )

    @property
    def latest(self) -> Version:
        return self.versions[-1]

    def fail(
        self,
        method: str,
        path_regex: str,
        status: int,
        *,
        times: int = 1,
        headers: dict[str, str] | None = None,
    ) -> None:
        """The next `times` matching requests get `status` (e.g. 502, or 429 with Retry-After)."""
        self._failures.append(_Failure(method.upper(), re.compile(path_regex), status, headers or {}, times))

    def count(self, method: str | None = None, path_regex: str = "") -> int:
        rx = re.compile(path_regex)
        return sum(
            1 for r in self.requests if (method is None or r.method == method.upper()) and rx.search(r.path)
        )

    def add_note(self, body: str, author: str = "reviewer") -> dict[str, Any]:
        """A human's top-level MR comment (e.g. a `/review` command)."""
        with self._lock:
            return self._new_discussion(body, None, author)["notes"][0]

    def version_for(self, position: dict[str, Any]) -> Version | None:
        """The MR version a position's shas name (GitLab diffs base..head, so start == base also fits)."""
        version = next(
            (
                v
                for v in reversed(self.versions)
                if (v.base_sha, v.start_sha, v.head_sha)
                == (position.get("base_sha"), position.get("start_sha"), position.get("head_sha"))
            ),
            None,
        )
        if version is None and position.get("start_sha") == position.get("base_sha"):
            # start == base: GitLab compares base..head straight, which any version with that base/head shows
            version = next(
                (
                    v
                    for v in self.versions
                    if (v.base_sha, v.head_sha) == (position.get("base_sha"), position.get("head_sha"))
                ),
                None,
            )
        return version

    def position_error(self, position: dict[str, Any]) -> str | None:
        """GitLab's answer to a diff position, or None when GitLab would accept it."""
        ptype = position.get("position_type")
        version = self.version_for(position)
        if version is None:
            return LINE_CODE_ERROR
        f = next(
            (
                f
                for f in version.files
                if f.new_path == position.get("new_path") and f.old_path == position.get("old_path")
            ),
            None,
        )
        if ptype == "file":
            return None if f is not None else '400 Bad request - Note {:position=>["is invalid"]}'
        if position.get("new_line") is None and position.get("old_line") is None:
            return INCOMPLETE_ERROR
        if f is None:
            return LINE_CODE_ERROR
        line = next(
            (
                ln
                for ln in reversed(f.lines)
                if ln.old_line == position.get("old_line") and ln.new_line == position.get("new_line")
            ),
            None,
        )
        if line is None:
            return LINE_CODE_ERROR
        rng = position.get("line_range")
        if rng is not None:
            by_code = {f.line_code(ln): (i, ln) for i, ln in enumerate(f.lines)}
            ends = []
            for key in ("start", "end"):
                end = (rng or {}).get(key) or {}
                hit = by_code.get(end.get("line_code", ""))
                if hit is None or end.get("type") != ("new" if hit[1].kind == "+" else "old"):
                    return LINE_CODE_ERROR
                for key_line in ("old_line", "new_line"):  # optional, but must name the same line
                    if key_line in end and end[key_line] != getattr(hit[1], key_line):
                        return LINE_CODE_ERROR
                ends.append(hit[0])
            if ends[0] > ends[1] or f.lines[ends[1]] != line:
                return LINE_CODE_ERROR
        return None

    def line_for(self, position: dict[str, Any]) -> tuple[DiffFile, DiffLine] | None:
        """The diff line a (text) position sits on in its version, for assertions."""
        version = self.version_for(position)
        for f in version.files if version is not None else []:
            if f.new_path == position.get("new_path"):
                for ln in f.lines:
                    if ln.old_line == position.get("old_line") and ln.new_line == position.get("new_line"):
                        return f, ln
        return None

    # -- emulated resources ---------------------------------------------------------------------

    def _user(self, username: str) -> dict[str, Any]:
        return {
            "id": self.user_id(username),
            "username": username,
            "name": username.title(),
            "state": "active",
        }

    def _new_discussion(self, body: str, position: dict[str, Any] | None, author: str) -> dict[str, Any]:
        note_id = next(self._ids)
        did = hashlib.sha1(f"discussion-{note_id}".encode()).hexdigest()
        diff_note = position is not None
        note = {
            "id": note_id,
            "type": "DiffNote" if diff_note else None,
            "body": body,
            "attachment": None,
            "author": self._user(author),
            "created_at": _now(),
            "updated_at": _now(),
            "system": False,
            "noteable_id": 9000 + self.mr_iid,
            "noteable_type": "MergeRequest",
            "noteable_iid": self.mr_iid,
            "project_id": self.project_id,
            "resolvable": diff_note,
            "resolved": False if diff_note else None,
            "resolved_by": None,
            "confidential": False,
            "internal": False,
        }
        if diff_note:
            note["position"] = {"line_range": None, **position}
        d = {"id": did, "individual_note": not diff_note, "notes": [note]}
        self.discussions.append(d)
        return d

    def _mr_json(self) -> dict[str, Any]:
        v = self.latest
        return {
            "id": 9000 + self.mr_iid,
            "iid": self.mr_iid,
            "project_id": self.project_id,
            "title": self.title,
            "description": self.description,
            "state": "opened",
            "draft": False,
            "author": self._user(self.author),
            "labels": list(self.labels),
            "source_branch": self.source_branch,
            "target_branch": self.target_branch,
            "source_project_id": self.project_id + 1000 if self.fork else self.project_id,
            "target_project_id": self.project_id,
            "sha": v.head_sha,
            "diff_refs": {"base_sha": v.base_sha, "head_sha": v.head_sha, "start_sha": v.start_sha},
            "web_url": f"{self.server_url}/{self.project_path}/-/merge_requests/{self.mr_iid}",
            "changes_count": str(len(v.files)),
        }

    def _diff_json(self, f: DiffFile, unidiff: bool) -> dict[str, Any]:
        body = f.body
        if unidiff and body:
            src = "/dev/null" if f.new_file else f"a/{f.old_path}"
            dst = "/dev/null" if f.deleted_file else f"b/{f.new_path}"
            body = f"--- {src}\n+++ {dst}\n{body}"
        return {
            "old_path": f.old_path,
            "new_path": f.new_path,
            "a_mode": f.a_mode,
            "b_mode": f.b_mode,
            "diff": body,
            "new_file": f.new_file,
            "renamed_file": f.renamed_file,
            "deleted_file": f.deleted_file,
            "generated_file": False,
            "too_large": False,
            "collapsed": False,
        }


class _Reply(Exception):
    def __init__(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        super().__init__(status)
        self.status, self.body, self.headers = status, body, headers or {}


def _form_to_dict(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, vals in parse_qs(text, keep_blank_values=True).items():
        parts = re.findall(r"[^\[\]]+", key)
        node = out
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        val: Any = vals[-1]
        if re.fullmatch(r"-?\d+", val) and parts[-1] in ("new_line", "old_line", "width", "height"):
            val = int(val)
        node[parts[-1]] = val
    return out


def _as_bool(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    s = str(v).lower()
    return True if s in ("true", "1", "t", "yes") else False if s in ("false", "0", "f", "no") else None


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
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        body: Any = None
        if raw:
            text = raw.decode("utf-8", "replace")
            try:
                body = json.loads(text) if ctype == "application/json" else _form_to_dict(text)
            except json.JSONDecodeError:
                body = text
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        path = split.path[len(fake.prefix) :] if split.path.startswith(fake.prefix + "/") else None
        req = Request(
            method, path or split.path, query, body, self._auth_kind(fake), user=self._user_of(fake)
        )
        with fake._lock:
            fake.requests.append(req)
            try:
                if path is None:
                    raise _Reply(404, {"message": "404 Not Found"})
                status, payload, headers = self._route(fake, method, path, query, body, req)
            except _Reply as r:
                status, payload, headers = r.status, r.body, r.headers
            req.status = status
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _user_of(self, fake: FakeGitLab) -> str | None:
        bearer = self.headers.get("Authorization", "")
        tok = bearer[len("Bearer ") :] if bearer.startswith("Bearer ") else self.headers.get("PRIVATE-TOKEN")
        return fake.tokens.get(tok or "")

    def _auth_kind(self, fake: FakeGitLab) -> str:
        tok = self.headers.get("PRIVATE-TOKEN")
        bearer = self.headers.get("Authorization", "")
        if bearer.startswith("Bearer "):
            tok = bearer[len("Bearer ") :]
        if tok is not None:
            return "private" if tok in fake.tokens else "bad"
        job = self.headers.get("JOB-TOKEN")
        if job is not None:
            return "job" if job in fake.job_tokens else "bad"
        return "none"

    def _route(
        self, fake: FakeGitLab, method: str, path: str, query: dict[str, str], body: Any, req: Request
    ) -> tuple[int, Any, dict[str, str]]:
        for f in fake._failures:
            if f.times > 0 and f.method == method and f.path.search(path):
                f.times -= 1
                raise _Reply(f.status, {"message": f"{f.status} injected"}, f.headers)
        for m, rx, tpl, op in fake._routes:
            hit = rx.match(path)
            if hit and m == method.lower():
                params = {k: unquote(v) for k, v in hit.groupdict().items()}
                self._check_auth(fake, method, tpl, req)
                _validate(fake, method, tpl, op, params, query, body)
                return _dispatch(fake, method, tpl, params, query, body)
        if any(rx.match(path) for _, rx, _, _ in fake._routes):
            fake.violations.append(f"{method} {path}: method not in the API subset")
            raise _Reply(405, {"message": "405 Method Not Allowed"})
        fake.violations.append(f"{method} {path}: no such endpoint in the API subset")
        raise _Reply(404, {"error": "404 Not Found"})

    def _check_auth(self, fake: FakeGitLab, method: str, tpl: str, req: Request) -> None:
        if req.auth in ("none", "bad"):
            raise _Reply(401, {"message": "401 Unauthorized"})
        if req.auth == "job":
            readable = method == "GET" and (tpl.endswith("{merge_request_iid}") or tpl.endswith("/notes"))
            if not readable:
                raise _Reply(401, {"message": "401 Unauthorized"})
            return
        level = fake.members.get(req.user or "", 0)
        if method != "GET" and level < 20:  # a private project: Reporter to comment
            raise _Reply(403, {"message": "403 Forbidden"})
        if tpl == "/projects/{id}/merge_requests" and level < 30:
            raise _Reply(403, {"message": "403 Forbidden"})  # a branch of the project: Developer
        if tpl.endswith("/discussions/{discussion_id}") and level < 30 and req.user != fake.author:
            raise _Reply(403, {"message": "403 Forbidden"})  # resolving threads: Developer, or the MR author


def _fail_schema(fake: FakeGitLab, where: str, msg: str) -> None:
    fake.violations.append(f"{where}: {msg}")
    raise _Reply(400, {"error": msg})


def _validate(
    fake: FakeGitLab,
    method: str,
    tpl: str,
    op: dict[str, Any],
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
) -> None:
    where = f"{method} {tpl}"
    for p in op.get("parameters", []):
        name, schema = p["name"], p.get("schema", {})
        if p["in"] == "path":
            if schema.get("type") == "integer" and not params[name].isdigit():
                _fail_schema(fake, where, f"{name} is invalid")
        elif p["in"] == "query":
            # Grape merges query and body parameters: a query parameter may come in the JSON body.
            val = query.get(name, body.get(name) if isinstance(body, dict) else None)
            if val is None:
                if p.get("required"):
                    _fail_schema(fake, where, f"{name} is missing")
                continue
            if schema.get("type") == "integer":
                if not str(val).isdigit():
                    _fail_schema(fake, where, f"{name} is invalid")
                if "maximum" in schema and int(val) > schema["maximum"]:
                    _fail_schema(fake, where, f"{name} does not have a valid value")
            if schema.get("type") == "boolean" and _as_bool(val) is None:
                _fail_schema(fake, where, f"{name} is invalid")
    rb = op.get("requestBody")
    if rb is None:
        return
    if body is None:
        _fail_schema(fake, where, "request body is missing")
    schema = rb["content"]["application/json"]["schema"]
    if isinstance(body, dict) and len(str(body.get("body", ""))) > MAX_NOTE:
        raise _Reply(400, {"message": TOO_LONG_ERROR})
    try:
        jsonschema.validate(body, schema)
    except jsonschema.ValidationError as exc:
        loc = "".join(f"[{p}]" for p in exc.absolute_path)
        _fail_schema(fake, where, f"body{loc}: {exc.message}")
    pos = body.get("position") if isinstance(body, dict) else None
    if isinstance(pos, dict):
        pschema = schema["properties"]["position"]
        if pos.get("position_type") == "text":
            for name in pschema.get("if_text_then_required", []):
                if name not in pos:
                    _fail_schema(fake, where, f"position[{name}] is missing")
        if pos.get("position_type") == "file" and not fake.file_positions:
            raise _Reply(400, {"error": "position[position_type] does not have a valid value"})


def _page(
    fake: FakeGitLab, items: list[Any], query: dict[str, str], path: str
) -> tuple[int, Any, dict[str, str]]:
    per = int(query.get("per_page", 20))
    page = max(1, int(query.get("page", 1)))
    total_pages = max(1, -(-len(items) // per))
    chunk = items[(page - 1) * per : page * per]
    headers = {
        "X-Page": str(page),
        "X-Per-Page": str(per),
        "X-Total": str(len(items)),
        "X-Total-Pages": str(total_pages),
        "X-Next-Page": str(page + 1) if page < total_pages else "",
        "X-Prev-Page": str(page - 1) if page > 1 else "",
    }
    if page < total_pages:
        rest = "&".join(f"{k}={v}" for k, v in query.items() if k != "page")
        headers["Link"] = f'<{fake.url}{path}?page={page + 1}&{rest}>; rel="next"'
    return 200, chunk, headers


def _dispatch(
    fake: FakeGitLab, method: str, tpl: str, params: dict[str, str], query: dict[str, str], body: Any
) -> tuple[int, Any, dict[str, str]]:
    if tpl == "/user":
        return 200, fake._user(BOT_USER), {}
    if params.get("id") not in (str(fake.project_id), fake.project_path):
        raise _Reply(404, {"message": "404 Project Not Found"})
    if tpl.endswith("/members/all/{user_id}"):
        name = next((u for u, i in fake.users.items() if str(i) == params["user_id"]), None)
        if name is None or name not in fake.members:
            raise _Reply(404, {"message": "404 Not found"})
        return 200, {**fake._user(name), "access_level": fake.members[name]}, {}
    if tpl == "/projects/{id}/merge_requests":
        return 201, _create_mr(fake, body), {}
    if params.get("merge_request_iid") != str(fake.mr_iid):
        raise _Reply(404, {"message": "404 Not found"})
    tail = tpl.split("{merge_request_iid}", 1)[1]
    path = tpl.replace("{id}", str(params["id"])).replace("{merge_request_iid}", str(fake.mr_iid))
    v = fake.latest
    if tail == "" and method == "GET":
        return 200, fake._mr_json(), {}
    if tail == "" and method == "PUT":
        fake.title = body.get("title", fake.title)
        fake.description = body.get("description", fake.description)
        fake.mr_edits += 1
        return 200, fake._mr_json(), {}
    if tail == "/versions":
        return (
            200,
            [
                {
                    "id": x.id,
                    "head_commit_sha": x.head_sha,
                    "base_commit_sha": x.base_sha,
                    "start_commit_sha": x.start_sha,
                    "created_at": x.created_at,
                    "merge_request_id": 9000 + fake.mr_iid,
                    "state": "collected",
                    "real_size": str(len(x.files)),
                    "patch_id_sha": None,
                }
                for x in reversed(fake.versions)
            ],
            {},
        )
    if tail == "/diffs":
        unidiff = bool(_as_bool(query.get("unidiff", "false")))
        return _page(fake, [fake._diff_json(f, unidiff) for f in v.files], query, path)
    if tail == "/changes":
        return (
            200,
            {**fake._mr_json(), "changes": [fake._diff_json(f, False) for f in v.files], "overflow": False},
            {},
        )
    if tail == "/discussions" and method == "GET":
        return _page(fake, fake.discussions, query, path)
    if tail == "/discussions" and method == "POST":
        pos = body.get("position")
        if pos is not None:
            err = fake.position_error(pos)
            if err is not None:
                fake.rejected.append((pos, err))
                raise _Reply(400, {"message": err})
        return 201, fake._new_discussion(body["body"], pos, BOT_USER), {}
    if tail == "/notes" and method == "GET":
        notes = fake.notes if query.get("sort", "desc") == "asc" else list(reversed(fake.notes))
        return _page(fake, notes, query, path)
    if tail == "/notes" and method == "POST":
        return 201, fake._new_discussion(body["body"], None, BOT_USER)["notes"][0], {}
    if tail == "/award_emoji":
        return 201, _award(fake, "MergeRequest", 9000 + fake.mr_iid, body["name"]), {}
    if tail.startswith("/discussions/{discussion_id}"):
        d = next((d for d in fake.discussions if d["id"] == params["discussion_id"]), None)
        if d is None:
            raise _Reply(404, {"message": "404 Not found"})
        return _discussion_op(fake, d, method, tail, params, query, body)
    if tail.startswith("/notes/{note_id}"):
        note = next((n for n in fake.notes if str(n["id"]) == params["note_id"]), None)
        if note is None:
            raise _Reply(404, {"message": "404 Not found"})
        if tail.endswith("/award_emoji"):
            return 201, _award(fake, "Note", note["id"], body["name"]), {}
        if method == "GET":
            return 200, note, {}
        if method == "PUT":
            note["body"], note["updated_at"] = body["body"], _now()
            return 200, note, {}
        for d in fake.discussions:
            d["notes"] = [n for n in d["notes"] if n is not note]
        fake.discussions = [d for d in fake.discussions if d["notes"]]
        return 204, None, {}
    raise _Reply(404, {"message": "404 Not found"})


def _discussion_op(
    fake: FakeGitLab,
    d: dict[str, Any],
    method: str,
    tail: str,
    params: dict[str, str],
    query: dict[str, str],
    body: Any,
) -> tuple[int, Any, dict[str, str]]:
    if tail == "/discussions/{discussion_id}":  # PUT: resolve / unresolve
        raw = query.get("resolved", (body or {}).get("resolved"))
        resolved = bool(_as_bool(raw))
        if not d["notes"][0].get("resolvable"):
            raise _Reply(400, {"message": "400 Bad request - discussion is not resolvable"})
        for n in d["notes"]:
            n["resolved"] = resolved
            n["resolved_by"] = fake._user(BOT_USER) if resolved else None
        return 200, d, {}
    if tail == "/discussions/{discussion_id}/notes":
        note = {**d["notes"][0], "id": next(fake._ids), "body": body["body"], "created_at": _now()}
        note.pop("position", None)
        d["notes"].append(note)
        return 201, note, {}
    note = next((n for n in d["notes"] if str(n["id"]) == params["note_id"]), None)
    if note is None:
        raise _Reply(404, {"message": "404 Not found"})
    if method == "DELETE":
        d["notes"].remove(note)
        return 204, None, {}
    if "body" in (body or {}):
        note["body"] = body["body"]
    else:
        note["resolved"] = bool(_as_bool(body.get("resolved")))
    return 200, note, {}


def _award(fake: FakeGitLab, kind: str, target: int, name: str) -> dict[str, Any]:
    award = {
        "id": next(fake._ids),
        "name": name,
        "user": fake._user(BOT_USER),
        "created_at": _now(),
        "awardable_id": target,
        "awardable_type": kind,
    }
    fake.award_emoji.append(award)
    return award


def _create_mr(fake: FakeGitLab, body: dict[str, Any]) -> dict[str, Any]:
    iid = fake.mr_iid + 1 + len(fake.created_mrs)
    title = body["title"]
    mr = {
        "id": 9000 + iid,
        "iid": iid,
        "project_id": fake.project_id,
        "title": title,
        "description": body.get("description", ""),
        "state": "opened",
        "draft": title.startswith(("Draft:", "[Draft]", "(Draft)")),
        "author": fake._user(BOT_USER),
        "source_branch": body["source_branch"],
        "target_branch": body["target_branch"],
        "source_project_id": fake.project_id,
        "target_project_id": fake.project_id,
        "force_remove_source_branch": bool(body.get("remove_source_branch", False)),
        "web_url": f"{fake.server_url}/{fake.project_path}/-/merge_requests/{iid}",
    }
    fake.created_mrs.append(mr)
    return mr
