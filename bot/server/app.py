"""The ASGI app: verify, deduplicate, decide, authorise, enqueue, answer 202.

No model work happens here, and no forge work but one: a GitLab, Gitea or Bitbucket command's author's
access is asked of the forge (`authorize`) before the job is queued, so that a refused command never
reaches the queue (where a refused `/review` would otherwise supersede a pending review)."""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import json
import logging
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..config import ServerConfig
from ..jobs import policy
from ..jobs.job import Job
from . import events, health, logs, verify
from .events import Event
from .metrics import Metrics
from .pool import WorkerPool
from .queue import JobQueue
from .secrets import Secrets
from .state import ServerState
from .storeops import STORE_ERRORS

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
    # GitLab/Gitea: may this command's author run it? None: left to the worker (tests, no token).
    authorize: Callable[[Job], bool] | None = None
    reading: int = 0  # bytes of bodies being received, all requests together (one event loop: no lock)
    pool: WorkerPool | None = None  # the worker pool `serve` supervises, if any

    async def body(self, request: Request) -> bytes:
        """The raw body, within the size cap and the request timeout. Bodies are read before their
        signature can be checked, so all of them together get `max_unverified_bytes`: a request whose
        Content-Length does not fit is answered 503 before a byte of it is read."""
        cap, room = self.cfg.max_body_bytes, self.cfg.max_unverified_bytes
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > cap:
            raise _Reject(413, f"body over {cap} bytes")
        held = int(length) if length.isdigit() else 0
        if self.reading + held > room:
            raise _Reject(503, "too many webhook bodies being received; try again shortly")
        self.reading += held

        async def read() -> bytes:
            nonlocal held
            chunks, size = [], 0
            async for chunk in request.stream():
                size += len(chunk)
                if size > cap:
                    raise _Reject(413, f"body over {cap} bytes")
                if size > held:  # no or a wrong Content-Length: count what arrives
                    if self.reading + size - held > room:
                        raise _Reject(503, "too many webhook bodies being received; try again shortly")
                    self.reading += size - held
                    held = size
                chunks.append(chunk)
            return b"".join(chunks)

        try:
            return await asyncio.wait_for(read(), self.cfg.request_timeout)
        except asyncio.TimeoutError:
            raise _Reject(408, "body not received in time") from None
        finally:
            self.reading -= held

    def accept(self, event: Event | None, delivery: str) -> tuple[int, str, str | None]:
        """(status, reason, job id) for a verified event. Runs in a thread: the store calls block."""
        if event is None:
            return 200, "ignored event", None
        refused = self.refuse_repo(event)
        if refused is not None:
            return refused
        pr_key = f"{event.forge}:{event.repo}#{event.number}"
        decision = policy.decide(event, self.cfg, paused=self.state.paused(pr_key), delivery=delivery)
        if decision.job is None:
            return 200, decision.reason, None
        if delivery and not self.state.first_delivery(event.forge, delivery):
            return 200, "duplicate delivery", None
        # A replay under a new delivery id (re-signed, or resent by hand) is the same event: same comment
        # (id and text) or the same push (head sha).
        event_key = events.identity(event)
        if not self.state.first_event(event.forge, event_key):
            return 200, "duplicate event", None
        # Only accepted, distinct events count against the repository's rate: a replayed delivery cannot
        # keep a repository blocked, and a refused one is let through when the forge sends it again.
        if not self.state.within_rate(f"{event.forge}:{event.repo}", self.cfg.rate_limit_per_minute):
            if delivery:
                self.state.forget_delivery(event.forge, delivery)
            self.state.forget_event(event.forge, event_key)
            return 429, "rate limit for this repository; try again in a minute", None
        job, reason = self._authorized(decision.job, decision.reason)
        try:
            job_id = self.queue.submit(job)
        except BaseException:
            if delivery:
                self.state.forget_delivery(event.forge, delivery)  # let the forge's redelivery through
            self.state.forget_event(event.forge, event_key)
            raise
        with logs.about(job=job_id, delivery=delivery, pr=job.pr_key, kind=job.kind):
            log.info("%s webhook accepted: %s", event.forge, reason)
        return 202, reason, job_id

    def refuse_repo(self, event: Event) -> tuple[int, str, None] | None:
        """400 for a repository name that is not `owner/name` (GitLab: `group/…/project`), 403 for one
        outside `server.repositories`; the name goes into API paths the token is sent to."""
        if not events.valid_repo(event.forge, event.repo):
            log.warning("%s webhook refused: repository name %r is not valid", event.forge, event.repo[:200])
            return 400, "repository name is not valid", None
        allowed = self.cfg.repositories
        if allowed and not any(fnmatch.fnmatchcase(event.repo.lower(), p.lower()) for p in allowed):
            log.warning("%s webhook refused: %s is not in server.repositories", event.forge, event.repo)
            return 403, "repository not served here (server.repositories)", None
        return None

    def _authorized(self, job: Job, reason: str) -> tuple[Job, str]:
        """GitLab/Gitea commands: the author's access, asked before queueing. When the forge cannot answer,
        the worker asks again, and the job supersedes nothing while unchecked (`Job.coalesces`)."""
        if not job.check_access or self.authorize is None:
            return job, reason
        try:
            allowed = self.authorize(job)
        except Exception as exc:  # GitLab down or slow: the worker checks
            log.warning("%s: could not check the access of user %s (%s)", job.pr_key, job.author_id, exc)
            return job, reason
        if allowed:
            return replace(job, check_access=False), reason
        refusal = replace(job, kind="refuse", text=job.kind, check_access=False, incremental=False)
        return refusal, "not authorised"


JSON_HINT = "set the webhook's Content type to application/json"


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _Reject(400, f"body is not JSON; {JSON_HINT}") from None


def _github_payload(body: bytes, content_type: str) -> Any:
    """GitHub sends JSON, or `payload=<JSON>` form-encoded when the hook's content type is
    application/x-www-form-urlencoded (the signature covers the raw body either way)."""
    ctype = content_type.split(";", 1)[0].strip().lower()
    if ctype == "application/x-www-form-urlencoded":
        try:
            form = urllib.parse.parse_qs(
                body.decode("utf-8"), keep_blank_values=True, strict_parsing=True, max_num_fields=20
            )
        except (UnicodeDecodeError, ValueError):
            raise _Reject(400, f"form body does not parse; {JSON_HINT}") from None
        values = form.get("payload")
        if not values or len(values) != 1:
            raise _Reject(400, f"form body without one payload= field; {JSON_HINT}")
        return _json(values[0].encode("utf-8"))
    if ctype not in ("", "application/json") and not ctype.endswith("+json"):
        raise _Reject(415, f"content type {ctype[:60]!r} is not accepted; {JSON_HINT}")
    return _json(body)


def create_app(server: Server) -> Starlette:
    cfg, secrets = server.cfg, server.secrets
    bots = frozenset(x.lower() for x in cfg.bot_logins)

    async def respond(forge: str, work: Callable[[], tuple[int, str, str | None]]) -> Response:
        try:
            status, reason, job_id = await run_in_threadpool(work)
        except _Reject as exc:
            status, reason, job_id = exc.status, exc.reason, None
        except STORE_ERRORS as exc:  # nothing was queued: say so, so the delivery shows failed (redeliver it)
            log.error(
                "%s webhook not queued: the queue store failed (%s: %s)", forge, type(exc).__name__, exc
            )
            status, reason, job_id = 503, "the queue store is unavailable; redeliver this event later", None
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
        ctype = request.headers.get("content-type", "")
        return await respond(
            "github", lambda: server.accept(events.github(kind, _github_payload(body, ctype), bots), delivery)
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

    async def gitea(request: Request) -> Response:
        """Gitea and Forgejo: the hex HMAC-SHA256 of the body in X-Gitea-Signature; Forgejo also sends
        X-Forgejo-Signature (the same value), checked first when present."""
        try:
            body = await server.body(request)
        except _Reject as exc:
            reject = (exc.status, exc.reason, None)
            return await respond("gitea", lambda: reject)
        h = request.headers
        signature = h.get("x-forgejo-signature") or h.get("x-gitea-signature")
        if not verify.gitea_ok(secrets.gitea_webhook_secret, body, signature):
            return await respond("gitea", lambda: (401, "missing or bad X-Gitea-Signature", None))
        kind = h.get("x-forgejo-event") or h.get("x-gitea-event", "")
        delivery = (h.get("x-forgejo-delivery") or h.get("x-gitea-delivery", ""))[:128]
        ctype = h.get("content-type", "")
        return await respond(
            "gitea", lambda: server.accept(events.gitea(kind, _github_payload(body, ctype), bots), delivery)
        )

    async def bitbucket(request: Request) -> Response:
        """Bitbucket Data Center: `X-Hub-Signature: sha256=<hex HMAC>`, `X-Event-Key`, `X-Request-Id`;
        the whole check is `forges/bitbucket/webhook.receive`."""
        from ..forges.bitbucket.webhook import receive

        try:
            body = await server.body(request)
        except _Reject as exc:
            reject = (exc.status, exc.reason, None)
            return await respond("bitbucket", lambda: reject)
        headers = {k.lower(): v for k, v in request.headers.items()}
        got = receive(secrets.bitbucket_webhook_secret, body, headers, bots)
        if isinstance(got, tuple):
            status, reason = got
            return await respond("bitbucket", lambda: (status, reason, None))
        delivery = headers.get("x-request-id", "")[:128]
        return await respond("bitbucket", lambda: server.accept(got, delivery))

    async def healthz(request: Request) -> Response:
        """Liveness: this process answers, and the worker pool it supervises (if any) is not stuck down."""
        problem = server.pool.problem() if server.pool is not None else None
        if problem is not None:
            return JSONResponse({"status": problem}, status_code=503)
        try:
            depth = await run_in_threadpool(server.queue.depth)
        except Exception as exc:  # the store is down: still alive, not ready (/readyz says so)
            return JSONResponse({"status": "ok", "store": type(exc).__name__})
        return JSONResponse({"status": "ok", "queue_depth": depth})

    async def readyz(request: Request) -> Response:
        """Readiness: a review asked now would be done (worker alive, store writable, model loaded)."""
        ready, checks = await run_in_threadpool(health.readiness, server.queue, time.time())
        return JSONResponse(
            {"status": "ready" if ready else "not ready", **checks}, status_code=200 if ready else 503
        )

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
            Route("/webhooks/gitea", gitea, methods=["POST"]),
            Route("/webhooks/bitbucket", bitbucket, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
        ],
    )
