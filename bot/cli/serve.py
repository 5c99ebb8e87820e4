"""`prereview serve`: the webhook server (GitHub App / GitLab webhook) plus its job workers."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import click

from .worker import queue_options


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8080, show_default=True, type=int, help="Port to listen on.")
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(0, 64),
    help="Job worker processes started beside the server (0: run `prereview worker` elsewhere).",
)
@queue_options
def command(
    host: str,
    port: int,
    workers: int,
    config_file: Path | None,
    queue: str | None,
    queue_path: str | None,
    redis_url: str | None,
) -> None:
    """Receive webhooks on /webhooks/github, /webhooks/gitlab and /webhooks/gitea; health on /healthz,
    metrics on /metrics."""
    import uvicorn

    from ..server import logs
    from ..server.access import access_check
    from ..server.app import Server, create_app
    from ..server.http import uvicorn_options
    from ..server.metrics import Metrics
    from ..server.pool import WorkerPool
    from ..server.queue import JobQueue, make_huey, make_storage
    from ..server.secrets import from_env
    from ..server.settings import load, options_to_argv
    from ..server.state import ServerState
    from ..types import PrereviewError

    overrides = {"server.queue": queue, "server.queue_path": queue_path, "server.redis_url": redis_url}
    cfg = load(config_file, overrides)
    secrets = from_env()
    hooks = (
        secrets.github_webhook_secret,
        secrets.gitlab_webhook_token,
        secrets.gitea_webhook_secret,
        secrets.bitbucket_webhook_secret,
    )
    if not any(hooks):
        raise PrereviewError(
            "no webhook secret; set PREREVIEW_GITHUB_WEBHOOK_SECRET, PREREVIEW_GITLAB_WEBHOOK_TOKEN, "
            "PREREVIEW_GITEA_WEBHOOK_SECRET and/or PREREVIEW_BITBUCKET_WEBHOOK_SECRET (or their _FILE "
            "variants): unsigned webhooks are never accepted"
        )
    logs.setup(cfg.server.log_format)
    jobs = JobQueue(make_huey(cfg.server), cfg.server)
    pool = None
    if workers:
        argv = [
            sys.executable,
            "-m",
            "bot",
            "worker",
            "--workers",
            str(workers),
            *options_to_argv(config_file, overrides),
        ]
        pool = WorkerPool(argv).start()  # supervised; dies with this process
    server = Server(
        cfg.server,
        secrets,
        jobs,
        ServerState(make_storage(cfg.server, "prereview-state")),
        Metrics(jobs, pool),
        authorize=access_check(cfg, secrets),
        pool=pool,
    )
    # uvicorn re-raises SIGINT/SIGTERM after its graceful shutdown; turn that into an exit that still
    # stops the workers (SIGINT: huey finishes running jobs; interrupted ones are retried anyway).
    signal.signal(signal.SIGTERM, _exit)
    signal.signal(signal.SIGINT, _exit)
    try:
        uvicorn.run(create_app(server), host=host, port=port, log_level="info", **uvicorn_options(cfg.server))
    finally:
        if pool is not None:
            pool.stop()


def _exit(signum: int, frame: object) -> None:
    raise SystemExit(0)
