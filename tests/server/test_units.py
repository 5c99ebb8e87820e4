"""Pure parts of the server: signatures, payload parsing, decisions, leases, coalescing, secrets."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bot.config import ServerConfig
from bot.jobs.job import Job
from bot.jobs.policy import decide
from bot.server import events, verify
from bot.server.ledger import Ledger, owner_id
from bot.server.queue import JobQueue, RunStats, make_huey
from bot.server.secrets import from_env
from tests.server.stack import PAYLOADS, payload

VECTOR = json.loads((PAYLOADS / "github" / "x-hub-signature-256.test-vector.json").read_text())


def test_github_signature_matches_the_documented_vector() -> None:
    body = VECTOR["payload"].encode()
    assert verify.github_signature(VECTOR["secret"], body) == VECTOR["X-Hub-Signature-256"]
    assert verify.github_ok(VECTOR["secret"], body, VECTOR["X-Hub-Signature-256"])
    assert not verify.github_ok(VECTOR["secret"], body + b" ", VECTOR["X-Hub-Signature-256"])
    assert not verify.github_ok(None, body, VECTOR["X-Hub-Signature-256"])  # no secret configured: refuse
    assert not verify.github_ok(VECTOR["secret"], body, None)
    assert (
        verify.gitlab_ok("t0k", "t0k") and not verify.gitlab_ok("t0k", "t0K") and not verify.gitlab_ok("", "")
    )


def test_real_github_payloads_parse() -> None:
    e = events.github("issue_comment", payload("issue_comment.created.on_pr.pac-retest.json"))
    assert e is not None and (e.kind, e.repo, e.number, e.association, e.body) == (
        "comment",
        "chmouel/scratchmyback",
        1,
        "OWNER",
        "/retest",
    )
    assert e.installation == 16556382
    assert events.github("issue_comment", payload("issue_comment.created.octokit.json")) is None  # not a PR
    opened = events.github("pull_request", payload("pull_request.opened.pac.json"))
    assert opened is not None and (opened.kind, opened.number) == ("pr", 79)
    sync = events.github("pull_request", payload("pull_request.synchronize.octokit.json"))
    assert sync is not None and sync.head_sha
    rc = events.github(
        "pull_request_review_comment", payload("pull_request_review_comment.created.octokit.json")
    )
    assert rc is not None and rc.number == 2


def test_real_gitlab_payloads_parse() -> None:
    note = events.gitlab(payload("note_merge_request.go-gitlab.json", "gitlab"))
    assert note is not None and (note.kind, note.repo, note.number, note.body) == (
        "comment",
        "gitlab-org/gitlab-test",
        1,
        "This MR needs work.",
    )
    mr = events.gitlab(payload("merge_request.go-gitlab.json", "gitlab"))
    assert mr is not None and (mr.kind, mr.number, mr.action) == ("pr", 1, "open")
    assert events.gitlab(payload("pipeline.go-gitlab.json", "gitlab")) is None


def _comment(body: str, association: str = "OWNER", forge: str = "github") -> events.Event:
    return events.Event(
        forge,
        "comment",
        "o/r",
        3,
        "created" if forge == "github" else "create",
        body=body,
        association=association,
        comment_id=9,
        author="a",
    )


def test_decisions() -> None:
    cfg = ServerConfig()
    assert decide(_comment("/review -i"), cfg, paused=False).job.incremental  # type: ignore[union-attr]
    refusal = decide(_comment("/review", "NONE"), cfg, paused=False).job
    assert refusal is not None and refusal.kind == "refuse"
    assert decide(_comment("/retest"), cfg, paused=False).job is None  # another bot's command
    assert decide(_comment("/ask"), cfg, paused=False).job.kind == "help"  # type: ignore[union-attr]
    gl = decide(_comment("/review", "", "gitlab"), cfg, paused=False).job
    assert gl is not None and gl.check_access  # GitLab: Developer+ is checked through the API
    shared = ServerConfig(command_prefix="/prereview")
    assert decide(_comment("/prereview frobnicate"), shared, paused=False).job.kind == "help"  # type: ignore[union-attr]
    assert decide(_comment("/review"), shared, paused=False).job is None
    pr = events.Event("github", "pr", "o/r", 3, "synchronize")
    assert decide(pr, cfg, paused=True).job is None
    assert decide(pr, ServerConfig(auto_review=False), paused=False).job is None
    assert decide(pr, ServerConfig(no_auto_review=["o/*"]), paused=False).job is None
    assert decide(pr, ServerConfig(no_auto_review=["x/*"]), paused=False).job is not None
    assert decide(pr, cfg, paused=False).job.auto  # type: ignore[union-attr]


def test_comment_text_cannot_reach_settings() -> None:
    job = decide(_comment("/ask github_api_url=http://evil --token x"), ServerConfig(), paused=False).job
    assert job is not None and job.kind == "ask" and job.text.startswith("github_api_url")
    assert set(Job.from_dict(json.loads(job.to_json())).__dict__) == set(job.__dict__)


@pytest.fixture
def queue(tmp_path) -> JobQueue:
    cfg = ServerConfig(queue_path=str(tmp_path / "q.sqlite3"), coalesce_seconds=0, busy_retry_seconds=0)
    ran: list[Job] = []

    class Recorder:
        def ack(self, job: Job) -> None:
            pass

        def run(self, job: Job) -> RunStats:
            ran.append(job)
            return RunStats(10, 5, 0.5)

    q = JobQueue(make_huey(cfg), cfg, runner_factory=Recorder)
    q.ran = ran  # type: ignore[attr-defined]
    return q


def _drain(q: JobQueue) -> None:
    while (task := q.huey.dequeue()) is not None:
        q.huey.execute(task)


def test_a_burst_of_reviews_for_one_pr_coalesces(queue: JobQueue) -> None:
    for sha in "abc":
        queue.submit(Job("review", "github", "o/r", 1, head_sha=sha * 40, auto=True))
    queue.submit(Job("help", "github", "o/r", 1, comment_id=5))
    queue.submit(Job("review", "github", "o/r", 2, head_sha="d" * 40))
    _drain(queue)
    ran = [(j.kind, j.number, j.head_sha) for j in queue.ran]  # type: ignore[attr-defined]
    assert ran == [("review", 1, "c" * 40), ("help", 1, None), ("review", 2, "d" * 40)]
    assert list(queue.records()) == []
    assert queue.ledger.count("m:jobs:coalesced", 0) == 2


def test_a_busy_pr_defers_its_next_job(queue: JobQueue) -> None:
    held = queue.ledger.acquire("github:o/r#1", "other", owner_id(), 60)
    assert held is not None
    queue.submit(Job("help", "github", "o/r", 1))
    task = queue.huey.dequeue()
    queue.huey.execute(task)
    assert queue.ran == [] and queue.depth() == 1  # type: ignore[attr-defined]
    queue.ledger.release(held)
    _drain(queue)
    assert len(queue.ran) == 1  # type: ignore[attr-defined]


def test_a_dead_holders_lease_is_taken_over_once(tmp_path) -> None:
    q = make_huey(ServerConfig(queue_path=str(tmp_path / "q.sqlite3")))
    led = Ledger(q.storage)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    owner = f"{owner_id().rpartition(':')[0]}:{dead.stdout.strip()}"
    assert led.acquire("pr", "job1", owner, 60) is not None
    assert led.acquire("pr", "job2", owner_id(), 60) is not None  # holder is dead: taken over
    assert led.acquire("pr", "job3", owner_id(), 60) is None  # the new holder lives
    remote = Ledger(q.storage, clock=lambda: 1e12)  # far future: a remote holder's lease has expired
    led.delete("lease:pr2")
    assert led.acquire("pr2", "j", "elsewhere:1", 60) is not None
    assert remote.acquire("pr2", "k", owner_id(), 60) is not None


def test_secrets_from_env_or_files(tmp_path) -> None:
    f = tmp_path / "secret"
    f.write_text("from-file\n")
    s = from_env({"PREREVIEW_GITHUB_WEBHOOK_SECRET_FILE": str(f), "PREREVIEW_GITLAB_TOKEN": "glpat-x"})
    assert s.github_webhook_secret == "from-file" and s.gitlab_token == "glpat-x"
    assert "glpat" not in repr(s) and "from-file" not in repr(s)
    with pytest.raises(Exception, match="_FILE"):
        from_env({"PREREVIEW_GITLAB_TOKEN_FILE": str(tmp_path / "missing")})


def test_serve_refuses_to_start_without_a_webhook_secret(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREREVIEW_")}
    r = subprocess.run(
        [sys.executable, "-m", "bot", "serve", "--queue-path", str(tmp_path / "q")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 2 and "PREREVIEW_GITHUB_WEBHOOK_SECRET" in r.stderr and "Traceback" not in r.stderr


def test_github_app_installation_token(tmp_path) -> None:
    """App id + private key -> a JWT-signed request for the webhook's installation token (loopback)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from bot.config import Config
    from bot.server.forge_session import _github_token
    from bot.server.secrets import Secrets

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    seen: list[tuple[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            seen.append((self.path, self.headers.get("Authorization", "")))
            body = json.dumps({"token": "ghs_installation", "expires_at": "2099-01-01T00:00:00Z"}).encode()
            self.send_response(201)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        cfg = Config.model_validate(
            {"server": {"github_api_url": f"http://127.0.0.1:{server.server_address[1]}"}}
        )
        job = Job("review", "github", "o/r", 1, installation=42)
        token = _github_token(
            job, cfg, Secrets(github_app_id="123", github_private_key=pem, github_token="pat")
        )
    finally:
        server.shutdown()
    assert token == "ghs_installation"
    path, auth = seen[0]
    assert path == "/app/installations/42/access_tokens" and auth.startswith("Bearer ")
    claims = jwt.decode(auth.split()[1], key.public_key(), algorithms=["RS256"])
    assert claims["iss"] == "123"


def test_clone_token_goes_in_a_header_env_only() -> None:
    import base64

    from bot.change.checkout import auth_env

    env = auth_env("https://github.com/o/r.git", "x-access-token", "ghs_secret")
    assert env["GIT_CONFIG_KEY_0"] == "http.extraHeader"
    assert base64.b64decode(env["GIT_CONFIG_VALUE_0"].split()[-1]) == b"x-access-token:ghs_secret"
    assert "GIT_CONFIG_COUNT" not in auth_env("file:///srv/o/r.git", "x", "ghs_secret")


def test_state_forgets_old_deliveries_and_old_rate_counters(tmp_path) -> None:
    from bot.server.queue import make_storage
    from bot.server.state import ServerState

    now = [1_000_000.0]
    cfg = ServerConfig(queue_path=str(tmp_path / "q.sqlite3"))
    state = ServerState(make_storage(cfg, "state"), clock=lambda: now[0])
    assert state.first_delivery("github", "d1") and not state.first_delivery("github", "d1")
    assert all(state.within_rate("o/r", 3) for _ in range(3)) and not state.within_rate("o/r", 3)
    now[0] += 60
    assert state.within_rate("o/r", 3)  # a new minute
    now[0] += 4 * 86400
    assert state.sweep() == 1 and state.first_delivery("github", "d1")


def test_a_verified_fix_becomes_suggestions_only_on_lines_of_the_diff() -> None:
    from bot.change.diff import parse
    from bot.jobs.suggest import suggestions

    diff = parse(
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,3 @@\n x = 1\n+y = x - 1\n z = 3\n"
    )
    head = {"a.py": "x = 1\ny = x - 1\nz = 3\n"}.get
    [f] = suggestions({"a.py": "x = 1\ny = x + 1\nz = 3\n"}, head, diff, "tests: 1 passed") or []
    assert (f.line, f.end_line, f.suggestion, f.verified) == (2, None, "y = x + 1", True)
    inserted = suggestions({"a.py": "x = 1\ny = x - 1\nw = 0\nz = 3\n"}, head, diff, "e") or []
    assert [(f.line, f.suggestion) for f in inserted] == [(2, "y = x - 1\nw = 0")]
    longer = {"a.py": "x = 1\ny = x - 1\nz = 3\na\nb\n"}.get
    assert suggestions({"a.py": "x = 1\ny = x - 1\nz = 3\na\nc\n"}, longer, diff, "e") is None  # line 5
