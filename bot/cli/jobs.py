"""`prereview jobs`: the server's queued, running and failed jobs, read from the queue's store."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from .worker import queue_options


@click.command("jobs")
@queue_options
@click.option(
    "--state",
    "states",
    multiple=True,
    type=click.Choice(["queued", "running", "failed"]),
    help="Only jobs in this state (repeatable; default all).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def command(
    config_file: Path | None,
    queue: str | None,
    queue_path: str | None,
    redis_url: str | None,
    states: tuple[str, ...],
    as_json: bool,
) -> None:
    """List the webhook server's jobs (oldest first) and its live workers."""
    from ..server.health import live_workers
    from ..server.queue import JobQueue, make_huey
    from ..server.settings import load

    cfg = load(
        config_file, {"server.queue": queue, "server.queue_path": queue_path, "server.redis_url": redis_url}
    )
    q = JobQueue(make_huey(cfg.server), cfg.server)
    now = time.time()
    rows = sorted((_row(r, now) for r in q.records()), key=lambda r: -r["age_s"])
    rows = [r for r in rows if not states or r["state"] in states]
    workers = live_workers(q, now)
    if as_json:
        for r in rows:
            click.echo(json.dumps(r, sort_keys=True))
        return
    for r in rows:
        why = f"  {r['reason']}" if r.get("reason") else ""
        click.echo(
            f"{r['id'][:12]}  {r['state']:<8} {r['kind']:<8} {r['pr']:<40} attempt {r['attempt']}  "
            f"{_age(r['age_s'])}{why}"
        )
    click.echo(f"{len(rows)} job(s); {len(workers)} worker process(es) alive", err=True)


def _row(rec: dict[str, Any], now: float) -> dict[str, Any]:
    job = rec["job"]
    return {
        "id": job["id"],
        "kind": job["kind"],
        "pr": f"{job['forge']}:{job['repo']}#{job['number']}",
        "state": rec["state"],
        "attempt": rec["attempt"],
        "age_s": round(now - float(rec["touched"]), 1),
        "owner": rec.get("owner", ""),
        "reason": rec.get("reason", ""),
        "delivery": job.get("delivery", ""),
    }


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"
