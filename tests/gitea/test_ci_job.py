"""`prereview gitea`'s automatic review is the worker's review job (`jobs/review.py` through the one
dispatcher): it says so in the log, and a push that removes a finding resolves its comment exactly as the
worker's review of the same pull request does (issue 30: Gitea CI resolved nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from bot.config import Config
from bot.jobs.job import Job
from bot.pipeline.run import LazyModel
from bot.progress import Quiet
from bot.server.gitea_session import GiteaSession
from bot.server.queue import make_storage
from bot.server.secrets import Secrets
from bot.server.state import ServerState
from bot.server.worker import ForgeRunner
from tests.conftest import git
from tests.fakes.gitea_api import TOKEN, FakeGitea
from tests.gitea.conftest import BASE, PR

FIXED = BASE + "\n\ndef volume(w, h, d):\n    return w * h * d\n"  # the bad line gone, a new function


def _comments(fake: FakeGitea) -> list[tuple[Any, ...]]:
    """The inline comments as a reader sees them: where, what, whether resolved."""
    return sorted(
        (c["path"], c.get("line") or c.get("new_position"), c["body"], bool(c.get("resolver")))
        for c in fake.inline
    )


def _worker(pr: PR, fake: FakeGitea, tmp: Path) -> ForgeRunner:
    """The webhook server's worker on this PR: its Gitea session, the PR's repository as its clone."""
    repo = pr.repo

    class Cloned(GiteaSession):
        def clone(self, shas: list[str], dest: Path) -> Path:
            return repo

    data = yaml.safe_load(pr.config.read_text())
    data["server"] = {"queue_path": str(tmp / "queue.db"), "gitea_url": fake.url}
    cfg = Config.model_validate(data)
    state = ServerState(make_storage(cfg.server, "state"))
    return ForgeRunner(cfg, Secrets(gitea_token=TOKEN), state, model=LazyModel(cfg, Quiet()), sessions=Cloned)


def test_the_ci_review_runs_as_the_review_job(pr: PR) -> None:
    with pr.fake() as fake:
        run = pr.run(fake)
        assert run.code == 0, run.err
        assert f"prereview: review for {fake.repo}#{fake.number}" in run.err.splitlines()
        assert len(fake.inline) == 1


def test_a_push_resolves_the_stale_comment_as_the_worker_does(pr: PR, tmp_path: Path) -> None:
    first = pr.head
    with pr.fake() as fake:
        assert pr.run(fake).code == 0
        fake.push(git(pr.repo, "diff", "--no-color", pr.base, pr.commit({"geometry.py": FIXED})), pr.head)
        assert pr.run(fake, action="synchronized").code == 0
        by_ci = _comments(fake)
    git(pr.repo, "reset", "-q", "--hard", first)
    pr.head = first
    with pr.fake() as fake:
        worker = _worker(pr, fake, tmp_path)
        job = Job("review", "gitea", fake.repo, fake.number, auto=True)
        worker.run(job)
        fake.push(git(pr.repo, "diff", "--no-color", pr.base, pr.commit({"geometry.py": FIXED})), pr.head)
        worker.run(job)
        by_worker = _comments(fake)
    assert any(resolved for *_, resolved in by_ci)  # the gone finding's comment is resolved
    assert by_ci == by_worker
