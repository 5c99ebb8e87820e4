"""Liveness and readiness of the whole service, as the queue's store sees it.

/healthz (liveness) is about the server process and the worker pool it supervises; /readyz (readiness)
says whether a review asked now would be done: a worker alive (its heartbeat is recent), the store
writable, and a model that loaded in at least one live worker.
"""

from __future__ import annotations

import uuid
from typing import Any

from .queue import JobQueue
from .recovery import WORKER


def live_workers(queue: JobQueue, now: float) -> list[dict[str, Any]]:
    """Heartbeats younger than three reaper rounds (at least 15 s)."""
    fresh = max(3 * queue.cfg.reap_seconds, 15.0)
    return [
        {**rec, "id": key[len(WORKER) :]}
        for key, rec in queue.ledger.items(WORKER)
        if now - float(rec.get("at", 0)) <= fresh
    ]


def readiness(queue: JobQueue, now: float) -> tuple[bool, dict[str, str]]:
    """(ready, {check: "ok" or why not}) for workers, store and model."""
    checks: dict[str, str] = {}
    try:
        probe = f"probe:{uuid.uuid4().hex}"
        queue.ledger.put(probe, {"at": now})
        queue.ledger.delete(probe)
        checks["store"] = "ok"
    except Exception as exc:
        checks["store"] = f"not writable ({type(exc).__name__}: {str(exc)[:200]})"
        return False, checks
    workers = live_workers(queue, now)
    checks["workers"] = f"{len(workers)} alive" if workers else "no worker alive (start `prereview worker`)"
    models = [str(w.get("model", "")) for w in workers]
    if "ok" in models:
        checks["model"] = "ok"
    elif models and all(m.startswith("error") for m in models):
        checks["model"] = models[0]
    elif models:
        checks["model"] = "loading"
    else:
        checks["model"] = "unknown (no worker alive)"
    return bool(workers) and checks["model"] == "ok", checks
