"""`prereview worker`: job worker processes for the webhook server (this machine or others, via Redis)."""

from __future__ import annotations

from pathlib import Path

import click


def queue_options(fn):  # type: ignore[no-untyped-def]
    fn = click.option("--redis-url", help="Redis URL when --queue redis (or PREREVIEW_REDIS_URL).")(fn)
    fn = click.option("--queue-path", help="SQLite queue file (or PREREVIEW_QUEUE_PATH).")(fn)
    fn = click.option(
        "--queue", type=click.Choice(["sqlite", "redis"]), help="Queue backend (default sqlite)."
    )(fn)
    fn = click.option(
        "--config",
        "config_file",
        type=click.Path(path_type=Path),
        help="Server config file (YAML, same keys as .prereview.yml).",
    )(fn)
    return fn


@click.command("worker")
@queue_options
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Worker processes; each loads its own model.",
)
def command(
    config_file: Path | None, queue: str | None, queue_path: str | None, redis_url: str | None, workers: int
) -> None:
    """Run queued review jobs (reviews, /ask, /fix, replies) until interrupted."""
    from ..server import logs
    from ..server.secrets import from_env
    from ..server.settings import load
    from ..server.worker import build_queue, run_consumer

    cfg = load(
        config_file, {"server.queue": queue, "server.queue_path": queue_path, "server.redis_url": redis_url}
    )
    logs.setup(cfg.server.log_format)
    run_consumer(build_queue(cfg, from_env()), workers)
