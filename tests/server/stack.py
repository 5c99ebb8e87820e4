"""Real processes over loopback: `prereview serve` and `prereview worker` in subprocesses, signed payloads."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import yaml

from bot.server.verify import gitea_signature, github_signature
from tests.conftest import PLATFORM

PAYLOADS = PLATFORM / "payloads"
SECRET = "It's a Secret to Everybody"
GITLAB_TOKEN = "gitlab-hook-token"
GITEA_SECRET = "gitea-hook-secret"
ROOT = Path(__file__).resolve().parents[2]

DIFF = """diff --git a/app.py b/app.py
--- a/app.py
+++ b/app.py
@@ -1,2 +1,3 @@
 def f(x):
-    return x
+    y = eval(x)
+    return y
"""

NEW_FILE = """diff --git a/new.py b/new.py
new file mode 100644
--- /dev/null
+++ b/new.py
@@ -0,0 +1,2 @@
+import pickle
+data = pickle.loads(blob)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(cond: Callable[[], Any], timeout: float = 60.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def payload(name: str, forge: str = "github") -> dict[str, Any]:
    return json.loads((PAYLOADS / forge / name).read_text())


def comment_event(body: str, *, association: str = "OWNER", comment_id: int, login: str = "chmouel") -> bytes:
    data = payload("issue_comment.created.on_pr.pac-retest.json")
    data["comment"].update(body=body, author_association=association, id=comment_id)
    data["comment"]["user"]["login"] = login
    return json.dumps(data).encode()


def redis_binary() -> str | None:
    return shutil.which("redis-server")


class RedisServer:
    """A redis-server on a loopback port; `appendonly` keeps its data across `stop()` and `start()`."""

    def __init__(self, tmp: Path, *, appendonly: bool = False) -> None:
        self.port = free_port()
        self.tmp, self.appendonly = tmp, appendonly
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                redis_binary() or "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "yes" if self.appendonly else "no",
                "--appendfsync",
                "always",
                "--dir",
                str(self.tmp),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import redis

        client = redis.Redis(port=self.port)
        wait_for(lambda: _ping(client), 20, "redis-server")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def _ping(client: Any) -> bool:
    try:
        return bool(client.ping())
    except Exception:
        return False


class Stack:
    """One server (no workers) plus separately started worker processes, sharing one queue."""

    def __init__(
        self,
        tmp: Path,
        github_url: str,
        gitlab_url: str | None = None,
        *,
        queue: str = "sqlite",
        redis_url: str | None = None,
        server: dict[str, Any] | None = None,
        model: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.tmp = tmp
        self.port = free_port()
        settings: dict[str, Any] = {
            "queue": queue,
            "queue_path": str(tmp / "queue.sqlite3"),
            "github_api_url": github_url,
            "gitlab_url": gitlab_url or github_url,
            "rate_limit_per_minute": 100000,
            "coalesce_seconds": 0.0,
            "lease_seconds": 5.0,
            "lost_after_seconds": 5.0,
            "busy_retry_seconds": 0.1,
            "retry_seconds": 0.5,
            "reap_seconds": 0.5,
            # git (a repository's .prereview.yml, /fix) goes to local bare repositories, never the network
            "github_git_url": f"file://{tmp / 'remotes'}",
            "gitlab_git_url": f"file://{tmp / 'remotes'}",
            "gitea_git_url": f"file://{tmp / 'remotes'}",
            **(server or {}),
        }
        if redis_url:
            settings["redis_url"] = redis_url
        cfg = {
            "model": model or {"backend": "scripted", "name": "scripted"},
            "server": settings,
            **(extra or {}),
        }
        self.config = tmp / "server.yml"
        self.config.write_text(yaml.safe_dump(cfg))
        self.env = {
            **os.environ,
            "PREREVIEW_GITHUB_WEBHOOK_SECRET": SECRET,
            "PREREVIEW_GITLAB_WEBHOOK_TOKEN": GITLAB_TOKEN,
            "PREREVIEW_GITEA_WEBHOOK_SECRET": GITEA_SECRET,
            "PREREVIEW_GITHUB_TOKEN": "test-token",
            "PREREVIEW_GITLAB_TOKEN": "test-token",
            "PYTHONPATH": str(ROOT),
        }
        self.server: subprocess.Popen[bytes] | None = None
        self.workers: list[subprocess.Popen[bytes]] = []
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=30)

    def _spawn(self, *args: str) -> subprocess.Popen[bytes]:
        log = open(self.tmp / f"{args[0]}-{time.monotonic_ns()}.log", "wb")  # noqa: SIM115
        return subprocess.Popen(
            [sys.executable, "-m", "bot", *args, "--config", str(self.config)],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=ROOT,
        )

    def start_server(self, workers: int = 0) -> None:
        self.server = self._spawn(
            "serve", "--host", "127.0.0.1", "--port", str(self.port), "--workers", str(workers)
        )
        wait_for(self._healthy, 60, "the server's /healthz")

    def _healthy(self) -> bool:
        assert self.server is not None
        if self.server.poll() is not None:
            raise AssertionError(f"server exited: {self.logs()}")
        try:
            return self.http.get("/healthz").status_code == 200
        except httpx.TransportError:
            return False

    def start_worker(self, n: int = 1) -> subprocess.Popen[bytes]:
        proc = self._spawn("worker", "--workers", str(n))
        self.workers.append(proc)
        return proc

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-3000:] for p in sorted(self.tmp.glob("*.log")))

    def stop(self) -> None:
        for proc in [*self.workers, *([self.server] if self.server else [])]:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
        self.http.close()

    # --- sending ---------------------------------------------------------------------------------
    def github(
        self,
        body: bytes,
        event: str = "issue_comment",
        *,
        delivery: str | None = None,
        signature: str | None = "valid",
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        h = {
            "Content-Type": "application/json",
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        }
        if signature == "valid":
            h["X-Hub-Signature-256"] = github_signature(SECRET, body)
        elif signature is not None:
            h["X-Hub-Signature-256"] = signature
        h.update(headers or {})
        return self.http.post("/webhooks/github", content=body, headers=h)

    def gitlab(
        self,
        body: bytes,
        *,
        token: str | None = GITLAB_TOKEN,
        delivery: str | None = None,
        event: str = "Note Hook",
    ) -> httpx.Response:
        h = {
            "Content-Type": "application/json",
            "X-Gitlab-Event": event,
            "X-Gitlab-Event-UUID": delivery or str(uuid.uuid4()),
        }
        if token is not None:
            h["X-Gitlab-Token"] = token
        return self.http.post("/webhooks/gitlab", content=body, headers=h)

    def gitea(
        self,
        body: bytes,
        event: str = "issue_comment",
        *,
        signature: str | None = "valid",
        forgejo: bool = False,
        delivery: str | None = None,
    ) -> httpx.Response:
        """As Gitea sends it (X-Gitea-*; with `forgejo`, as Forgejo does: X-Forgejo-* only)."""
        who = "Forgejo" if forgejo else "Gitea"
        h = {
            "Content-Type": "application/json",
            f"X-{who}-Event": event,
            f"X-{who}-Delivery": delivery or str(uuid.uuid4()),
        }
        if signature is not None:
            h[f"X-{who}-Signature"] = (
                gitea_signature(GITEA_SECRET, body) if signature == "valid" else signature
            )
        return self.http.post("/webhooks/gitea", content=body, headers=h)

    def metrics(self) -> str:
        return self.http.get("/metrics").text
