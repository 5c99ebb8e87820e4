"""`prereview gitlab`'s automatic review is the worker's review job (`jobs/review.py` through the one
dispatcher): it says so in the log, and a push that removes a finding resolves its thread exactly as the
worker's review of the same MR does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from bot.config import Config
from bot.jobs.job import Job
from bot.pipeline.run import LazyModel
from bot.progress import Quiet
from bot.server.forge_session import GitLabSession
from bot.server.queue import make_storage
from bot.server.secrets import Secrets
from bot.server.state import ServerState
from bot.server.worker import ForgeRunner
from tests.conftest import git
from tests.fakes.gitlab_api import TOKEN, FakeGitLab
from tests.gitlab.conftest import MR, mr_diff


def _threads(fake: FakeGitLab) -> list[tuple[Any, ...]]:
    """The MR's diff threads as a reader sees them: where, what, whether resolved (not the commit ids)."""
    return sorted(
        (n["position"].get("new_path"), n["position"].get("new_line"), n["body"], bool(n["resolved"]))
        for n in fake.diff_notes
    )


def _fixing_push(mr: MR, fake: FakeGitLab) -> None:
    gcd = git(mr.repo, "show", f"{mr.base}:python_programs/gcd.py")
    head = mr.commit({"python_programs/gcd.py": gcd + "\n\nLIMIT = 10 ** 6  # new line\n"})
    fake.push(mr_diff(mr.repo, mr.base, head), head)


def _worker(mr: MR, fake: FakeGitLab, tmp: Path) -> ForgeRunner:
    """The webhook server's worker on this MR: its GitLab session, the MR's repository as its clone."""
    repo = mr.repo

    class Cloned(GitLabSession):
        def clone(self, shas: list[str], dest: Path) -> Path:
            return repo

    data = yaml.safe_load(mr.config.read_text())
    data["server"] = {"queue_path": str(tmp / "queue.db"), "gitlab_url": fake.url}
    cfg = Config.model_validate(data)
    state = ServerState(make_storage(cfg.server, "state"))
    return ForgeRunner(
        cfg, Secrets(gitlab_token=TOKEN), state, model=LazyModel(cfg, Quiet()), sessions=Cloned
    )


def test_the_ci_review_runs_as_the_review_job(bug_mr: MR) -> None:
    with bug_mr.fake() as fake:
        run = bug_mr.run(fake)
        assert run.code == 0, run.err
        assert f"prereview: review for {fake.project_id}#{fake.mr_iid}" in run.lines
        assert fake.diff_notes and any("1 new discussion(s)" in ln for ln in run.lines)


def test_a_push_resolves_the_stale_thread_as_the_worker_does(bug_mr: MR, tmp_path: Path) -> None:
    first, report = bug_mr.head, str(tmp_path / "codequality.json")  # not in the checkout: not committed
    with bug_mr.fake() as fake:
        assert bug_mr.run(fake, "--codequality", report).code == 0
        _fixing_push(bug_mr, fake)
        assert bug_mr.run(fake, "--codequality", report).code == 0
        by_ci = _threads(fake)
    git(bug_mr.repo, "reset", "-q", "--hard", first)
    bug_mr.head = first
    with bug_mr.fake() as fake:
        worker = _worker(bug_mr, fake, tmp_path)
        job = Job("review", "gitlab", str(fake.project_id), fake.mr_iid, auto=True)
        worker.run(job)
        _fixing_push(bug_mr, fake)
        worker.run(job)
        by_worker = _threads(fake)
    assert any(resolved for *_, resolved in by_ci)  # the gone finding's thread is resolved
    assert by_ci == by_worker
