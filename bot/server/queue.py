"""The durable job queue: huey carries (job id, attempt) messages, the ledger keeps each job until done.

Guarantees (SQLite and Redis alike):
- a job survives server and worker restarts (its record is written before its message);
- one job per PR at a time (a per-PR lease; a busy PR sends the message back with a short delay);
- a burst of review requests for one PR coalesces: a review superseded by a newer one is dropped;
- a worker killed mid-job leaves a record whose lease holder is dead; the reaper retries it
  (publishers dedupe by fingerprint, so a retried review posts no duplicate comments);
- a store outage does not lose a job's bookkeeping: the writes at its end are retried with backoff, a
  lease that still cannot be released is released by the reaper once the store answers, and the reaper
  and lease heartbeat keep running through the outage (`storeops`);
- every job has a wall-clock limit (`server.job_timeout_seconds`, `joblimit`) and every job that fails
  for good answers its author with a one-line reason (`JobRunner.fail`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

from huey import Huey, RedisHuey, SqliteHuey
from huey.storage import RedisStorage, SqliteStorage

from ..config import ServerConfig
from ..jobs.job import Job, RunStats
from ..types import PrereviewError, Throttled
from . import logs
from .joblimit import JobTimeout, descendants, kill_descendants, public_reason, wall_clock_limit
from .ledger import JOB, Lease, Ledger, owner_id
from .recovery import Recovery
from .storeops import StoreErrors, retry_store

log = logging.getLogger("prereview.queue")

SQLITE_BUSY_SECONDS = 30  # the server and every worker process write the same file


class JobRunner(Protocol):
    def ack(self, job: Job) -> None: ...  # at once, before waiting for the PR (e.g. a 👀 reaction)
    def run(self, job: Job) -> RunStats | None: ...
    def fail(self, job: Job, why: str) -> None: ...  # the job failed for good: tell its author why


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


# Duration buckets (seconds) for the job-duration histogram kept as shared counters.
DURATION_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)


class JobQueue(Recovery):
    def __init__(
        self,
        huey: Huey,
        cfg: ServerConfig,
        *,
        runner_factory: Callable[[], JobRunner] | None = None,
        clock: Callable[[], float] = time.time,
        exit: Callable[[int], Any] = os._exit,
    ) -> None:
        self.huey = huey
        self.cfg = cfg
        self.ledger = Ledger(huey.storage, clock)
        self._clock = clock
        self._runner_factory = runner_factory
        self._runner: tuple[int, JobRunner] | None = None
        self.store_errors = StoreErrors()
        self._unreleased: list[Lease] = []  # leases the store refused to release at a job's end
        self._exit = exit
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
        with logs.about(job=job.id, delivery=job.delivery, pr=job.pr_key, kind=job.kind):
            self._handle(job, attempt)

    def _handle(self, job: Job, attempt: int) -> None:
        job_id = job.id
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
            self._release(lease)

    def _release(self, lease: Lease) -> None:
        """Release `lease`, through a store outage: retried for `store_retry_seconds`, then left to the
        reaper (which tries again each round), never held for the worker's lifetime."""
        try:
            self._store(lambda: self.ledger.release(lease), f"releasing the lease of {lease.pr}")
        except Exception:
            log.error("%s: could not release its lease; the reaper will when the store answers", lease.pr)
            self._unreleased.append(lease)

    def _store(self, fn: Callable[[], Any], what: str) -> Any:
        return retry_store(fn, what=what, errors=self.store_errors, within=self.cfg.store_retry_seconds)

    def _ack(self, job: Job) -> None:
        try:
            self.runner().ack(job)
        except Exception as exc:  # an acknowledgement is a courtesy: the job itself must still run
            log.warning("job %s: could not acknowledge (%s: %s)", job.id, type(exc).__name__, exc)

    def _run(self, job: Job, rec: dict[str, Any], lease: Lease) -> None:
        t0 = time.monotonic()
        limit = self.cfg.job_timeout_seconds
        overran = threading.Event()
        before = set(descendants(os.getpid()))

        def overrun() -> None:  # the watchdog thread: the job would not stop; this process ends
            overran.set()
            log.error(
                "job %s (%s %s) did not stop at its limit; ending this worker", job.id, job.kind, job.pr_key
            )
            self._end_timed_out(job, rec, lease, limit)
            kill_descendants()
            self._exit(70)

        try:
            with self._heartbeat(lease), wall_clock_limit(limit, self.cfg.job_timeout_grace, overrun):
                stats = self.runner().run(job)
        except JobTimeout:
            if not overran.is_set():
                for pid in set(descendants(os.getpid())) - before:
                    kill_descendants(pid)
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                self._end_timed_out(job, rec, lease, limit)
            return
        except Throttled as exc:  # a forge's rate limit or outage: try again when it says
            log.warning("job %s (%s %s) waits for the forge: %s", job.id, job.kind, job.pr_key, exc)
            said, wait = public_reason(exc), min(max(exc.retry_after, self.cfg.retry_seconds), 3600.0)
            self._store(lambda: self._fail(rec, final=False, why=said, reason="forge", delay=wait), "failing")
            return
        except PrereviewError as exc:  # user-fixable: retrying cannot help
            log.warning("job %s (%s %s) failed: %s", job.id, job.kind, job.pr_key, exc)
            said = public_reason(exc)
            self._store(lambda: self._fail(rec, final=True, why=said, reason="error"), "failing a job")
            return
        except Exception as exc:  # a failed job is retried with backoff, then recorded as failed
            log.warning(
                "job %s (%s %s) failed: %s: %s", job.id, job.kind, job.pr_key, type(exc).__name__, exc
            )
            why = f"an internal error ({type(exc).__name__}: {public_reason(exc, 200)})"
            self._store(lambda: self._fail(rec, final=False, why=why, reason="crash"), "failing a job")
            return
        if overran.is_set():
            return  # already recorded as timed out (only when `exit` did not end the process)
        self._store(lambda: self._record_success(time.monotonic() - t0, stats), "counting a job")
        self._store(lambda: self._finish(job.id, rec["attempt"], "done"), "finishing a job")
        log.info("job done in %.1f s", time.monotonic() - t0)

    def _end_timed_out(self, job: Job, rec: dict[str, Any], lease: Lease, limit: float) -> None:
        log.warning("job %s (%s %s) ran past its limit of %g s", job.id, job.kind, job.pr_key, limit)
        why = f"it ran past the server's limit of {limit:g} s per job (server.job_timeout_seconds)"
        try:
            self._store(lambda: self.ledger.count("m:jobs:timeout"), "counting a timeout")
            self._store(lambda: self._fail(rec, final=True, why=why, reason="timeout"), "failing a job")
        finally:
            self._release(lease)

    def _finish(self, job_id: str, attempt: int, outcome: str) -> None:
        self.ledger.delete(JOB + job_id)
        self.ledger.delete(f"ack:{job_id}")
        for k in range(attempt + 1):
            self.ledger.delete(f"claim:{job_id}:{k}")
        self.ledger.count(f"m:jobs:{outcome}")

    def _fail(
        self,
        rec: dict[str, Any],
        *,
        final: bool,
        why: str = "",
        reason: str = "lost",
        delay: float | None = None,
    ) -> None:
        """Retry the job later, or record it failed (by `reason`) and tell its author `why`. Leaves `rec`
        as it is, so a call interrupted by a store error can be made again."""
        attempt = rec["attempt"] + 1
        job_id = rec["job"]["id"]
        if final or attempt >= self.cfg.job_attempts:
            failed = {
                **rec,
                "state": "failed",
                "attempt": attempt,
                "touched": self._clock(),
                "reason": reason,
            }
            self.ledger.put(JOB + job_id, failed)
            self.ledger.count("m:jobs:failed")
            self.ledger.count(f"m:failed:{reason}")
            self._tell(Job.from_dict(rec["job"]), why or "its worker stopped before it finished", attempt)
            return
        queued = {**rec, "state": "queued", "attempt": attempt, "touched": self._clock()}
        self.ledger.put(JOB + job_id, queued)
        self.ledger.count("m:jobs:retried")
        self._send(job_id, attempt, self.cfg.retry_seconds * attempt if delay is None else delay)

    def _tell(self, job: Job, why: str, attempts: int) -> None:
        """The author's answer for a job that failed for good (once per job, whoever fails it)."""
        if not self.ledger.once(f"told:{job.id}"):
            return
        tries = f" (after {attempts} attempts)" if attempts > 1 else ""
        try:
            self.runner().fail(job, why + tries)
        except Exception as exc:
            log.warning(
                "job %s: could not tell its author it failed (%s: %s)", job.id, type(exc).__name__, exc
            )

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
            if stats.read_back_limits:
                led.count("m:read_back_limits", stats.read_back_limits)
