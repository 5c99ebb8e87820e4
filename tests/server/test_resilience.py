"""The job queue through faults: a store outage at a job's end or while recovery runs, a job that hangs,
a job that fails for good. The queue runs in this process against a real redis-server (stopped and started
again on its loopback port) or SQLite; the job runner is a recorder with a scripted fault."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest

from bot.config import ServerConfig
from bot.jobs.job import Job
from bot.server.ledger import JOB, Ledger, owner_id
from bot.server.metrics import Metrics
from bot.server.queue import JobQueue, RunStats, make_huey
from bot.types import PrereviewError
from tests.server.stack import RedisServer, redis_binary, wait_for

PR = "github:o/r#1"


class Runner:
    """Records what ran and what its authors were told; `fault(job)` runs inside each job."""

    def __init__(self, fault: Callable[[Job], Any] = lambda job: None) -> None:
        self.fault = fault
        self.ran: list[str] = []
        self.told: list[tuple[str, str]] = []

    def ack(self, job: Job) -> None:
        pass

    def run(self, job: Job) -> RunStats:
        self.ran.append(job.kind)
        self.fault(job)
        return RunStats(1, 1, 0.1)

    def fail(self, job: Job, why: str) -> None:
        self.told.append((job.kind, why))


def _queue(cfg: ServerConfig, runner: Runner, **kw: Any) -> JobQueue:
    return JobQueue(make_huey(cfg), cfg, runner_factory=lambda: runner, **kw)


def _drain(q: JobQueue, most: int = 200) -> None:
    """Run queued messages in this thread (a busy PR re-sends its job: at most `most` messages)."""
    for _ in range(most):
        task = q.huey.dequeue()
        if task is None:
            return
        q.huey.execute(task)


@pytest.fixture
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    if redis_binary() is None:
        pytest.skip("redis-server not installed (apt-get install redis-server; .ci/run installs it)")
    server = RedisServer(tmp_path_factory.mktemp("redis"), appendonly=True)
    yield server
    server.stop()


def _redis_cfg(redis: RedisServer, **kw: Any) -> ServerConfig:
    base: dict[str, Any] = {"queue": "redis", "redis_url": redis.url, "coalesce_seconds": 0}
    return ServerConfig(**{**base, "busy_retry_seconds": 0, "store_retry_seconds": 30, **kw})


def _outage(redis: RedisServer, seconds: float) -> threading.Thread:
    """Stop redis now, start it again after `seconds` (in the background)."""
    redis.stop()
    thread = threading.Thread(target=lambda: (time.sleep(seconds), redis.start()), daemon=True)
    thread.start()
    return thread


# --- 28.1: a store error at the end of a job ------------------------------------------------------------


def test_a_store_outage_at_a_jobs_end_does_not_keep_its_pr_locked(redis: RedisServer) -> None:
    cfg = _redis_cfg(redis)

    def fault(job: Job) -> None:
        if job.kind == "review":
            _outage(redis, 1.5)  # the job's final writes meet a stopped redis

    runner = Runner(fault)
    q = _queue(cfg, runner)
    q.submit(Job("review", "github", "o/r", 1, head_sha="a" * 40))
    q.submit(Job("help", "github", "o/r", 1, comment_id=5))
    try:
        _drain(q)
    except Exception as exc:  # today: the store error escapes the job's bookkeeping
        pytest.fail(f"the job's end did not survive the outage: {type(exc).__name__}: {exc}")
    assert runner.ran == ["review", "help"]  # the PR's next job ran
    assert q.ledger.lease(PR) is None
    assert list(q.records()) == []
    assert q.ledger.count("m:jobs:done", 0) == 2
    assert q.store_errors.total > 0


def test_a_lease_the_store_would_not_release_is_released_by_the_reaper(redis: RedisServer) -> None:
    cfg = _redis_cfg(redis, store_retry_seconds=0.3)  # gives up before redis is back
    outage: list[threading.Thread] = []
    runner = Runner(lambda job: outage.append(_outage(redis, 2.0)))
    q = _queue(cfg, runner)
    q.submit(Job("help", "github", "o/r", 1, comment_id=5))
    task = q.huey.dequeue()
    with pytest.raises(Exception, match="onnection"):  # the job's end could not be written: it will rerun
        q.huey.execute(task)
    outage[0].join()
    assert q.ledger.lease(PR) is not None  # still held: the store refused every try
    stop = q.start_reaper(0.1)
    try:
        wait_for(lambda: q.ledger.lease(PR) is None, 10, "the reaper to release the lease")
    finally:
        stop.set()


# --- 28.2: the reaper and the lease heartbeat live through an outage ------------------------------------


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    return int(done.stdout)


def test_the_reaper_survives_a_store_outage_and_takes_over_a_dead_workers_job(redis: RedisServer) -> None:
    cfg = _redis_cfg(redis, reap_seconds=0.2)
    q = _queue(cfg, Runner())
    stop = q.start_reaper(0.2)
    try:
        time.sleep(0.5)
        _outage(redis, 2.0).join()  # 2 s of a stopped redis while the reaper runs
        # A worker that took a job and then died (its host lost the job mid-review).
        job = Job("review", "github", "o/r", 1, head_sha="a" * 40)
        q.submit(job)
        q.huey.dequeue()  # taken by the dead worker
        dead = f"{owner_id().rpartition(':')[0]}:{_dead_pid()}"
        assert q.ledger.acquire(PR, job.id, dead, 60) is not None
        rec = q.ledger.get(JOB + job.id)
        assert rec is not None
        q.ledger.put(JOB + job.id, {**rec, "state": "running", "owner": dead})
        wait_for(
            lambda: (q.ledger.get(JOB + job.id) or {}).get("attempt") == 1,
            15,
            "the reaper to put the dead worker's job back",
        )
        wait_for(lambda: q.ledger.count("m:store_errors", 0) > 0, 5, "the store errors counted")
    finally:
        stop.set()


def test_the_lease_heartbeat_survives_a_store_outage(redis: RedisServer) -> None:
    cfg = _redis_cfg(redis, lease_seconds=0.6)  # renewed every 0.2 s
    seen: list[float] = []

    def fault(job: Job) -> None:
        _outage(redis, 1.0).join()
        time.sleep(1.0)  # the heartbeat has had time to renew since redis came back
        lease = Ledger(q.huey.storage).lease(PR)
        assert lease is not None
        seen.append(lease.expires - time.time())

    q = _queue(cfg, Runner(fault))
    q.submit(Job("help", "github", "o/r", 1, comment_id=5))
    _drain(q)
    assert seen and seen[0] > 0, f"the lease was not renewed after the outage (expired {-seen[0]:.1f} s ago)"


# --- 28.11 / 25.3: a wall-clock limit per job -----------------------------------------------------------


def _sqlite_cfg(tmp_path: Path, **kw: Any) -> ServerConfig:
    base: dict[str, Any] = {"queue_path": str(tmp_path / "q.sqlite3"), "coalesce_seconds": 0}
    return ServerConfig(**{**base, "busy_retry_seconds": 0, **kw})


def test_a_hung_job_fails_at_its_limit_with_a_reply_and_frees_its_pr(tmp_path: Path) -> None:
    """A step blocked on a FIFO the PR left (and a process it started) cannot outlive the job's limit."""
    fifo = tmp_path / "trace.jsonl"
    os.mkfifo(fifo)
    started: list[subprocess.Popen[bytes]] = []

    def fault(job: Job) -> None:
        if job.kind == "review":
            started.append(subprocess.Popen(["sleep", "60"]))
            fifo.read_bytes()  # blocks until a writer comes: none will (but the guard below, today)

    guard = threading.Timer(15, lambda: fifo.write_bytes(b"{}"))  # today's code would hang for ever
    guard.daemon = True
    guard.start()
    runner = Runner(fault)
    q = _queue(_sqlite_cfg(tmp_path, job_timeout_seconds=1.0), runner)
    review = q.submit(Job("review", "github", "o/r", 1, head_sha="a" * 40, comment_id=7))
    q.submit(Job("help", "github", "o/r", 1, comment_id=8))
    t0 = time.monotonic()
    _drain(q)
    guard.cancel()
    assert time.monotonic() - t0 < 10
    assert runner.ran == ["review", "help"]
    assert runner.told and runner.told[0][0] == "review" and "limit of 1 s" in runner.told[0][1]
    rec = q.ledger.get(JOB + review)
    assert rec is not None and rec["state"] == "failed" and rec["reason"] == "timeout"
    metrics = generate_latest(Metrics(q).registry).decode()
    assert "prereview_jobs_timed_out_total 1.0" in metrics
    assert 'prereview_jobs_failed_total{reason="timeout"} 1.0' in metrics
    assert q.ledger.lease(PR) is None
    assert started[0].wait(5) is not None  # the job's process was killed with it


def test_a_job_that_ignores_its_limit_ends_its_worker(tmp_path: Path) -> None:
    """A step that swallows the timeout: the watchdog records the failure, frees the PR and ends the
    worker process (the consumer starts a new one)."""
    exits: list[int] = []

    def fault(job: Job) -> None:
        try:
            time.sleep(30)
        except BaseException:
            pass  # a careless `except BaseException` in some step
        wait_for(lambda: exits, 10, "the watchdog")

    runner = Runner(fault)
    q = _queue(
        _sqlite_cfg(tmp_path, job_timeout_seconds=0.5, job_timeout_grace=0.5), runner, exit=exits.append
    )
    job = q.submit(Job("review", "github", "o/r", 1, head_sha="a" * 40, comment_id=7))
    _drain(q)
    assert exits == [70]
    rec = q.ledger.get(JOB + job)
    assert rec is not None and rec["state"] == "failed" and rec["reason"] == "timeout"
    assert len(runner.told) == 1 and q.ledger.lease(PR) is None


# --- 28.9: every job ends with a reply, without server paths ---------------------------------------------


def test_every_failed_job_answers_once_without_server_paths(tmp_path: Path) -> None:
    def fault(job: Job) -> None:
        if job.kind == "review":
            raise RuntimeError("cannot read /tmp/prereview-review-x1y2/repo/app.py: no such file")
        raise PrereviewError("git failed: fatal: '/root/.cache/prereview/checkouts/abc' is not a repository")

    runner = Runner(fault)
    q = _queue(_sqlite_cfg(tmp_path, job_attempts=2, retry_seconds=0), runner)
    q.submit(Job("review", "github", "o/r", 1, head_sha="a" * 40, comment_id=7))
    q.submit(Job("ask", "github", "o/r", 2, comment_id=8, text="why?"))
    for _ in range(3):  # the review's retry is scheduled with a delay of 0
        _drain(q)
        time.sleep(0.2)
    assert sorted(kind for kind, _ in runner.told) == ["ask", "review"]
    told = dict(runner.told)
    assert "RuntimeError" in told["review"] and "after 2 attempts" in told["review"]
    assert "<path>" in told["review"] and "is not a repository" in told["ask"]
    assert "/tmp/" not in told["review"] and "/root/" not in told["ask"]
    assert q.ledger.count("m:failed:crash", 0) == 1 and q.ledger.count("m:failed:error", 0) == 1
