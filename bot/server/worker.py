"""Worker processes: each owns its model (LazyModel) and runs jobs: review, ask, fix, help, pause, refuse."""

from __future__ import annotations

import logging
import os
import signal
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from ..change.diff import parse, render_hunk
from ..config import CONFIG_FILE, Config, ReviewConfig
from ..findings.chunks import DEFAULT_SKIP, select_files
from ..findings.language import instruction as language_instruction
from ..models.base import Message
from ..pipeline.run import LazyModel, review_change
from ..progress import Quiet
from ..render.escape import text as _escape
from ..review_filters import skip_message, skip_reason
from ..sandbox.exchange import counts_as_limit
from ..types import ChangeRequest, Throttled
from . import ask, chatops, jobdirs, repo_config, workspace
from .forge_session import ForgeSession, open_session
from .incremental import MAX_REMEMBERED_BYTES, added_lines, new_hunks
from .joblimit import public_reason, scrub_paths
from .jobs import Job
from .masking import MaskedLazyModel, MaskedSession, Masking
from .pool import die_with_parent
from .queue import JobQueue, RunStats, make_huey, make_storage
from .secrets import Secrets
from .state import ServerState

log = logging.getLogger("prereview.worker")


class HeadMoved(Throttled):
    """A commanded review whose head moved while it ran: the queue runs it again at once."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retry_after=0.0)


REFUSAL = (
    "Sorry @{author}, only people with write access to this repository (owners, members, collaborators; "
    "Developer or higher on GitLab, write on Gitea/Forgejo) can run prereview commands."
)

# Files /ask names without their diff: the ones the review config leaves out (not deleted files).
BY_CONFIG = frozenset({"not in review.include", "matches review.exclude", *DEFAULT_SKIP})


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
        if job.kind == "refuse" or (job.check_access and not forge.may_command(job)):
            forge.reply(REFUSAL.format(author=job.author or "there"), job.comment_id)
            return None
        handler = getattr(self, f"_{job.kind}", None)
        if handler is None:
            handler = self._help
        return handler(job, forge)  # type: ignore[no-any-return]

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

    def _help(self, job: Job, forge: ForgeSession) -> None:
        forge.reply(chatops.help_text(self.cfg.server.command_prefix), job.comment_id)

    def _pause(self, job: Job, forge: ForgeSession) -> None:
        self.state.set_paused(job.pr_key, True)
        forge.set_paused(True)
        forge.reply("Automatic reviews are paused on this PR; `resume` turns them back on.", job.comment_id)

    def _resume(self, job: Job, forge: ForgeSession) -> None:
        self.state.set_paused(job.pr_key, False)
        forge.set_paused(False)
        forge.reply("Automatic reviews are back on for this PR.", job.comment_id)

    def _review(self, job: Job, forge: ForgeSession) -> RunStats | None:
        """The CLI's pipeline (`review_change`) on a checkout of base and head, published on the PR."""
        if job.auto and self.state.paused(job.pr_key):
            return None
        change = forge.fetch()
        last = self.state.last_reviewed(job.pr_key) if job.incremental and forge.incremental else None
        if last is not None and last.get("added") is None:
            last = None
        if last is not None and last["head"] == change.head_sha:
            forge.reply(f"No new commits since the last review (`{change.head_sha[:12]}`).", job.comment_id)
            return None
        with tempfile.TemporaryDirectory(prefix="prereview-review-") as tmp:
            ws = workspace.prepare(forge, change, self.cfg, Path(tmp))
            change = ws.change
            if job.auto and (why := skip_reason(change, ws.cfg.review)):
                log.info("%s: %s", job.pr_key, skip_message(why, f"comment `/review` on the {forge.kind}"))
                return None
            reviewed, scope, notes = change, None, tuple[str, ...]()
            if last is not None:
                reviewed = replace(change, diff_text=new_hunks(change.diff_text, last["added"]))
                scope = parse(reviewed.diff_text)
                since = last["head"][:12]
                notes = (f"Incremental review of what changed since `{since}`; `review` for a full one.",)
                reviewed, more = workspace.since(reviewed, last["head"], forge.kind)
                notes += more
            review = review_change(reviewed, ws.cfg, model=self.model)
        s = review.stats
        stats = replace(s, seconds_total=round(s.seconds_total + ws.seconds, 3))  # the fetch counts too
        said = tuple(scrub_paths(n) for n in review.notes + ws.notes + notes)  # no server paths on the PR
        review = replace(review, notes=said, stats=stats)
        if (now := forge.current_head()) and now != change.head_sha:
            self._moved(job, change.head_sha, now)
            return None
        forge.publish(change, review, scope, ws.cfg)
        self.state.set_findings(job.pr_key, change.head_sha, review.findings)  # what `/ask` is told
        self.state.set_reviewed(
            job.pr_key, change.head_sha, added_lines(change.diff_text), MAX_REMEMBERED_BYTES
        )
        limits = sum(counts_as_limit(n) for n in review.notes)
        return RunStats(s.prompt_tokens, s.completion_tokens, s.seconds_model, limits)

    def _moved(self, job: Job, reviewed: str, now: str) -> None:
        """The PR's head moved during the review (a force-push): the review is not published on a head
        that is gone. An automatic review leaves it to the push's own review; a command is reviewed again."""
        log.info("%s: head moved from %s to %s during the review; not published", job.pr_key, reviewed, now)
        if job.auto:
            return None
        raise HeadMoved(f"the head moved from `{reviewed[:12]}` to `{now[:12]}` during the review")

    def _ask(self, job: Job, forge: ForgeSession) -> RunStats | None:
        if job.thread and not forge.thread_is_ours(job.thread):
            return None  # a conversation between people: not ours to join
        change = forge.fetch()
        cfg, _ = self._config(forge, change)
        model = self.model()
        question = job.text
        thread = (job.path, job.line) if job.thread and job.path and job.line else None
        if job.thread:
            question = f"(a reply in the review thread on {job.path}:{job.line}) {job.text}"
        diff = parse(change.diff_text)
        _, skipped = select_files(diff, cfg.review, lambda _: None)
        with tempfile.TemporaryDirectory(prefix="prereview-ask-") as tmp:
            repo = Path(tmp) / "repo"  # one fetch of head serves every file read

            def read_head(path: str) -> str | None:
                return forge.base_file(change.head_sha, path, repo)

            excerpts, texts = ask.head_code(
                diff, job.text, thread, read_head, [s.path for s in skipped if s.reason in BY_CONFIG]
            )
        last = self.state.last_findings(job.pr_key)
        messages = ask_messages(
            change,
            question,
            budget=max(512, model.n_ctx - self.cfg.server.ask_max_tokens - 256),
            count=model.count_tokens,
            review=cfg.review,
            head=excerpts,
            findings=ask.findings_text(last["findings"] if last else [], last["head"] if last else ""),
        )
        out = model.complete(messages, max_tokens=self.cfg.server.ask_max_tokens, temperature=0.0)
        body, where = ask.check_quote(out.text, texts, diff)
        answer = _escape(body) or "(the model gave no answer)"
        if out.finish_reason == "length":
            answer += " …"
        text = (
            f"{answer}\n\n{where}\n\n<sub>prereview · {model.name} · answered from the code after the "
            "change around what was asked, the diff and the latest review</sub>"
        )
        if job.thread:
            forge.reply_in_thread(job.thread, text, job.comment_id)
        else:
            forge.reply(text, job.comment_id)
        return RunStats(out.prompt_tokens, out.completion_tokens, out.seconds)

    def _describe(self, job: Job, forge: ForgeSession) -> None:
        """`/describe [--update]`: the walkthrough in the summary comment, or in the PR/MR description."""
        from ..pipeline.describe import describe_change
        from ..render.walkthrough import walkthrough_markdown

        change = forge.fetch()
        cfg, _ = self._config(forge, change)
        w = describe_change(change, cfg, self.model)
        forge.describe(walkthrough_markdown(w, change.head_sha), job.update)

    def _fix(self, job: Job, forge: ForgeSession) -> None:
        from .fix_job import run

        run(job, forge, self.cfg, self.model)

    def _config(self, forge: ForgeSession, change: ChangeRequest) -> tuple[Config, tuple[str, ...]]:
        """The server's config with the repository's `.prereview.yml` (at the base) merged over it."""

        def read() -> str | None:
            with tempfile.TemporaryDirectory(prefix="prereview-config-") as tmp:
                return forge.base_file(change.base_sha, CONFIG_FILE, Path(tmp) / "repo")

        return repo_config.load(self.cfg, read, change.base_sha)


def ask_messages(
    change: ChangeRequest,
    question: str,
    *,
    budget: int,
    count: Callable[[str], int],
    review: ReviewConfig | None = None,
    head: Sequence[ask.Excerpt] = (),
    findings: str = "",
) -> list[Message]:
    """The question with the head code asked about (`head`), the latest review's `findings`, and as
    much of the diff as fits `budget` tokens (whole files first, in order).

    Files the (repository's) review config leaves out (`review.exclude`, lock files) are named only."""
    code = "".join(
        f"Code as it is after the change:\n{x.render()}\n\n" if i == 0 else f"{x.render()}\n\n"
        for i, x in enumerate(head)
    )
    head_text = f"Change: {change.title}\n\n{change.body[:2000]}\n\n{code}{findings}\nDiff:\n"
    tail = f"\n\nQuestion: {question}"
    system = ask.ASK_SYSTEM + language_instruction(review.language if review else "")
    room = budget - count(system) - count(head_text) - count(tail)
    parts: list[str] = []
    diff = parse(change.diff_text)
    _, skipped = select_files(diff, review or ReviewConfig(), lambda _: None)
    left_out = {s.path: s.reason for s in skipped if s.reason in BY_CONFIG}
    for f in diff.files:
        if f.path in left_out:
            parts.append(f"--- {f.path} (omitted: {left_out[f.path]})")
            continue
        text = f"--- {f.path}\n" + "\n".join(render_hunk(f, h) for h in f.hunks)
        cost = count(text)
        if cost > room:
            parts.append(f"--- {f.path} (omitted: too long)")
            continue
        parts.append(text)
        room -= cost
    return [Message("system", system), Message("user", head_text + "\n".join(parts) + tail)]


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
