"""Worker processes: each owns its model (LazyModel) and runs the queue's jobs through the one dispatcher
(`jobs.run`), with every model call and posted text masked."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable
from typing import Any, cast

from ..config import Config
from ..jobs import run as jobs
from ..jobs.job import Job, RunStats
from ..jobs.public import public_reason
from ..jobs.session import ForgeSession
from ..pipeline.run import LazyModel
from ..progress import Quiet
from ..render.escape import text as _escape
from . import jobdirs
from .masking import MaskedLazyModel, MaskedSession, Masking
from .pool import die_with_parent
from .queue import JobQueue, make_huey, make_storage
from .secrets import Secrets
from .sessions import open_session
from .state import ServerState

log = logging.getLogger("prereview.worker")


class ForgeRunner:
    """Runs one job against the forge named in it. Built once per worker process."""

    def __init__(
        self,
        cfg: Config,
        secrets: Secrets,
        state: ServerState,
        *,
        model: LazyModel | None = None,
        sessions: Callable[[Job, Config, Secrets], ForgeSession] = open_session,
    ) -> None:
        self.cfg, self.secrets, self.state = cfg, secrets, state
        # Every model call and every posted text of a job is masked here, whatever the command.
        self._masking = Masking(secrets.values())
        self.model: LazyModel = MaskedLazyModel(model or LazyModel(cfg, Quiet()), self._masking)
        self._sessions = sessions

    def ack(self, job: Job) -> None:
        if job.comment_id is not None:
            self._sessions(job, self.cfg, self.secrets).react(job.comment_id)  # 👀: seen, on it

    def run(self, job: Job) -> RunStats | None:
        self._masking.reset()  # one job at a time per worker process
        forge = cast(ForgeSession, MaskedSession(self._sessions(job, self.cfg, self.secrets), self._masking))
        return jobs.run(job, forge, self.cfg, self.model, state=self.state)

    def ready(self) -> str:
        """Load the model (once per process): "ok", or "error: <why>" for /readyz."""
        try:
            self.model()
        except Exception as exc:
            return f"error: {public_reason(exc)}"
        return "ok"

    def fail(self, job: Job, why: str) -> None:
        """The job failed for good (a broken .prereview.yml, an error after every attempt, its time
        limit): one line to whoever asked, or on the PR for an automatic review."""
        forge = MaskedSession(self._sessions(job, self.cfg, self.secrets), self._masking)
        forge.reply(f"prereview could not run `{job.kind}`: {_escape(why)}", job.comment_id)


def build_queue(cfg: Config, secrets: Secrets) -> JobQueue:
    state = ServerState(make_storage(cfg.server, "prereview-state"))
    return JobQueue(
        make_huey(cfg.server), cfg.server, runner_factory=lambda: ForgeRunner(cfg, secrets, state)
    )


def run_consumer(queue: JobQueue, workers: int) -> None:
    """Block running `workers` worker processes (each its own model); restarts any that die."""
    huey = queue.huey
    root = jobdirs.jobs_root()

    @huey.on_startup()
    def _reaper() -> None:
        jobdirs.claim(root)  # and removes what killed workers left
        queue.start_reaper(queue.cfg.reap_seconds)
        queue.probe_model()

    consumer = huey.create_consumer(
        workers=workers,
        worker_type="process",
        periodic=False,
        initial_delay=0.05,
        backoff=1.3,
        max_delay=0.5,
        health_check_interval=1,
    )
    # huey's worker and scheduler processes never outlive this consumer (an idle huey worker ignores
    # SIGTERM; a job a killed worker held is retried by the reaper).
    init_child, consumer_pid = consumer.environment.init_child, os.getpid()

    def init(process: Any) -> None:
        init_child(process)
        die_with_parent(consumer_pid, signal.SIGKILL)()

    consumer.environment.init_child = init
    consumer.run()
