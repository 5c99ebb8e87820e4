"""The webhook intake in this process (the ASGI app over httpx's ASGI transport): what counts against a
repository's rate, and how much unauthenticated body the server holds at once."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import httpx

from bot.config import ServerConfig
from bot.server.app import Server, create_app
from bot.server.metrics import Metrics
from bot.server.queue import JobQueue, make_huey, make_storage
from bot.server.secrets import Secrets
from bot.server.state import ServerState
from bot.server.verify import github_signature
from tests.server.stack import SECRET, comment_event, payload


def _server(tmp_path: Path, **settings: Any) -> Server:
    cfg = ServerConfig(queue_path=str(tmp_path / "q.sqlite3"), **settings)
    queue = JobQueue(make_huey(cfg), cfg)
    state = ServerState(make_storage(cfg, "prereview-state"))
    return Server(cfg, Secrets(github_webhook_secret=SECRET), queue, state, Metrics(queue))


def _signed(body: bytes, delivery: str | None = None) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "X-GitHub-Event": "issue_comment",
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-Hub-Signature-256": github_signature(SECRET, body),
    }


# --- 28.4: only accepted, distinct events count against the rate --------------------------------------


def test_duplicates_and_replays_do_not_use_up_a_repositorys_rate(tmp_path: Path) -> None:
    app = create_app(_server(tmp_path, rate_limit_per_minute=3))

    async def go() -> list[int]:
        statuses = []
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:

            async def send(body: bytes, delivery: str | None = None) -> int:
                r = await client.post("/webhooks/github", content=body, headers=_signed(body, delivery))
                return r.status_code

            first = comment_event("/help", comment_id=1)
            statuses.append(await send(first, "d-1"))
            for _ in range(5):
                statuses.append(await send(first, "d-1"))  # the forge redelivers
            for _ in range(24):
                statuses.append(await send(first))  # replayed under new delivery ids
            for cid in (2, 3, 4):
                statuses.append(await send(comment_event("/help", comment_id=cid), f"d-{cid}"))
            # The one refused is not remembered: sent again (a minute later, here at once), it is
            # refused again rather than dropped as a duplicate.
            statuses.append(await send(comment_event("/help", comment_id=4), "d-4"))
        return statuses

    statuses = asyncio.run(go())
    assert statuses[0] == 202 and set(statuses[1:30]) == {200}
    assert statuses[30:] == [202, 202, 429, 429]


# --- 28.13: unauthenticated bodies are capped all together, by Content-Length, before reading ----------


def test_bodies_being_received_are_capped_together_before_reading(tmp_path: Path) -> None:
    server = _server(tmp_path, max_body_bytes=1000, max_unverified_bytes=1500)
    app = create_app(server)
    release = asyncio.Event()

    async def slow_body() -> Any:
        yield b"x" * 10
        await release.wait()
        yield b"x" * 990

    async def go() -> tuple[int, int, int, int]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            headers = {"Content-Type": "application/json", "Content-Length": "1000"}
            slow = asyncio.create_task(client.post("/webhooks/github", content=slow_body(), headers=headers))
            await asyncio.sleep(0.2)  # the first body is on its way
            unread: list[bytes] = []

            async def watched() -> Any:
                unread.append(b"read")
                yield b"y" * 1000

            second = await client.post("/webhooks/github", content=watched(), headers=headers)
            release.set()
            first = await slow
            third = await client.post("/webhooks/github", content=b"z" * 1000, headers=headers)
            assert not unread, "the refused body was read"
            return first.status_code, second.status_code, third.status_code, getattr(server, "reading", 0)

    first, second, third, left = asyncio.run(go())
    assert second == 503  # refused before a byte of it was read
    assert first == 401 and third == 401  # received, then refused for the signature
    assert left == 0


def test_a_body_without_content_length_counts_as_it_arrives(tmp_path: Path) -> None:
    server = _server(tmp_path, max_body_bytes=1000, max_unverified_bytes=1500)
    server.reading = 1200  # other bodies on their way

    async def chunked() -> Any:
        for _ in range(10):
            yield b"a" * 100

    async def go() -> int:
        transport = httpx.ASGITransport(app=create_app(server))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            r = await client.post(
                "/webhooks/github", content=chunked(), headers=_signed(json.dumps({}).encode())
            )
            return r.status_code

    assert asyncio.run(go()) == 503
    assert server.reading == 1200


# --- 28.10: a force-push back to a head reviewed before is reviewed again --------------------------------


def test_a_force_push_back_to_an_earlier_head_is_a_new_event_but_a_replay_is_not(tmp_path: Path) -> None:
    app = create_app(_server(tmp_path))
    sha = {"A": "a" * 40, "B": "b" * 40, "X": "0" * 40}

    def push(before: str, after: str) -> bytes:
        data = payload("pull_request.synchronize.octokit.json")
        data["before"], data["after"] = sha[before], sha[after]
        data["pull_request"]["head"]["sha"] = sha[after]
        return json.dumps(data).encode()

    async def go() -> list[int]:
        out = []
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            for body in (push("X", "A"), push("A", "B"), push("B", "A"), push("B", "A")):
                headers = {**_signed(body), "X-GitHub-Event": "pull_request"}
                out.append((await client.post("/webhooks/github", content=body, headers=headers)).status_code)
        return out

    assert asyncio.run(go()) == [202, 202, 202, 200]  # the last: the same push again (a replay)
