"""Read-backs from the sandbox refused or cut by their caps are counted in /metrics (issue 25): the notes
that `exchange` writes are recognised, and a job whose review carries them adds them to the counter."""

from __future__ import annotations

import os
from pathlib import Path

from prometheus_client import generate_latest

from bot.config import ServerConfig
from bot.jobs.job import Job
from bot.sandbox.exchange import Exchange, counts_as_limit, json_lines
from bot.server.metrics import Metrics
from bot.server.queue import JobQueue, RunStats, make_huey


def test_the_notes_of_a_refused_or_cut_read_back_count_as_limits() -> None:
    with Exchange() as ex:
        os.mkfifo(ex.back / "trace.jsonl")
        data, refused = ex.take("trace.jsonl", "the trace")
        (ex.back / "big.jsonl").write_bytes(b'{"a": 1}\n' * 64)
        _, cut = ex.take("big.jsonl", "the results", max_bytes=100)
    _, clipped = json_lines('{"repr": "' + "x" * 50 + '"}\n', "the trace", max_text=10)
    assert data == b"" and refused and cut and clipped
    assert all(counts_as_limit(n) for n in refused + cut + clipped)
    assert not counts_as_limit("tests: 12 passed at base and head")


class _Runner:
    def ack(self, job: Job) -> None:
        pass

    def run(self, job: Job) -> RunStats:
        return RunStats(1, 1, 0.1, read_back_limits=2)

    def fail(self, job: Job, why: str) -> None:
        raise AssertionError(why)


def test_a_job_whose_review_hit_a_cap_is_counted_in_metrics(tmp_path: Path) -> None:
    cfg = ServerConfig(queue_path=str(tmp_path / "q.db"), busy_retry_seconds=0)
    q = JobQueue(make_huey(cfg), cfg, runner_factory=_Runner)
    q.submit(Job("review", "github", "o/r", 1, head_sha="a" * 40, comment_id=7))
    for _ in range(20):
        task = q.huey.dequeue()
        if task is None:
            break
        q.huey.execute(task)
    metrics = generate_latest(Metrics(q).registry).decode()
    assert "prereview_read_back_limits_total 2.0" in metrics
