"""Recovery in each worker process: the lease heartbeat of a running job, and the reaper that puts back
jobs whose worker died or whose message was lost. Both keep running through a queue-store outage
(`storeops.survive`): an error is logged and counted, and the next try comes after a backoff."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from huey import Huey

from ..config import ServerConfig
from ..jobs.job import Job
from .ledger import JOB, Lease, Ledger, owner_id
from .storeops import StoreErrors, survive

log = logging.getLogger("prereview.queue")

FAILED_KEPT_SECONDS = 7 * 86400  # failed job records stay this long (for inspection)
WORKER = "worker:"  # worker:<host>:<pid> -> {"at": last heartbeat, "model": its model's state}


class Recovery:
    """Mixed into `JobQueue` (which provides these attributes and `_fail`)."""

    huey: Huey
    cfg: ServerConfig
    ledger: Ledger
    store_errors: StoreErrors
    _unreleased: list[Lease]
    _clock: Callable[[], float]
    model_state: str = "not checked"  # this worker process's model: "ok", "loading…" or "error: …"

    def _fail(self, rec: dict[str, Any], *, final: bool, delay: float | None = None) -> None:
        raise NotImplementedError

    def runner(self) -> Any:
        raise NotImplementedError

    def probe_model(self) -> None:
        """Load this worker's model now, so that a broken model shows in /readyz before a job meets it."""
        self.model_state = "loading"
        ready = getattr(self.runner(), "ready", None)
        self.model_state = "ok" if ready is None else str(ready())

    def _release_left_over(self) -> None:
        while self._unreleased:
            self.ledger.release(self._unreleased[0])
            log.warning("%s: released its lease after a store outage", self._unreleased.pop(0).pr)

    @contextmanager
    def _heartbeat(self, lease: Lease) -> Iterator[None]:
        stop = threading.Event()

        current = [lease]

        def renew() -> None:
            current[0] = self.ledger.renew(current[0], self.cfg.lease_seconds)

        def beat() -> None:
            if not stop.wait(self.cfg.lease_seconds / 3):
                survive(
                    renew,
                    name=f"renewing the lease of {lease.pr}",
                    interval=self.cfg.lease_seconds / 3,
                    stop=stop,
                    errors=self.store_errors,
                )

        thread = threading.Thread(target=beat, name="prereview-lease", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    # --- recovery -------------------------------------------------------------------------------
    def reap(self) -> int:
        """Put back jobs whose worker died (running) or whose message was lost (queued). Returns count.

        Like a worker, the reaper writes a job's record only while holding its PR's lease: it can take
        the lease only when it is free or its holder is dead, so a live job is never disturbed.
        """
        waiting = {tuple(t.args) for t in [*self.huey.pending(), *self.huey.scheduled()]}
        put_back = 0
        for _, rec in list(self.ledger.items(JOB)):
            if rec["state"] == "failed" and self._clock() - rec["touched"] > FAILED_KEPT_SECONDS:
                self._forget_failed(rec)  # kept a while for inspection, then dropped
            elif self._suspect(rec, waiting) and self._reap_one(rec):
                put_back += 1
        return put_back

    def _forget_failed(self, rec: dict[str, Any]) -> None:
        job_id = rec["job"]["id"]
        self.ledger.delete(JOB + job_id)
        self.ledger.delete(f"ack:{job_id}")
        self.ledger.delete(f"told:{job_id}")
        for k in range(rec["attempt"] + 1):
            self.ledger.delete(f"claim:{job_id}:{k}")

    def _suspect(self, rec: dict[str, Any], waiting: set[tuple[Any, ...]]) -> bool:
        if rec["state"] == "running":
            return True  # its lease tells whether the worker lives (checked in _reap_one)
        return (
            rec["state"] == "queued"
            and (rec["job"]["id"], rec["attempt"]) not in waiting
            and self._clock() - rec["touched"] > self.cfg.lost_after_seconds
        )

    def _reap_one(self, rec: dict[str, Any]) -> bool:
        job = Job.from_dict(rec["job"])
        lease = self.ledger.acquire(job.pr_key, "reaper", owner_id(), self.cfg.lease_seconds)
        if lease is None:
            return False  # a live job holds this PR; look again later
        try:
            now = self.ledger.get(JOB + job.id)
            if now is None or now["attempt"] != rec["attempt"] or now["state"] not in ("running", "queued"):
                return False
            log.warning("job %s (%s) lost its worker or message; retrying it", job.id, job.kind)
            self._fail(now, final=False, delay=0.0)
            return True
        finally:
            self.ledger.release(lease)

    def beat(self) -> None:
        """This worker process is alive (for /readyz and /metrics); workers gone a day are forgotten."""
        now = self._clock()
        self.ledger.put(WORKER + owner_id(), {"at": now, "model": self.model_state})
        for key, rec in list(self.ledger.items(WORKER)):
            if now - float(rec.get("at", 0)) > 86400:
                self.ledger.delete(key)

    def start_reaper(self, interval: float) -> threading.Event:
        """Reap now and then every `interval` seconds in a daemon thread (one per worker process)."""
        stop = threading.Event()

        def round() -> None:
            self.beat()
            self._release_left_over()
            self.reap()
            self.store_errors.flush(self.ledger.count)

        def loop() -> None:
            survive(round, name="reaping jobs", interval=interval, stop=stop, errors=self.store_errors)

        threading.Thread(target=loop, name="prereview-reaper", daemon=True).start()
        return stop
