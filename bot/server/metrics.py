"""Prometheus metrics: webhook outcomes from this process, job figures from the shared queue store.

Workers may run on other machines, so job counters live in the queue's store (huey counters) and
every server reports the same totals.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from .health import live_workers
from .pool import WorkerPool
from .queue import DURATION_BUCKETS, JobQueue

OUTCOMES = ("done", "coalesced", "retried", "failed")
# Why a job failed for good: a user-fixable error, an internal error after every attempt, its time limit,
# a worker that died on every attempt, or a forge rate-limiting or down through every attempt.
FAILED_REASONS = ("error", "crash", "timeout", "lost", "forge")


class QueueCollector:
    def __init__(self, queue: JobQueue, pool: WorkerPool | None = None) -> None:
        self._q = queue
        self._pool = pool

    def collect(self) -> Iterator[Metric]:
        n = self._q.ledger.count  # incr by 0 reads a counter atomically in SQLite and Redis
        yield GaugeMetricFamily(
            "prereview_queue_depth", "Job messages waiting (queued + delayed)", self._q.depth()
        )
        jobs = CounterMetricFamily("prereview_jobs", "Jobs finished, by outcome", labels=["outcome"])
        for outcome in OUTCOMES:
            jobs.add_metric([outcome], n(f"m:jobs:{outcome}", 0))
        yield jobs
        yield from self._now()
        failed = CounterMetricFamily(
            "prereview_jobs_failed", "Jobs failed for good, by reason", labels=["reason"]
        )
        for reason in FAILED_REASONS:
            failed.add_metric([reason], n(f"m:failed:{reason}", 0))
        yield failed
        yield CounterMetricFamily(
            "prereview_jobs_timed_out",
            "Jobs stopped at their wall-clock limit (server.job_timeout_seconds)",
            n("m:jobs:timeout", 0),
        )
        yield CounterMetricFamily(
            "prereview_read_back_limits",
            "Read-backs from the sandbox refused or cut by their caps (each also a note in its review)",
            n("m:read_back_limits", 0),
        )
        yield CounterMetricFamily(
            "prereview_store_errors",
            "Queue-store errors met by workers (reported once the store answers again)",
            n("m:store_errors", 0),
        )
        buckets = [(f"{b:g}", float(n(f"m:duration_le:{b:g}", 0))) for b in DURATION_BUCKETS]
        count = float(n("m:duration_count", 0))
        yield HistogramMetricFamily(
            "prereview_job_duration_seconds",
            "Duration of successful jobs",
            buckets=[*buckets, ("+Inf", count)],
            sum_value=n("m:duration_ms_sum", 0) / 1000,
        )
        tokens = CounterMetricFamily("prereview_model_tokens", "Model tokens, by kind", labels=["kind"])
        prompt, completion = n("m:prompt_tokens", 0), n("m:completion_tokens", 0)
        tokens.add_metric(["prompt"], prompt)
        tokens.add_metric(["completion"], completion)
        yield tokens
        seconds = n("m:model_ms", 0) / 1000
        yield CounterMetricFamily("prereview_model_seconds", "Seconds spent in the model", seconds)
        yield GaugeMetricFamily(
            "prereview_tokens_per_second",
            "Completion tokens per model second, since the store was created",
            completion / seconds if seconds else 0.0,
        )

    def _now(self) -> Iterator[Metric]:
        """Running and queued jobs, live workers, and restarts of the pool `serve` supervises."""
        now = time.time()
        records = list(self._q.records())
        running = sum(r["state"] == "running" for r in records)
        queued = [now - float(r["touched"]) for r in records if r["state"] == "queued"]
        yield GaugeMetricFamily("prereview_jobs_running", "Jobs running now", running)
        yield GaugeMetricFamily(
            "prereview_oldest_queued_job_seconds", "Age of the oldest queued job", max(queued, default=0.0)
        )
        yield GaugeMetricFamily(
            "prereview_workers_alive",
            "Worker processes with a recent heartbeat",
            len(live_workers(self._q, now)),
        )
        if self._pool is not None:
            yield CounterMetricFamily(
                "prereview_worker_pool_restarts",
                "Restarts of the worker pool serve supervises",
                self._pool.restarts,
            )


class Metrics:
    """One registry per app (no global registry, so tests can build many apps)."""

    def __init__(self, queue: JobQueue, pool: WorkerPool | None = None) -> None:
        self.registry = CollectorRegistry()
        self.webhooks = Counter(
            "prereview_webhooks",
            "Webhook requests, by forge and result",
            ["forge", "result"],
            registry=self.registry,
        )
        self.registry.register(QueueCollector(queue, pool))  # type: ignore[arg-type]
