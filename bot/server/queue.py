"""The durable job queue: huey carries (job id, attempt) messages, the ledger keeps each job until done.

Guarantees (SQLite and Redis alike):
- a job survives server and worker restarts (its record is written before its message);
- one job per PR at a time (a per-PR lease; a busy PR sends the message back with a short delay);
- a burst of review requests for one PR coalesces: a review superseded by a newer one is dropped;
- a worker killed mid-job leaves a record whose lease holder is dead; the reaper retries it
  (publishers dedupe by fingerprint, so a retried review posts no duplicate comments).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from huey import Huey, RedisHuey, SqliteHuey
from huey.storage import RedisStorage, SqliteStorage

from ..config import ServerConfig
from ..types import PrereviewError
from .jobs import Job
from .ledger import JOB, Lease, Ledger, owner_id

log = logging.getLogger("prereview.queue")

SQLITE_BUSY_SECONDS = 30  # the server and every worker process write the same file


@dataclass(frozen=True)
class RunStats:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds_model: float = 0.0


class JobRunner(Protocol):
    def ack(self, job: Job) -> None: ...  # at once, before waiting for the PR (e.g. a 👀 reaction)
    def run(self, job: Job) -> RunStats | None: ...


def queue_path(cfg: ServerConfig) -> Path:
    if cfg.queue_path:
        return Path(cfg.queue_path).expanduser()
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return state / "prereview" / "queue.sqlite3"


def make_huey(cfg: ServerConfig, name: str = "prereview") -> Huey:
    """SqliteHuey (one machine, no service) or RedisHuey (workers on several machines): same code."""
    if cfg.queue == "redis":
        return RedisHuey(name, url=cfg.redis_url, results=False)
    path = queue_path(cfg)
    path.parent.mkdir(parents=True, exist_ok=True)
    return SqliteHuey(name, filename=str(path), results=False, timeout=SQLITE_BUSY_SECONDS)


def make_storage(cfg: ServerConfig, name: str) -> Any:
    """A second key/value namespace in the same store (server state: deliveries, rate, pause)."""
    if cfg.queue == "redis":
        return RedisStorage(name, url=cfg.redis_url)
    path = queue_path(cfg)
    path.parent.mkdir(parents=True, exist_ok=True)
    return SqliteStorage(name, filename=str(path), timeout=SQLITE_BUSY_SECONDS)


FAILED_KEPT_SECONDS = 7 * 86400  # failed job records stay this long (for inspection)

# Duration buckets (seconds) for the job-duration histogram kept as shared counters.
DURATION_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)


class JobQueue:
    def __init__(
        self,
        huey: Huey,
        cfg: ServerConfig,
        *,
        runner_factory: Callable[[], JobRunner] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.huey = huey
        self.cfg = cfg
        self.ledger = Ledger(huey.storage, clock)
        self._clock = clock
        self._runner_factory = runner_factory
        self._runner: tuple[int, JobRunner] | None = None
        self._task = huey.task(name="prereview_job")(self.handle)

    # --- producer side (the webhook server) ---------------------------------------------------
    def submit(self, job: Job) -> str:
        seq = self.ledger.count(f"seq:{job.pr_key}") if job.coalesces else 0
        now = self._clock()
        record = {"job": asdict(job), "attempt": 0, "state": "queued", "seq": seq, "touched": now}
        self.ledger.put(JOB + job.id, record)
        self._send(job.id, 0, self.cfg.coalesce_seconds if job.auto else 0.0)
        return job.id

    def depth(self) -> int:
        return int(self.huey.pending_count()) + int(self.huey.scheduled_count())

    def records(self) -> Iterator[dict[str, Any]]:
        for _, rec in self.ledger.items(JOB):
            yield rec

    def _send(self, job_id: str, attempt: int, delay: float) -> None:
        if delay > 0:
            self._task.schedule(args=(job_id, attempt), delay=delay)
        else:
            self._task(job_id, attempt)

    # --- consumer side (worker processes) -----------------------------------------------------
    def runner(self) -> JobRunner:
        """One runner per worker process (it owns the process's model)."""
        if self._runner is None or self._runner[0] != os.getpid():
            if self._runner_factory is None:
                raise PrereviewError("this queue has no job runner; start workers with `prereview worker`")
            self._runner = (os.getpid(), self._runner_factory())
        return self._runner[1]

    def handle(self, job_id: str, attempt: int) -> None:
        rec = self.ledger.get(JOB + job_id)
        if rec is None or rec["attempt"] != attempt or rec["state"] != "queued":
            return  # done, superseded by a retry, or a duplicate message
        job = Job.from_dict(rec["job"])
        if self.ledger.once(f"ack:{job_id}"):
            self._ack(job)
        owner = owner_id()
        lease = self.ledger.acquire(job.pr_key, job_id, owner, self.cfg.lease_seconds)
        if lease is None:
            # Another job of this PR is running: wait a moment, then go to the back of the queue (huey's
            # own delayed messages have a one-second granularity, too coarse for a busy PR's next job).
            time.sleep(self.cfg.busy_retry_seconds)
            self._send(job_id, attempt, 0.0)  # no record write: only a lease holder writes a PR's records
            return
        try:
            if not self.ledger.once(f"claim:{job_id}:{attempt}"):
                return
            rec = self.ledger.get(JOB + job_id)
            if rec is None or rec["attempt"] != attempt:
                return
            if job.coalesces and rec["seq"] < self.ledger.count(f"seq:{job.pr_key}", 0):
                self._finish(job_id, attempt, "coalesced")
                return
            rec.update(state="running", owner=owner, touched=self._clock())
            self.ledger.put(JOB + job_id, rec)
            self._run(job, rec, lease)
        finally:
            self.ledger.release(lease)

    def _ack(self, job: Job) -> None:
        try:
            self.runner().ack(job)
        except Exception as exc:  # an acknowledgement is a courtesy: the job itself must still run
            log.warning("job %s: could not acknowledge (%s: %s)", job.id, type(exc).__name__, exc)

    def _run(self, job: Job, rec: dict[str, Any], lease: Lease) -> None:
        t0 = time.monotonic()
        try:
            with self._heartbeat(lease):
                stats = self.runner().run(job)
        except PrereviewError as exc:  # user-fixable: retrying cannot help
            log.warning("job %s (%s %s) failed: %s", job.id, job.kind, job.pr_key, exc)
            self._fail(rec, final=True)
            return
        except Exception as exc:  # a failed job is retried with backoff, then recorded as failed
            log.warning(
                "job %s (%s %s) failed: %s: %s", job.id, job.kind, job.pr_key, type(exc).__name__, exc
            )
            self._fail(rec, final=False)
            return
        self._record_success(time.monotonic() - t0, stats)
        self._finish(job.id, rec["attempt"], "done")

    def _finish(self, job_id: str, attempt: int, outcome: str) -> None:
        self.ledger.delete(JOB + job_id)
        self.ledger.delete(f"ack:{job_id}")
        for k in range(attempt + 1):
            self.ledger.delete(f"claim:{job_id}:{k}")
        self.ledger.count(f"m:jobs:{outcome}")

    def _fail(self, rec: dict[str, Any], *, final: bool, delay: float | None = None) -> None:
        attempt = rec["attempt"] + 1
        job_id = rec["job"]["id"]
        if final or attempt >= self.cfg.job_attempts:
            rec.update(state="failed", attempt=attempt, touched=self._clock())
            self.ledger.put(JOB + job_id, rec)
            self.ledger.count("m:jobs:failed")
            return
        rec.update(state="queued", attempt=attempt, touched=self._clock())
        self.ledger.put(JOB + job_id, rec)
        self.ledger.count("m:jobs:retried")
        self._send(job_id, attempt, self.cfg.retry_seconds * attempt if delay is None else delay)

    def _record_success(self, seconds: float, stats: RunStats | None) -> None:
        led = self.ledger
        led.count("m:duration_count")
        led.count("m:duration_ms_sum", int(seconds * 1000))
        for b in DURATION_BUCKETS:
            if seconds <= b:
                led.count(f"m:duration_le:{b:g}")
        if stats is not None:
            led.count("m:prompt_tokens", stats.prompt_tokens)
            led.count("m:completion_tokens", stats.completion_tokens)
            led.count("m:model_ms", int(stats.seconds_model * 1000))

    @contextmanager
    def _heartbeat(self, lease: Lease) -> Iterator[None]:
        stop = threading.Event()

        def beat() -> None:
            current = lease
            while not stop.wait(self.cfg.lease_seconds / 3):
                current = self.ledger.renew(current, self.cfg.lease_seconds)

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

    def start_reaper(self, interval: float) -> threading.Event:
        """Reap now and then every `interval` seconds in a daemon thread (one per worker process)."""
        stop = threading.Event()

        def loop() -> None:
            while True:
                self.reap()
                if stop.wait(interval):
                    return

        threading.Thread(target=loop, name="prereview-reaper", daemon=True).start()
        return stop
