"""The ASGI app: verify, deduplicate, decide, enqueue, answer 202. No forge or model work happens here."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..config import ServerConfig
from . import events, policy, verify
from .events import Event
from .metrics import Metrics
from .queue import JobQueue
from .secrets import Secrets
from .state import ServerState

log = logging.getLogger("prereview.server")


class _Reject(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


@dataclass
class Server:
    cfg: ServerConfig
    secrets: Secrets
    queue: JobQueue
    state: ServerState
    metrics: Metrics

    async def body(self, request: Request) -> bytes:
        """The raw body, within the size cap and the request timeout."""
        cap = self.cfg.max_body_bytes
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > cap:
            raise _Reject(413, f"body over {cap} bytes")

        async def read() -> bytes:
            chunks, size = [], 0
            async for chunk in request.stream():
                size += len(chunk)
                if size > cap:
                    raise _Reject(413, f"body over {cap} bytes")
                chunks.append(chunk)
            return b"".join(chunks)

        try:
            return await asyncio.wait_for(read(), self.cfg.request_timeout)
        except asyncio.TimeoutError:
            raise _Reject(408, "body not received in time") from None

    def accept(self, event: Event | None, delivery: str) -> tuple[int, str, str | None]:
        """(status, reason, job id) for a verified event. Runs in a thread: the store calls block."""
        if event is None:
            return 200, "ignored event", None
        pr_key = f"{event.forge}:{event.repo}#{event.number}"
        decision = policy.decide(event, self.cfg, paused=self.state.paused(pr_key), delivery=delivery)
        if decision.job is None:
            return 200, decision.reason, None
        if not self.state.within_rate(f"{event.forge}:{event.repo}", self.cfg.rate_limit_per_minute):
            return 429, "rate limit for this repository; try again in a minute", None
        if delivery and not self.state.first_delivery(event.forge, delivery):
            return 200, "duplicate delivery", None
        try:
            job_id = self.queue.submit(decision.job)
        except BaseException:
            if delivery:
                self.state.forget_delivery(event.forge, delivery)  # let the forge's redelivery through
            raise
        return 202, decision.reason, job_id


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _Reject(400, "body is not JSON") from None


def create_app(server: Server) -> Starlette:
    cfg, secrets = server.cfg, server.secrets
    bots = frozenset(x.lower() for x in cfg.bot_logins)

    async def respond(forge: str, work: Callable[[], tuple[int, str, str | None]]) -> Response:
        try:
            status, reason, job_id = await run_in_threadpool(work)
        except _Reject as exc:
            status, reason, job_id = exc.status, exc.reason, None
        server.metrics.webhooks.labels(forge, str(status)).inc()
        content: dict[str, Any] = {"status": reason}
        if job_id:
            content["job"] = job_id
        return JSONResponse(content, status_code=status)

    async def github(request: Request) -> Response:
        try:
            body = await server.body(request)
        except _Reject as exc:
            reject = (exc.status, exc.reason, None)
            return await respond("github", lambda: reject)
        if not verify.github_ok(
            secrets.github_webhook_secret, body, request.headers.get("x-hub-signature-256")
        ):
            return await respond("github", lambda: (401, "missing or bad X-Hub-Signature-256", None))
        kind = request.headers.get("x-github-event", "")
        delivery = request.headers.get("x-github-delivery", "")[:128]
        if kind == "ping":
            return await respond("github", lambda: (200, "pong", None))
        return await respond(
            "github", lambda: server.accept(events.github(kind, _json(body), bots), delivery)
        )

    async def gitlab(request: Request) -> Response:
        if not verify.gitlab_ok(secrets.gitlab_webhook_token, request.headers.get("x-gitlab-token")):
            return await respond("gitlab", lambda: (401, "missing or bad X-Gitlab-Token", None))
        try:
            body = await server.body(request)
        except _Reject as exc:
            reject = (exc.status, exc.reason, None)
            return await respond("gitlab", lambda: reject)
        delivery = request.headers.get("x-gitlab-event-uuid", "")[:128]
        return await respond("gitlab", lambda: server.accept(events.gitlab(_json(body), bots), delivery))

    async def healthz(request: Request) -> Response:
        depth = await run_in_threadpool(server.queue.depth)
        return JSONResponse({"status": "ok", "queue_depth": depth})

    async def metrics(request: Request) -> Response:
        data = await run_in_threadpool(generate_latest, server.metrics.registry)
        return Response(data, media_type=CONTENT_TYPE_LATEST)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async def sweep() -> None:
            while True:
                await run_in_threadpool(server.state.sweep)
                await asyncio.sleep(3600)

        task = asyncio.create_task(sweep())
        yield
        task.cancel()

    return Starlette(
        lifespan=lifespan,
        routes=[
            Route("/webhooks/github", github, methods=["POST"]),
            Route("/webhooks/gitlab", gitlab, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
        ],
    )
