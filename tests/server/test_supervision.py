"""Nothing dead goes unnoticed: /readyz tells whether a review asked now would be done (a worker alive,
the store writable, a model loaded), and `serve` supervises its worker pool (restarted when it dies,
dying with serve)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.config import ServerConfig
from bot.server.app import Server, create_app
from bot.server.joblimit import descendants
from bot.server.metrics import Metrics
from bot.server.queue import JobQueue, make_huey, make_storage
from bot.server.secrets import Secrets
from bot.server.state import ServerState
from tests.fakes.github_api import FakeGitHub
from tests.server.stack import SECRET, RedisServer, Stack, redis_binary, wait_for


def _get(server: Server, path: str) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_app(server))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.get(path)

    return asyncio.run(go())


def _server(cfg: ServerConfig) -> Server:
    queue = JobQueue(make_huey(cfg), cfg)
    state = ServerState(make_storage(cfg, "prereview-state"))
    return Server(cfg, Secrets(github_webhook_secret=SECRET), queue, state, Metrics(queue))


def test_readyz_needs_a_live_worker_with_a_loaded_model(tmp_path: Path) -> None:
    server = _server(ServerConfig(queue_path=str(tmp_path / "q.sqlite3")))
    r = _get(server, "/readyz")
    assert r.status_code == 503 and "no worker alive" in r.json()["workers"]
    assert _get(server, "/healthz").status_code == 200  # alive, just not ready
    worker = JobQueue(make_huey(server.cfg), server.cfg)  # a worker process's view of the same store
    worker.model_state = "error: the model file is truncated (12 of 400 MB)"
    worker.beat()
    r = _get(server, "/readyz")
    assert r.status_code == 503 and "truncated" in r.json()["model"]
    worker.model_state = "ok"
    worker.beat()
    r = _get(server, "/readyz")
    assert r.status_code == 200 and r.json()["workers"] == "1 alive"
    assert "prereview_workers_alive 1.0" in _get(server, "/metrics").text


@pytest.fixture
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    if redis_binary() is None:
        pytest.skip("redis-server not installed (apt-get install redis-server; .ci/run installs it)")
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


def test_readyz_says_when_the_store_is_down(redis: RedisServer) -> None:
    server = _server(ServerConfig(queue="redis", redis_url=redis.url))
    redis.stop()
    r = _get(server, "/readyz")
    assert r.status_code == 503 and "not writable" in r.json()["store"]
    assert _get(server, "/healthz").status_code == 200


def _children(pid: int) -> list[int]:
    return [p for p in descendants(pid) if _ppid(p) == pid]


def _ppid(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return -1
    return int(text[text.rfind(")") + 2 :].split()[1])


def _alive(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rfind(")") + 2] != "Z"


def test_serve_restarts_its_worker_pool_and_takes_it_down_when_killed(tmp_path: Path) -> None:
    with FakeGitHub() as gh:
        stack = Stack(tmp_path, gh.url)
        try:
            stack.start_server(workers=1)
            assert stack.server is not None
            serve = stack.server.pid
            wait_for(lambda: stack.http.get("/readyz").status_code == 200, 90, "/readyz\n" + stack.logs())
            [pool] = _children(serve)
            its_workers = descendants(pool)
            assert its_workers  # huey's worker processes
            os.kill(pool, signal.SIGKILL)
            wait_for(lambda: not any(_alive(p) for p in its_workers), 30, "the dead pool's workers to go")
            restarted: Any = wait_for(
                lambda: [p for p in _children(serve) if p != pool], 30, "the pool restarted\n" + stack.logs()
            )
            assert "worker pool exited" in stack.logs()
            wait_for(lambda: stack.http.get("/readyz").status_code == 200, 90, "/readyz again")
            everything = descendants(serve)
            assert restarted[0] in everything
            os.kill(serve, signal.SIGKILL)  # serve dies without a word: its pool must not live on
            stack.server.wait(10)
            wait_for(lambda: not any(_alive(p) for p in everything), 30, "the pool to die with serve")
        finally:
            stack.stop()


def test_a_webhook_met_by_a_stopped_store_is_answered_503_not_lost_silently(redis: RedisServer) -> None:
    from tests.server.stack import comment_event
    from tests.server.test_intake import _signed

    server = _server(ServerConfig(queue="redis", redis_url=redis.url))
    redis.stop()
    body = comment_event("/help", comment_id=3)

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_app(server), raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.post("/webhooks/github", content=body, headers=_signed(body))

    r = asyncio.run(go())
    assert r.status_code == 503 and "redeliver" in r.json()["status"]
